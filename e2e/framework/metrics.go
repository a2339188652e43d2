package framework

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OperatorMetric sums a metric of an operator component over the series whose labels
// include every pair of match, read from the component's pod (:8080/metrics).
func (k *Cluster) OperatorMetric(ctx context.Context, component, name string, match map[string]string) (float64, error) {
	var pods corev1.PodList
	if err := k.Client.List(ctx, &pods, client.InNamespace(OperatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/component": component}); err != nil {
		return 0, err
	}
	if len(pods.Items) == 0 {
		// controllers.combined: every controller runs in the manager's pods.
		if err := k.Client.List(ctx, &pods, client.InNamespace(OperatorNamespace),
			client.MatchingLabels{"app.kubernetes.io/component": "manager"}); err != nil {
			return 0, err
		}
	}
	var total float64
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		v, err := scrape(ctx, "http://"+p.Status.PodIP+":8080/metrics", name, match)
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}

func scrape(ctx context.Context, url, name string, match map[string]string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	var total float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || strings.HasPrefix(line, "#") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok || !seriesMatches(series, name, match) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err == nil {
			total += v
		}
	}
	return total, sc.Err()
}

// seriesMatches reports whether `name{a="b",...}` has name and every label of match.
func seriesMatches(series, name string, match map[string]string) bool {
	base, labels, _ := strings.Cut(series, "{")
	if base != name {
		return false
	}
	for k, v := range match {
		if !strings.Contains(labels, fmt.Sprintf("%s=%q", k, v)) {
			return false
		}
	}
	return true
}
