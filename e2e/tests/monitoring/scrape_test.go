//go:build e2e

package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// monitoringPeer admits the suite's Prometheus to a cluster's exporters.
var monitoringPeer = networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
	MatchLabels: map[string]string{corev1.LabelMetadataName: framework.MonitoringNamespace}}}

// newCluster returns a cluster whose exporters the suite's Prometheus may scrape.
func newCluster(ns, name string, shards, replicas int32) *v1alpha1.ValkeyCluster {
	vc := framework.NewValkeyCluster(ns, name, shards, replicas)
	vc.Spec.NetworkPolicy.Metrics = append(vc.Spec.NetworkPolicy.Metrics, monitoringPeer)
	return vc
}

// TestScrape runs a 3x1 cluster with keys and a completed backup and a 1x0 cluster with
// TLS, and checks what the chart's monitors give Prometheus: every target of the
// ServiceMonitor (over HTTPS with a token) and the PodMonitor up, the operator's
// per-cluster series with their namespace, cluster, shard and member labels and the values
// the clusters' status says, the exporters' series naming their cluster, shard, role and
// member, and a non-empty result for every query of the chart's dashboard.
func TestScrape(t *testing.T) {
	var vc, tlsc *v1alpha1.ValkeyCluster
	f := framework.NewFeature(suite, "scrape").
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			vc = newCluster(ns, "vk", 3, 1)
			tlsc = newCluster(ns, "vk-tls", 1, 0)
			k.CreateValkeyCertSecret(ctx, t, ns, "vk-tls-cert", tlsc.Name)
			tlsc.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "vk-tls-cert"}}
			for _, c := range []*v1alpha1.ValkeyCluster{vc, tlsc} {
				if err := k.Client.Create(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			s3 := k.DeployS3(ctx, t, ns, false)
			for _, c := range []*v1alpha1.ValkeyCluster{vc, tlsc} {
				k.WaitClusterReady(ctx, t, c, 4*time.Minute)
			}
			framework.WriteKeys(ctx, t, k.MemberAddrs(ctx, t, vc), 1000)
			b := &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: "vk-now", Namespace: ns},
				Spec: v1alpha1.ValkeyBackupSpec{ClusterName: vc.Name, ObjectStore: s3.Store("e2e")}}
			if err := k.Client.Create(ctx, b); err != nil {
				t.Fatal(err)
			}
			if err := framework.WaitFor(ctx, k.Client, b, 3*time.Minute, "backup vk-now completed", func(b *v1alpha1.ValkeyBackup) (bool, string) {
				return b.Status.Phase == v1alpha1.BackupCompleted, fmt.Sprintf("phase %q", b.Status.Phase)
			}); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("every target of the chart's ServiceMonitor and PodMonitor is up", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			ns := framework.Namespace(ctx)
			start := time.Now()
			var pools map[string][]framework.Target
			err := framework.Until(ctx, 2*time.Minute, "the chart's targets up", func(ctx context.Context) (bool, string, error) {
				targets, err := prom.Targets(ctx)
				if err != nil {
					return false, err.Error(), nil
				}
				pools = chartTargets(targets)
				var bad []string
				for pool, ts := range pools {
					for _, tg := range ts {
						// Members of other clusters (make demo's, say) are not this
						// feature's: their own network policy decides who scrapes them.
						if pool == podMonitorPool && tg.Labels["namespace"] != ns {
							continue
						}
						if tg.Health != "up" {
							bad = append(bad, fmt.Sprintf("%s %s %s: %s %s", pool, tg.Labels["namespace"], tg.Labels["pod"], tg.Health, tg.LastError))
						}
					}
				}
				// The exporters of both clusters: 6 + 1 pods.
				exporters := 0
				for _, tg := range pools[podMonitorPool] {
					if tg.Labels["namespace"] == ns {
						exporters++
					}
				}
				if len(pools[serviceMonitorPool]) == 0 || exporters != 7 || len(bad) > 0 {
					return false, fmt.Sprintf("%d operator targets, %d exporter targets of %s (want 7), not up: %v", len(pools[serviceMonitorPool]), exporters, ns, bad), nil
				}
				return true, "", nil
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("all targets up %s after the setup: %d of the ServiceMonitor (%s), %d of the PodMonitor", time.Since(start).Round(100*time.Millisecond),
				len(pools[serviceMonitorPool]), targetPods(pools[serviceMonitorPool]), len(pools[podMonitorPool]))
			for _, tg := range pools[serviceMonitorPool] {
				if !strings.HasPrefix(tg.ScrapeURL, "https://") {
					t.Errorf("operator target %s scraped at %s, want https", tg.Labels["pod"], tg.ScrapeURL)
				}
			}
			return ctx
		}).
		Assess("the operator's series name their cluster, shard and member and agree with the status", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			members := k.Members(ctx, t, vc)
			replicas := []string{}
			for _, m := range members {
				if m.Status.Role == v1alpha1.RoleReplica {
					replicas = append(replicas, m.Name)
				}
			}
			sort.Strings(replicas)
			sel := fmt.Sprintf(`{namespace=%q, cluster=%q}`, ns, vc.Name)
			tlsSel := fmt.Sprintf(`{namespace=%q, cluster=%q}`, ns, tlsc.Name)
			// Each check: a query, and what its result must be.
			checks := []struct {
				expr string
				want func([]framework.Sample) string
			}{
				{"valkey_operator_cluster_ready" + sel, value("1")},
				{"valkey_operator_cluster_degraded" + sel, value("0")},
				{"valkey_operator_cluster_shards" + sel, value("3")},
				{"valkey_operator_cluster_replicas_per_shard" + sel, value("1")},
				{"valkey_operator_cluster_shards_ready" + sel, value("3")},
				{"valkey_operator_cluster_slots_assigned" + sel, value("16384")},
				{`valkey_operator_cluster_state{namespace="` + ns + `", cluster="vk", state="Ready"}`, value("1")},
				{`sum by (role) (valkey_operator_cluster_members` + sel + `)`, byLabel("role", map[string]string{"primary": "3", "replica": "3"})},
				{`sum by (lifecycle) (valkey_operator_cluster_members` + sel + `)`, byLabel("lifecycle", map[string]string{"Active": "6"})},
				{"count by (shard) (valkey_operator_shard_slots" + sel + " > 5000)", byLabel("shard", map[string]string{"0": "1", "1": "1", "2": "1"})},
				{"sum(valkey_operator_shard_slots" + sel + ")", value("16384")},
				{"valkey_operator_shard_replicas_in_sync" + sel, byLabel("shard", map[string]string{"0": "1", "1": "1", "2": "1"})},
				{"valkey_operator_replica_lag_bytes" + sel, members3("member", replicas)},
				{"count by (kind) (valkey_operator_failovers_total" + sel + ")", byLabel("kind", map[string]string{"planned": "3", "forced": "3", "elected": "3"})},
				{"valkey_operator_cluster_rolling" + sel, value("0")},
				{"valkey_operator_cluster_roll_members_pending" + sel, value("0")},
				{"valkey_operator_cluster_scaling" + sel, value("0")},
				{"valkey_operator_cluster_scale_slots_pending" + sel, value("0")},
				{"time() - valkey_operator_cluster_last_successful_pass_timestamp_seconds" + sel + " < 60", count(1)},
				{`valkey_operator_cluster_reconcile_errors_total{namespace="` + ns + `", cluster="vk", phase="roll"}`, value("0")},
				{"valkey_operator_acl_revision_applied" + sel, countValue(6, "1")},
				{"valkey_operator_tls_certificate_expiry_timestamp_seconds" + tlsSel + " - time() > 0", count(1)},
				{"valkey_operator_tls_certificate_applied" + tlsSel, countValue(1, "1")},
				{`valkey_operator_backups{namespace="` + ns + `", cluster="vk", phase="Completed"}`, value("1")},
			}
			start := time.Now()
			err := framework.Until(ctx, 2*time.Minute, "the operator's series", func(ctx context.Context) (bool, string, error) {
				var bad []string
				for _, c := range checks {
					res, err := prom.Query(ctx, c.expr)
					if err != nil {
						return false, "", err
					}
					if msg := c.want(res); msg != "" {
						bad = append(bad, c.expr+": "+msg)
					}
				}
				return len(bad) == 0, strings.Join(bad, "; "), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d queries of the operator's series as the status says, %s after the targets were up", len(checks), time.Since(start).Round(100*time.Millisecond))
			return ctx
		}).
		Assess("the exporters' series name their cluster, shard, role and member", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			want := map[string]string{}
			for _, m := range k.Members(ctx, t, vc) {
				want[m.Name] = fmt.Sprintf("cluster=vk shard=%d role=%s", m.Spec.ShardIndex, m.Status.Role)
			}
			var got map[string]string
			err := framework.Until(ctx, time.Minute, "the exporters' series labelled", func(ctx context.Context) (bool, string, error) {
				res, err := prom.Query(ctx, fmt.Sprintf(`redis_up{namespace=%q, cluster="vk"}`, ns))
				if err != nil {
					return false, "", err
				}
				got = map[string]string{}
				for _, s := range res {
					got[s.Labels["member"]] = fmt.Sprintf("cluster=%s shard=%s role=%s", s.Labels["cluster"], s.Labels["shard"], s.Labels["role"])
					if s.Value != "1" {
						return false, fmt.Sprintf("redis_up of %s is %s", s.Labels["member"], s.Value), nil
					}
				}
				return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("got %v, want %v", got, want), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			res, err := prom.Query(ctx, fmt.Sprintf(`sum(redis_db_keys{namespace=%q, cluster="vk", role="primary"})`, ns))
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 1 || res[0].Value != "1000" {
				t.Errorf("keys on the primaries by the exporters: %v, want 1000", res)
			}
			t.Logf("exporter series of the 6 members: %v", got)
			return ctx
		}).
		Assess("every query of the chart's dashboard returns data", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			var cm corev1.ConfigMap
			if err := k.Client.Get(ctx, client.ObjectKey{Namespace: framework.OperatorNamespace, Name: framework.OperatorRelease + "-dashboard"}, &cm); err != nil {
				t.Fatal(err)
			}
			queries, err := dashboardQueries(cm.Data["valkey-clusters.json"])
			if err != nil {
				t.Fatal(err)
			}
			vars := strings.NewReplacer("$namespace", regexp.QuoteMeta(ns), "$cluster", "vk|vk-tls",
				"$__rate_interval", "1m", "$__interval", "5s", "$__range", "5m")
			empty := map[string]string{}
			err = framework.Until(ctx, time.Minute, "data for every panel", func(ctx context.Context) (bool, string, error) {
				clear(empty)
				for _, q := range queries {
					res, err := prom.Query(ctx, vars.Replace(q.expr))
					if err != nil {
						return false, "", fmt.Errorf("%s: %w", q.panel, err)
					}
					if len(res) == 0 {
						empty[q.panel] = vars.Replace(q.expr)
					}
				}
				return len(empty) == 0, fmt.Sprintf("no data: %v", empty), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("all %d queries of the dashboard (panels and variables) returned data", len(queries))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// The scrape pools of the chart's monitors (release and namespace valkey-operator).
var (
	serviceMonitorPool = fmt.Sprintf("serviceMonitor/%s/%s/0", framework.OperatorNamespace, framework.OperatorRelease)
	podMonitorPool     = fmt.Sprintf("podMonitor/%s/%s-valkey/0", framework.OperatorNamespace, framework.OperatorRelease)
)

// chartTargets are the targets of the chart's monitors, by pool.
func chartTargets(targets []framework.Target) map[string][]framework.Target {
	out := map[string][]framework.Target{}
	for _, tg := range targets {
		if tg.ScrapePool == serviceMonitorPool || tg.ScrapePool == podMonitorPool {
			out[tg.ScrapePool] = append(out[tg.ScrapePool], tg)
		}
	}
	return out
}

func targetPods(ts []framework.Target) string {
	var pods []string
	for _, tg := range ts {
		pods = append(pods, tg.Labels["pod"])
	}
	slices.Sort(pods)
	return strings.Join(pods, ", ")
}

// value wants one sample of that value.
func value(v string) func([]framework.Sample) string {
	return countValue(1, v)
}

// countValue wants n samples, each of value v.
func countValue(n int, v string) func([]framework.Sample) string {
	return func(res []framework.Sample) string {
		if len(res) != n {
			return fmt.Sprintf("%d samples, want %d", len(res), n)
		}
		for _, s := range res {
			if s.Value != v {
				return fmt.Sprintf("%v = %s, want %s", s.Labels, s.Value, v)
			}
		}
		return ""
	}
}

// count wants n samples.
func count(n int) func([]framework.Sample) string {
	return func(res []framework.Sample) string {
		if len(res) != n {
			return fmt.Sprintf("%d samples, want %d", len(res), n)
		}
		return ""
	}
}

// byLabel wants one sample per value of label, with the given values.
func byLabel(label string, want map[string]string) func([]framework.Sample) string {
	return func(res []framework.Sample) string {
		got := map[string]string{}
		for _, s := range res {
			got[s.Labels[label]] = s.Value
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Sprintf("by %s %v, want %v", label, got, want)
		}
		return ""
	}
}

// members3 wants one sample per name, the label naming it.
func members3(label string, names []string) func([]framework.Sample) string {
	return func(res []framework.Sample) string {
		var got []string
		for _, s := range res {
			got = append(got, s.Labels[label])
		}
		sort.Strings(got)
		if !slices.Equal(got, names) {
			return fmt.Sprintf("%s %v, want %v", label, got, names)
		}
		return ""
	}
}

// query is one PromQL query of the dashboard: a panel's target or a variable's values.
type query struct {
	panel, expr string
}

// labelValues is Grafana's label_values(metric, label) of a variable's query.
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_]+)\)$`)

// dashboardQueries lists every panel target's expression (rows' panels included) and
// every query variable, as an instant PromQL query: label_values(m, l) becomes
// count by (l) (m), which returns a series for each value Grafana would list.
func dashboardQueries(raw string) ([]query, error) {
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return nil, fmt.Errorf("the dashboard: %w", err)
	}
	var out []query
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for i, tg := range p.Targets {
				if tg.Expr != "" {
					out = append(out, query{panel: p.Title + " #" + strconv.Itoa(i+1), expr: tg.Expr})
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				return nil, fmt.Errorf("variable %s: %w", v.Name, err)
			}
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			return nil, fmt.Errorf("variable %s: query %q is not label_values(metric, label)", v.Name, q.Query)
		}
		out = append(out, query{panel: "variable " + v.Name, expr: fmt.Sprintf("count by (%s) (%s)", m[2], m[1])})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the dashboard has no queries")
	}
	return out, nil
}

type panel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}
