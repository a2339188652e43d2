package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/images"
	"github.com/valkey-operator/valkey-operator/localkube"
)

// The monitoring suite's Prometheus Operator and Prometheus run in MonitoringNamespace.
const (
	MonitoringNamespace = "monitoring"
	// PrometheusName is the Prometheus resource (its pod is prometheus-<name>-0).
	PrometheusName = "e2e"
	prometheusPort = 9090
	promOperator   = "prometheus-operator"
)

// InstallPrometheusOperator returns a Setup step that runs the Prometheus Operator (built
// by localkube build --monitoring, its images by make images) in MonitoringNamespace:
// its CRDs, a service account with the permissions the operator's own example grants,
// and its Deployment. It must come before the chart's install: the chart renders its
// ServiceMonitor, PodMonitor and PrometheusRule only when the API server has their kinds.
func InstallPrometheusOperator() env.Func {
	return installStep("the Prometheus Operator", "Prometheus Operator "+localkube.PrometheusOperatorVersion, (*Cluster).installPrometheusOperator)
}

// installStep is a Setup step that runs install on the suite's cluster and reports how
// long it took: what names it in errors, running in the report.
func installStep(what, running string, install func(*Cluster, context.Context) error) env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		k := clusterFrom(ctx)
		if k == nil {
			return ctx, fmt.Errorf("install %s: the cluster is not set up", what)
		}
		start := time.Now()
		if err := install(k, ctx); err != nil {
			return ctx, fmt.Errorf("install %s: %w", what, err)
		}
		fmt.Fprintf(os.Stderr, "e2e: %s running in %s\n", running, time.Since(start).Round(10*time.Millisecond))
		return ctx, nil
	}
}

func (k *Cluster) installPrometheusOperator(ctx context.Context) error {
	opImg, err := k.ComponentImage(images.ComponentPrometheusOperator)
	if err != nil {
		return fmt.Errorf("%w (make monitoring-build images)", err)
	}
	reloader, err := k.ComponentImage(images.ComponentConfigReloader)
	if err != nil {
		return err
	}
	if err := k.applyCRDs(ctx, filepath.Join(k.Paths.localkubeConfig().MonitoringDir(), "crds"), "make monitoring-build"); err != nil {
		return err
	}
	// The chart's install reads the API server's discovery: it must list the new kinds.
	if err := k.refreshDiscovery(ctx); err != nil {
		return err
	}

	labels := map[string]string{"app.kubernetes.io/name": promOperator}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + promOperator}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"monitoring.coreos.com"}, Resources: []string{
			"alertmanagers", "alertmanagers/finalizers", "alertmanagers/status", "alertmanagerconfigs",
			"prometheuses", "prometheuses/finalizers", "prometheuses/status",
			"prometheusagents", "prometheusagents/finalizers", "prometheusagents/status",
			"thanosrulers", "thanosrulers/finalizers", "thanosrulers/status",
			"scrapeconfigs", "servicemonitors", "servicemonitors/status", "podmonitors", "probes", "prometheusrules"}, Verbs: []string{"*"}},
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"services", "services/finalizers", "endpoints"}, Verbs: []string{"get", "create", "update", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"patch", "create"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"patch", "create"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses"}, Verbs: []string{"get"}},
	}}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: promOperator, Namespace: MonitoringNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: promOperator,
					SecurityContext:    restrictedPod(65534),
					Containers: []corev1.Container{{
						Name: promOperator, Image: opImg.Ref,
						Args: []string{
							"--prometheus-config-reloader=" + reloader.Ref,
							"--log-level=info",
							// No kubelet Service to keep, no admission webhook in front.
							"--kubelet-service=",
						},
						Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						SecurityContext: restrictedContainer(),
					}},
					TerminationGracePeriodSeconds: ptr.To[int64](5),
				},
			},
		},
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: MonitoringNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: promOperator, Namespace: MonitoringNamespace}},
		role,
		clusterRoleBinding("e2e-"+promOperator, role.Name, MonitoringNamespace, promOperator),
		deploy,
	}
	for _, o := range objs {
		if err := createOrKeep(ctx, k.Client, o); err != nil {
			return err
		}
	}
	return WaitFor(ctx, k.Client, deploy, 2*time.Minute, "the Prometheus Operator to run", func(d *appsv1.Deployment) (bool, string) {
		return d.Status.AvailableReplicas == 1, fmt.Sprintf("%d available", d.Status.AvailableReplicas)
	})
}

