package charttest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// prometheusOperatorAPIs are the kinds the chart's monitoring objects need.
var prometheusOperatorAPIs = []string{
	"monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PodMonitor", "monitoring.coreos.com/v1/PrometheusRule",
}

// monitoringOn renders the chart with every monitoring toggle on.
func monitoringOn(t *testing.T, sets ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	return renderWith(t, prometheusOperatorAPIs, append([]string{
		"metrics.serviceMonitor.enabled=true", "metrics.podMonitor.enabled=true",
		"metrics.dashboard.enabled=true", "metrics.prometheusRule.enabled=true",
	}, sets...)...)
}

func TestMonitoringToggles(t *testing.T) {
	names := []string{"ServiceMonitor/vko", "PodMonitor/vko-valkey", "ConfigMap/vko-dashboard", "PrometheusRule/vko"}
	for _, name := range names {
		if render(t)[name] != nil {
			t.Errorf("%s rendered by default", name)
		}
	}
	objs := monitoringOn(t)
	for _, name := range names {
		if objs[name] == nil {
			t.Errorf("%s not rendered with its toggle on", name)
		}
	}
	// Without the Prometheus Operator's CRDs only the dashboard can exist.
	objs = render(t, "metrics.dashboard.enabled=true", "metrics.prometheusRule.enabled=true", "metrics.podMonitor.enabled=true")
	if objs["ConfigMap/vko-dashboard"] == nil || objs["PrometheusRule/vko"] != nil || objs["PodMonitor/vko-valkey"] != nil {
		t.Error("without monitoring.coreos.com the dashboard renders and the Prometheus Operator's objects do not")
	}
	cm := render(t, "metrics.dashboard.enabled=true", "metrics.dashboard.namespace=grafana")["ConfigMap/vko-dashboard"]
	if cm.GetNamespace() != "grafana" || cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap in %q with labels %v, want namespace grafana and the sidecar's label grafana_dashboard=1", cm.GetNamespace(), cm.GetLabels())
	}
}

// TestPodMonitorNamesTheMember checks that the exporter's series get cluster, shard, role
// and member from the labels the node-controller puts on every pod.
func TestPodMonitorNamesTheMember(t *testing.T) {
	pm := monitoringOn(t)["PodMonitor/vko-valkey"]
	eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(eps) != 1 {
		t.Fatalf("%d podMetricsEndpoints, want 1", len(eps))
	}
	relabelings, _, _ := unstructured.NestedSlice(eps[0].(map[string]any), "relabelings")
	got := map[string]string{}
	for _, r := range relabelings {
		r := r.(map[string]any)
		src := r["sourceLabels"].([]any)
		got[r["targetLabel"].(string)] = src[0].(string)
	}
	meta := func(podLabel string) string {
		return "__meta_kubernetes_pod_label_" + regexp.MustCompile(`[^a-zA-Z0-9_]`).ReplaceAllString(podLabel, "_")
	}
	want := map[string]string{
		"cluster": meta(v1alpha1.LabelInstance), "shard": meta(v1alpha1.LabelShardIndex),
		"role": meta(v1alpha1.LabelRole), "member": meta(v1alpha1.LabelNode),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("target label %s comes from %q, want %q", k, got[k], v)
		}
	}
	sm := monitoringOn(t)["ServiceMonitor/vko"]
	smEps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(smEps) == 0 || smEps[0].(map[string]any)["honorLabels"] != true {
		t.Error("the operator's ServiceMonitor must honor the series' namespace label (the cluster's), not the Service's")
	}
}

// renderedRules writes the rendered PrometheusRule's groups as a Prometheus rule file
// into dir and returns the alerts' names.
func renderedRules(t *testing.T, dir string, sets ...string) []string {
	t.Helper()
	pr := monitoringOn(t, sets...)["PrometheusRule/vko"]
	spec, _, _ := unstructured.NestedMap(pr.Object, "spec")
	out, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	var alerts []string
	groups, _, _ := unstructured.NestedSlice(spec, "groups")
	for _, g := range groups {
		rs, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rs {
			alerts = append(alerts, r.(map[string]any)["alert"].(string))
		}
	}
	return alerts
}

func promtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed (Debian's prometheus package): run hack/deps.sh")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestAlertRules runs promtool's checks and the unit tests of testdata/alerts_test.yaml
// (a firing and a quiet case for every alert) on the rules the chart renders, and checks
// that every alert has its tests and its runbook in docs/monitoring.md.
func TestAlertRules(t *testing.T) {
	dir := t.TempDir()
	alerts := renderedRules(t, dir)
	tests, err := os.ReadFile("testdata/alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	promtool(t, dir, "check", "rules", "rules.yaml")
	promtool(t, dir, "test", "rules", "alerts_test.yaml")

	doc := readDoc(t)
	for _, a := range alerts {
		if !strings.Contains(string(tests), "alertname: "+a+"\n") {
			t.Errorf("alert %s has no promtool test in testdata/alerts_test.yaml", a)
		}
		if !strings.Contains(doc, "\n### "+a+"\n") {
			t.Errorf("alert %s has no runbook section (### %s) in docs/monitoring.md", a, a)
		}
	}
	if len(alerts) != 10 {
		t.Errorf("%d alerts rendered by default, want the 10 of docs/monitoring.md: %v", len(alerts), alerts)
	}
	// Each alert can be turned off, and its for: changed (the e2e monitoring suite
	// shortens one).
	off := renderedRules(t, t.TempDir(), "metrics.prometheusRule.alerts.ValkeyClusterNotReady.enabled=false")
	if slices.Contains(off, "ValkeyClusterNotReady") || len(off) != len(alerts)-1 {
		t.Errorf("alerts with ValkeyClusterNotReady off: %v", off)
	}
}

func readDoc(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

// dashboard is what the test reads of the Grafana dashboard JSON.
type dashboard struct {
	Title  string  `json:"title"`
	UID    string  `json:"uid"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// parseDashboard parses the dashboard of the rendered ConfigMap: the same file the e2e
// monitoring suite evaluates against a real Prometheus.
func parseDashboard(t *testing.T, objs map[string]*unstructured.Unstructured) dashboard {
	t.Helper()
	cm := objs["ConfigMap/vko-dashboard"]
	if cm == nil {
		t.Fatal("no dashboard ConfigMap")
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	var d dashboard
	if err := json.Unmarshal([]byte(data["valkey-clusters.json"]), &d); err != nil {
		t.Fatalf("parse the dashboard: %v", err)
	}
	return d
}

var metricName = regexp.MustCompile(`\b(valkey_operator_[a-z_]+|redis_[a-z_]+)\b`)

// TestDashboard parses the dashboard and checks every panel: a unique id, the data
// source variable, queries that name only metrics docs/monitoring.md lists.
func TestDashboard(t *testing.T) {
	d := parseDashboard(t, monitoringOn(t))
	if d.UID == "" || d.Title == "" {
		t.Error("the dashboard needs a uid and a title")
	}
	doc := readDoc(t)
	ids := map[int]bool{}
	var queries int
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not use the datasource variable", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		if !strings.Contains(doc, "| "+p.Title+" |") {
			t.Errorf("panel %q is not in the dashboard table of docs/monitoring.md", p.Title)
		}
		for _, q := range p.Targets {
			queries++
			if q.Expr == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
			for _, m := range metricName.FindAllString(q.Expr, -1) {
				if !strings.Contains(doc, "`"+m+"`") {
					t.Errorf("panel %q queries %s, which docs/monitoring.md does not list", p.Title, m)
				}
			}
		}
	}
	if queries < 15 {
		t.Errorf("%d queries, fewer than expected", queries)
	}
	checkQueries(t, d)
}

// dashboardVariables are the values the queries' variables get for promtool.
var dashboardVariables = strings.NewReplacer("$namespace", ".*", "$cluster", ".*", "$__rate_interval", "1m")

// checkQueries has promtool parse every panel's query, each as a recording rule with the
// dashboard's variables filled in.
func checkQueries(t *testing.T, d dashboard) {
	t.Helper()
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rs []rule
	for _, p := range d.Panels {
		for i, q := range p.Targets {
			rs = append(rs, rule{Record: fmt.Sprintf("dashboard:panel_%d_%d", p.ID, i), Expr: dashboardVariables.Replace(q.Expr)})
		}
	}
	out, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rs}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	promtool(t, dir, "check", "rules", "dashboard.yaml")
}

// TestOperatorMetricsDocumented checks that the metrics the alerts use are listed in
// docs/monitoring.md too.
func TestOperatorMetricsDocumented(t *testing.T) {
	dir := t.TempDir()
	renderedRules(t, dir)
	rules, err := os.ReadFile(filepath.Join(dir, "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := readDoc(t)
	seen := map[string]bool{}
	for _, m := range metricName.FindAllString(string(rules), -1) {
		seen[m] = true
	}
	var missing []string
	for m := range seen {
		if !strings.Contains(doc, "`"+m+"`") {
			missing = append(missing, m)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("metrics used by the alerts and not listed in docs/monitoring.md: %v", missing)
	}
}
