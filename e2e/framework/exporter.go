package framework

import (
	"context"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ExporterPort is where the metrics exporter of every Valkey pod serves /metrics.
const ExporterPort = 9121

// ExporterMetric sums a metric of the metrics exporter of a Valkey pod (podIP:9121) over
// the series whose labels include every pair of match. A metric the exporter does not
// report reads as 0.
func ExporterMetric(ctx context.Context, podIP, name string, match map[string]string) (float64, error) {
	return scrape(ctx, "http://"+net.JoinHostPort(podIP, strconv.Itoa(ExporterPort))+"/metrics", name, match)
}

// OperatorLogs returns the logs of every container of every operator pod, keyed by
// "pod/container".
func (k *Cluster) OperatorLogs(ctx context.Context) (map[string]string, error) {
	var pods corev1.PodList
	if err := k.Client.List(ctx, &pods, client.InNamespace(OperatorNamespace)); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			log, err := k.Logs(ctx, OperatorNamespace, p.Name, c.Name)
			if err != nil {
				return nil, err
			}
			out[p.Name+"/"+c.Name] = log
		}
	}
	return out, nil
}

// FindSecrets returns, sorted, the names of the secrets (name -> value) whose value
// occurs in text. Empty values are ignored.
func FindSecrets(text string, secrets map[string]string) []string {
	var out []string
	for name, v := range secrets {
		if v != "" && strings.Contains(text, v) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