// refreshDiscovery waits until the API server's discovery lists the monitoring kinds.
func (k *Cluster) refreshDiscovery(ctx context.Context) error {
	return Until(ctx, time.Minute, "discovery to list monitoring.coreos.com/v1", func(ctx context.Context) (bool, string, error) {
		out, err := k.Kubectl(ctx, "api-resources", "--api-group=monitoring.coreos.com", "-o", "name")
		if err != nil {
			return false, err.Error(), nil
		}
		return strings.Contains(out, "servicemonitors") && strings.Contains(out, "podmonitors") && strings.Contains(out, "prometheusrules"), out, nil
	})
}

// applyCRDs applies the CRDs of crdDir and waits until the API server serves them; build
// names, in the error when there are none, the make target that copies them there.
func (k *Cluster) applyCRDs(ctx context.Context, crdDir, build string) error {
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s (%s)", crdDir, build)
	}
	// Server-side apply: the CRDs are too large for kubectl's last-applied annotation.
	if out, err := k.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "--field-manager=valkey-operator-e2e", "-f", crdDir); err != nil {
		return fmt.Errorf("apply the CRDs: %w: %s", err, out)
	}
	if out, err := k.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "-f", crdDir); err != nil {
		return fmt.Errorf("wait for the CRDs: %w: %s", err, out)
	}
	return nil
}

// createOrKeep creates o, leaving an existing object of that name as it is (the suite's
// setup runs once per bring-up; a second run on the same cluster reuses what is there).
func createOrKeep(ctx context.Context, c client.Client, o client.Object) error {
	if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
	}
	return nil
}

func clusterRoleBinding(name, role, namespace, serviceAccount string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccount, Namespace: namespace}},
	}
}

func restrictedPod(uid int64) *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(uid), RunAsGroup: ptr.To(uid), FSGroup: ptr.To(uid),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
}

func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
}

// PrometheusOptions shape the Prometheus the monitoring suite runs.
type PrometheusOptions struct {
	// ScrapeInterval and EvaluationInterval (default 5s each): the chart's monitors set
	// their own interval, which the suite sets short too.
	ScrapeInterval, EvaluationInterval string
	// MetricsReader is the ClusterRole the Prometheus service account is bound to, so
	// that it may read the operator's secure metrics endpoints (the chart's
	// <release>-metrics-reader); empty: none.
	MetricsReader string
}

// Prometheus is a running Prometheus server the Prometheus Operator manages.
type Prometheus struct {
	// Addr is host:port of its pod, which the test reaches directly.
	Addr string
	// Pod is the server's pod name.
	Pod string
	k   *Cluster
}

// StartPrometheus returns a Setup step that runs DeployPrometheus and stores the server
// in *into, for the suite's features.
func StartPrometheus(opts PrometheusOptions, into **Prometheus) env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		k := clusterFrom(ctx)
		if k == nil {
			return ctx, fmt.Errorf("deploy Prometheus: the cluster is not set up")
		}
		start := time.Now()
		p, err := k.DeployPrometheus(ctx, opts)
		if err != nil {
			return ctx, fmt.Errorf("deploy Prometheus: %w", err)
		}
		fmt.Fprintf(os.Stderr, "e2e: Prometheus answers at %s, %s after its resource was created\n", p.Addr, time.Since(start).Round(10*time.Millisecond))
		*into = p
		return ctx, nil
	}
}

