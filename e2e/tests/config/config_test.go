//go:build e2e

package config

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// configOnAll reads key from every member.
func configOnAll(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, key string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, addr := range k.MemberAddrs(ctx, t, vc) {
		v, err := k.Admin(ctx, t, vc, addr).ConfigGet(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		out[addr] = v[key]
	}
	return out
}

func TestLiveAndRolledConfig(t *testing.T) {
	f := framework.NewFeature(suite, "live and rolled config").
		Assess("maxmemory is applied live on every member", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			uids := k.PodUIDs(ctx, t, vc)
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Config = v1alpha1.Config{"maxmemory": "64mb"} })
			k.WaitClusterReady(ctx, t, vc, 2*time.Minute)
			for addr, v := range configOnAll(ctx, t, k, vc, "maxmemory") {
				if v != "67108864" {
					t.Errorf("%s: maxmemory %s, want 67108864", addr, v)
				}
			}
			if after := k.PodUIDs(ctx, t, vc); !maps.Equal(uids, after) {
				t.Errorf("pods were replaced by a live change: %v -> %v", uids, after)
			}
			return ctx
		}).
		Assess("a value the server refuses is reported and not applied", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := &v1alpha1.ValkeyCluster{}
			if err := k.Client.Get(ctx, key(ctx), vc); err != nil {
				t.Fatal(err)
			}
			uids := k.PodUIDs(ctx, t, vc)
			// A live key of its own syntax, whose value admission leaves to the server:
			// CONFIG SET refuses the event class '2'.
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) {
				s.Config = v1alpha1.Config{"maxmemory": "64mb", "notify-keyspace-events": "e2e-refused"}
			})
			err := framework.WaitForList(ctx, k.Client, &v1alpha1.ValkeyNodeList{}, 2*time.Minute, "ConfigApplied=False on the members",
				func(l *v1alpha1.ValkeyNodeList) (bool, string) {
					refused := 0
					for _, n := range l.Items {
						for _, c := range n.Status.Conditions {
							if c.Type == v1alpha1.ConditionConfigApplied && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonConfigRefused {
								refused++
							}
						}
					}
					return refused == len(l.Items) && refused > 0, fmt.Sprintf("%d of %d members ConfigApplied=False ConfigRefused", refused, len(l.Items))
				}, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name})
			if err != nil {
				t.Fatal(err)
			}
			for addr, v := range configOnAll(ctx, t, k, vc, "notify-keyspace-events") {
				if v != "" {
					t.Errorf("%s: notify-keyspace-events %q, want the default (none): the refused value was applied", addr, v)
				}
			}
			if after := k.PodUIDs(ctx, t, vc); !maps.Equal(uids, after) {
				t.Errorf("pods were replaced: %v -> %v", uids, after)
			}
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) {
				s.Config = v1alpha1.Config{"maxmemory": "64mb", "notify-keyspace-events": "Ex"}
			})
			k.WaitClusterReady(ctx, t, vc, 2*time.Minute)
			for addr, v := range configOnAll(ctx, t, k, vc, "notify-keyspace-events") {
				if v != "xE" { // the server's own order of the classes Ex
					t.Errorf("%s: notify-keyspace-events %q, want xE", addr, v)
				}
			}
			return ctx
		}).
		Assess("appendonly rolls the members", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := &v1alpha1.ValkeyCluster{}
			if err := k.Client.Get(ctx, key(ctx), vc); err != nil {
				t.Fatal(err)
			}
			uids := k.PodUIDs(ctx, t, vc)
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Config["appendonly"] = "yes" })
			// The roll replaces every pod; each is checked, not only the conditions.
			err := framework.Until(ctx, 5*time.Minute, "every pod replaced", func(ctx context.Context) (bool, string, error) {
				var left []string
				for name, uid := range k.PodUIDs(ctx, t, vc) {
					if uids[name] == uid {
						left = append(left, name)
					}
				}
				return len(left) == 0, fmt.Sprintf("old pods left: %v", left), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 5*time.Minute)
			for addr, v := range configOnAll(ctx, t, k, vc, "appendonly") {
				if v != "yes" {
					t.Errorf("%s: appendonly %s", addr, v)
				}
			}
			after := k.PodUIDs(ctx, t, vc)
			for name := range after {
				if _, old := uids[name]; old {
					t.Errorf("pod %s survived a change that needs a restart", name)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestGracePeriodWarning(t *testing.T) {
	f := framework.NewFeature(suite, "grace period too short").
		Assess("is honoured and reported with a warning", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 1, 0)
			vc.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			if ok, why := framework.ConditionIs(v1alpha1.ConditionConfigurationWarning, metav1.ConditionTrue, v1alpha1.ReasonGracePeriodTooShort)(vc); !ok {
				t.Errorf("want the warning: %s", why)
			}
			if evs := k.Events(ctx, t, vc.Namespace, v1alpha1.ReasonGracePeriodTooShort); len(evs) == 0 {
				t.Error("no GracePeriodTooShort event")
			}
			for _, p := range k.Pods(ctx, t, vc) {
				if g := p.Spec.TerminationGracePeriodSeconds; g == nil || *g != 5 {
					t.Errorf("pod %s grace %v, want the explicit 5", p.Name, g)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func key(ctx context.Context) client.ObjectKey {
	return client.ObjectKey{Namespace: framework.Namespace(ctx), Name: "vk"}
}
