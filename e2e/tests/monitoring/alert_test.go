//go:build e2e

package monitoring

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const alertName = "ValkeyShardWithoutReplicaInSync"

// TestDeadReplicaFiresAlert kills the only replica of a 1x1 cluster for good (every node
// cordoned, its pod deleted: the new pod cannot be scheduled) and checks that the chart's
// ValkeyShardWithoutReplicaInSync, its for: shortened to alertFor through the chart's
// values, fires for that shard in Prometheus, and resolves once the replica is back.
func TestDeadReplicaFiresAlert(t *testing.T) {
	f := framework.NewFeature(suite, "dead replica alert").WithLabel("disruptive", "true").
		Assess("the alert fires for the shard and resolves when the replica is back", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			rules, err := prom.AlertingRules(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r, ok := rules[alertName]
			if !ok {
				t.Fatalf("Prometheus has no rule %s (loaded: %d rules)", alertName, len(rules))
			}
			if want, _ := time.ParseDuration(alertFor); r.Duration != want.Seconds() {
				t.Errorf("%s has for %v s, want %s from the chart's values", alertName, r.Duration, alertFor)
			}
			t.Logf("rule %s: %s (for %v s)", alertName, r.Query, r.Duration)

			vc := newCluster(ns, "vk", 1, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 4*time.Minute)
			if a := alertOf(ctx, t, ns); a != "" {
				t.Errorf("%s is %s for a Ready cluster", alertName, a)
			}

			nodes, err := k.WorkerNodes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range nodes {
				if _, err := k.Kubectl(ctx, "cordon", n.Name); err != nil {
					t.Fatal(err)
				}
			}
			uncordon := func() {
				for _, n := range nodes {
					if err := k.Uncordon(context.WithoutCancel(ctx), n.Name); err != nil {
						t.Error(err)
					}
				}
			}
			t.Cleanup(uncordon)
			replica := k.Member(ctx, t, vc, 0, v1alpha1.RoleReplica)
			pod := k.PodOf(ctx, t, vc, replica.Name)
			killed := time.Now()
			if err := k.Client.Delete(ctx, pod); err != nil {
				t.Fatal(err)
			}
			t.Logf("every node cordoned, pod %s of replica %s deleted", pod.Name, replica.Name)
			state := map[string]time.Duration{}
			if err := framework.Until(ctx, 3*time.Minute, alertName+" firing for shard 0", func(ctx context.Context) (bool, string, error) {
				a := alertOf(ctx, t, ns)
				if _, seen := state[a]; !seen && a != "" {
					state[a] = time.Since(killed)
				}
				return a == "firing", fmt.Sprintf("alert state %q", a), nil
			}); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s pending %s and firing %s after the replica's pod was deleted", alertName,
				state["pending"].Round(100*time.Millisecond), state["firing"].Round(100*time.Millisecond))
			framework.LogCondition(t, vc, v1alpha1.ConditionReady)

			uncordon()
			back := time.Now()
			k.WaitClusterReady(ctx, t, vc, 4*time.Minute)
			if err := framework.Until(ctx, 2*time.Minute, alertName+" resolved", func(ctx context.Context) (bool, string, error) {
				a := alertOf(ctx, t, ns)
				return a == "", fmt.Sprintf("alert state %q", a), nil
			}); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s resolved %s after the nodes were uncordoned", alertName, time.Since(back).Round(100*time.Millisecond))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// alertOf is the state of the feature's cluster's alert: "" (none), pending or firing.
// It checks the alert's labels: namespace, cluster, shard, and the chart's severity.
func alertOf(ctx context.Context, t *testing.T, ns string) string {
	t.Helper()
	rules, err := prom.AlertingRules(ctx)
	if err != nil {
		t.Logf("rules: %v", err)
		return "?"
	}
	for _, a := range rules[alertName].Alerts {
		if a.Labels["namespace"] != ns {
			continue
		}
		if a.Labels["cluster"] != "vk" || a.Labels["shard"] != "0" || a.Labels["severity"] != "warning" {
			t.Errorf("%s with labels %v, want cluster vk, shard 0, severity warning", alertName, a.Labels)
		}
		return a.State
	}
	return ""
}