// DeployPrometheus creates a Prometheus resource in MonitoringNamespace that selects
// every ServiceMonitor, PodMonitor and PrometheusRule of every namespace, with a service
// account allowed to discover and scrape targets, and waits until its server answers
// and has loaded a configuration with the chart's monitors.
func (k *Cluster) DeployPrometheus(ctx context.Context, opts PrometheusOptions) (*Prometheus, error) {
	img, err := k.ComponentImage(images.ComponentPrometheus)
	if err != nil {
		return nil, err
	}
	if opts.ScrapeInterval == "" {
		opts.ScrapeInterval = "5s"
	}
	if opts.EvaluationInterval == "" {
		opts.EvaluationInterval = "5s"
	}
	const sa = "prometheus"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-prometheus"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services", "endpoints", "pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
	}}
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: MonitoringNamespace}},
		role, clusterRoleBinding("e2e-prometheus", role.Name, MonitoringNamespace, sa),
	}
	if opts.MetricsReader != "" {
		objs = append(objs, clusterRoleBinding("e2e-prometheus-metrics-reader", opts.MetricsReader, MonitoringNamespace, sa))
	}
	all := map[string]any{}
	prom := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
		"metadata": map[string]any{"name": PrometheusName, "namespace": MonitoringNamespace},
		"spec": map[string]any{
			"image": img.Ref, "version": "v" + img.Version, "replicas": int64(1),
			"serviceAccountName": sa,
			"scrapeInterval":     opts.ScrapeInterval, "evaluationInterval": opts.EvaluationInterval,
			"serviceMonitorSelector": all, "serviceMonitorNamespaceSelector": all,
			"podMonitorSelector": all, "podMonitorNamespaceSelector": all,
			"ruleSelector": all, "ruleNamespaceSelector": all,
			"securityContext": map[string]any{"runAsNonRoot": true, "runAsUser": int64(65534), "runAsGroup": int64(65534), "fsGroup": int64(65534),
				"seccompProfile": map[string]any{"type": "RuntimeDefault"}},
			"retention": "2h",
		},
	}}
	objs = append(objs, prom)
	for _, o := range objs {
		if err := createOrKeep(ctx, k.Client, o); err != nil {
			return nil, err
		}
	}
	p := &Prometheus{Pod: "prometheus-" + PrometheusName + "-0", k: k}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Pod, Namespace: MonitoringNamespace}}
	if err := Until(ctx, 3*time.Minute, "the Prometheus pod to be ready", func(ctx context.Context) (bool, string, error) {
		if err := k.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error(), nil
		}
		ok, d := PodReady(pod)
		return ok, d, nil
	}); err != nil {
		return nil, err
	}
	p.Addr = net.JoinHostPort(pod.Status.PodIP, fmt.Sprint(prometheusPort))
	return p, nil
}

// Sample is one series of an instant query's result.
type Sample struct {
	Labels map[string]string
	Value  string
}

// Query evaluates an instant PromQL query and returns its series (a scalar result is one
// sample without labels).
func (p *Prometheus) Query(ctx context.Context, expr string) ([]Sample, error) {
	var res struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &res); err != nil {
		return nil, err
	}
	switch res.ResultType {
	case "vector":
		var v []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(res.Result, &v); err != nil {
			return nil, err
		}
		out := make([]Sample, 0, len(v))
		for _, s := range v {
			out = append(out, Sample{Labels: s.Metric, Value: fmt.Sprint(s.Value[1])})
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(res.Result, &v); err != nil {
			return nil, err
		}
		return []Sample{{Labels: map[string]string{}, Value: fmt.Sprint(v[1])}}, nil
	}
	return nil, fmt.Errorf("query %q: result type %q", expr, res.ResultType)
}

// Target is one scrape target as Prometheus reports it.
type Target struct {
	ScrapePool string            `json:"scrapePool"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Labels     map[string]string `json:"labels"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
}

// Targets lists the active scrape targets.
func (p *Prometheus) Targets(ctx context.Context) ([]Target, error) {
	var res struct {
		ActiveTargets []Target `json:"activeTargets"`
	}
	if err := p.get(ctx, "/api/v1/targets", url.Values{"state": {"active"}}, &res); err != nil {
		return nil, err
	}
	return res.ActiveTargets, nil
}

// Rule is one alerting rule as Prometheus has loaded it.
type Rule struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Health string `json:"health"`
	Query  string `json:"query"`
	// Duration is the rule's for, in seconds.
	Duration float64 `json:"duration"`
	Alerts   []struct {
		Labels map[string]string `json:"labels"`
		State  string            `json:"state"`
	} `json:"alerts"`
}

// AlertingRules lists the loaded alerting rules by name.
func (p *Prometheus) AlertingRules(ctx context.Context) (map[string]Rule, error) {
	var res struct {
		Groups []struct {
			Rules []Rule `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get(ctx, "/api/v1/rules", url.Values{"type": {"alert"}}, &res); err != nil {
		return nil, err
	}
	out := map[string]Rule{}
	for _, g := range res.Groups {
		for _, r := range g.Rules {
			out[r.Name] = r
		}
	}
	return out, nil
}

var promClient = &http.Client{Timeout: 10 * time.Second}

// get calls Prometheus's HTTP API and decodes its data field into out.
func (p *Prometheus) get(ctx context.Context, path string, q url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Addr+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := promClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s: %s: %.200s", path, resp.Status, body)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s %s: %s", path, q.Encode(), env.Error)
	}
	return json.Unmarshal(env.Data, out)
}
