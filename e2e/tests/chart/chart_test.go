//go:build e2e

package chart

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// install upgrades the operator's release with the given values (and the defaults for
// everything else), waiting until every component runs.
func install(ctx context.Context, t *testing.T, sets ...string) {
	t.Helper()
	if _, err := framework.InstallOperator(sets...)(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

func generations(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, m := range k.Members(ctx, t, vc) {
		out[m.Name] = m.Generation
	}
	return out
}

func sameMap[V comparable](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestGuardWithoutWebhooks(t *testing.T) {
	f := framework.NewFeature(suite, "webhooks off").
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			install(ctx, t, "webhooks.enabled=false")
			return ctx
		}).
		Assess("a new invalid cluster gets InvalidSpec and nothing is created", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "bad", 3, 1)
			vc.Spec.Users = append(vc.Spec.Users, v1alpha1.UserSpec{Name: "_sneaky", NoPass: true})
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatalf("without the webhook the API server takes it: %v", err)
			}
			if err := framework.WaitFor(ctx, k.Client, vc, time.Minute, "InvalidSpec",
				framework.ConditionIs(v1alpha1.ConditionInvalidSpec, metav1.ConditionTrue, v1alpha1.ReasonInvalid)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Second) // what would have been created by now
			if n := len(k.Members(ctx, t, vc)); n != 0 {
				t.Errorf("%d members created for an invalid spec", n)
			}
			// InvalidSpec may come first from another controller's guard; the state is
			// the cluster-controller's.
			if err := framework.WaitFor(ctx, k.Client, vc, 30*time.Second, "state Invalid", func(vc *v1alpha1.ValkeyCluster) (bool, string) {
				return vc.Status.State == v1alpha1.StateInvalid, "state " + string(vc.Status.State)
			}); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Assess("an invalid update of a running cluster changes nothing", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "good", 3, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			uids, gens := k.PodUIDs(ctx, t, vc), generations(ctx, t, k, vc)
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Config = v1alpha1.Config{"port": "7000"} })
			if err := framework.WaitFor(ctx, k.Client, vc, time.Minute, "InvalidSpec",
				framework.ConditionIs(v1alpha1.ConditionInvalidSpec, metav1.ConditionTrue, v1alpha1.ReasonInvalid)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Second)
			if after := k.PodUIDs(ctx, t, vc); !sameMap(uids, after) {
				t.Errorf("pods changed for an invalid spec: %v -> %v", uids, after)
			}
			if after := generations(ctx, t, k, vc); !sameMap(gens, after) {
				t.Errorf("members changed for an invalid spec: %v -> %v", gens, after)
			}
			ch := k.StartChecker(ctx, t, vc)
			time.Sleep(time.Second)
			if r, err := ch.Stop(ctx); err != nil || r.Acked == 0 || r.Lost > 0 {
				t.Errorf("the cluster must keep serving: %s %v", r, err)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			install(ctx, t)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestUpgradeLeavesClustersAlone(t *testing.T) {
	f := framework.NewFeature(suite, "helm upgrade").
		Assess("replacing every operator pod restarts no Valkey pod", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			uids, gens := k.PodUIDs(ctx, t, vc), generations(ctx, t, k, vc)
			var sets []string
			for _, c := range []string{"clusterController", "nodeController", "aclController", "tlsController", "webhooks"} {
				sets = append(sets, c+".podAnnotations.upgraded=\""+time.Now().Format("150405")+"\"", c+".logLevel=debug")
			}
			install(ctx, t, sets...)
			time.Sleep(15 * time.Second) // every new controller has gone over the cluster by now
			k.WaitClusterReady(ctx, t, vc, time.Minute)
			if after := k.PodUIDs(ctx, t, vc); !sameMap(uids, after) {
				t.Errorf("an operator upgrade restarted Valkey pods: %v -> %v", uids, after)
			}
			if after := generations(ctx, t, k, vc); !sameMap(gens, after) {
				t.Errorf("an operator upgrade changed members: %v -> %v", gens, after)
			}
			install(ctx, t)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
