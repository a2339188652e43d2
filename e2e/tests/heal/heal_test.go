//go:build e2e

package heal

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// setup creates a 3x1 cluster, waits for Ready and returns it.
func setup(ctx context.Context, t *testing.T) (*framework.Cluster, *v1alpha1.ValkeyCluster) {
	t.Helper()
	k := framework.ClusterFrom(ctx, t)
	vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
	if err := k.Client.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
	return k, vc
}

// podOf returns the pod of a member.
func podOf(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, member string) *corev1.Pod {
	t.Helper()
	for _, p := range k.Pods(ctx, t, vc) {
		if p.Labels[v1alpha1.LabelNode] == member {
			return &p
		}
	}
	t.Fatalf("no pod for member %s", member)
	return nil
}

// member returns the ValkeyNode of the given role in shard sh.
func member(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, sh int32, role v1alpha1.Role) v1alpha1.ValkeyNode {
	t.Helper()
	for _, m := range k.Members(ctx, t, vc) {
		if m.Spec.ShardIndex == sh && m.Status.Role == role {
			return m
		}
	}
	t.Fatalf("no %s in shard %d", role, sh)
	return v1alpha1.ValkeyNode{}
}

// forgottenEverywhere checks that no server of the cluster knows node id.
func forgottenEverywhere(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, id string) {
	t.Helper()
	err := framework.Until(ctx, time.Minute, "node "+id+" forgotten by every member", func(ctx context.Context) (bool, string, error) {
		for _, addr := range k.MemberAddrs(ctx, t, vc) {
			nodes, err := k.Admin(ctx, t, vc, addr).ClusterNodes(ctx)
			if err != nil {
				return false, "", err
			}
			for _, n := range nodes {
				if n.ID == id {
					return false, addr + " still knows it", nil
				}
			}
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestReplicaPodDeleted(t *testing.T) {
	f := framework.NewFeature(suite, "replica pod deleted").
		Assess("the cluster returns to Ready and the old identity is forgotten", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k, vc := setup(ctx, t)
			r := member(ctx, t, k, vc, 1, v1alpha1.RoleReplica)
			oldID := r.Status.NodeID
			ch := k.StartChecker(ctx, t, vc)
			start := time.Now()
			if err := k.Client.Delete(ctx, podOf(ctx, t, k, vc, r.Name)); err != nil {
				t.Fatal(err)
			}
			waitNotReadyThenReady(ctx, t, k, vc)
			t.Logf("full redundancy back %s after the replica's pod was deleted", time.Since(start).Round(10*time.Millisecond))
			forgottenEverywhere(ctx, t, k, vc, oldID)
			if got := len(vc.Status.Shards); got != 3 {
				t.Errorf("%d shards, want 3", got)
			}
			framework.StopChecker(ctx, t, ch, "", true)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestPrimaryKilled(t *testing.T) {
	f := framework.NewFeature(suite, "primary killed").
		Assess("a replica takes over, writes resume, redundancy comes back", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k, vc := setup(ctx, t)
			p := member(ctx, t, k, vc, 0, v1alpha1.RolePrimary)
			r := member(ctx, t, k, vc, 0, v1alpha1.RoleReplica)
			ch := k.StartChecker(ctx, t, vc)
			time.Sleep(time.Second)
			start := time.Now()
			if err := framework.KillPod(ctx, k.Client, podOf(ctx, t, k, vc, p.Name)); err != nil {
				t.Fatal(err)
			}
			waitNotReadyThenReady(ctx, t, k, vc)
			t.Logf("full redundancy back %s after the primary's pod was killed", time.Since(start).Round(10*time.Millisecond))
			promoted := &v1alpha1.ValkeyNode{}
			if err := k.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: r.Name}, promoted); err != nil {
				t.Fatal(err)
			}
			if promoted.Status.Role != v1alpha1.RolePrimary {
				t.Errorf("the replica %s is %s, want primary", r.Name, promoted.Status.Role)
			}
			forgottenEverywhere(ctx, t, k, vc, p.Status.NodeID)
			// An unplanned loss may lose the writes not yet replicated: reported, not asserted.
			framework.StopChecker(ctx, t, ch, "", false)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestQuorumLost(t *testing.T) {
	f := framework.NewFeature(suite, "two primaries lost at once").
		Assess("the operator's takeover brings the cluster back and says so", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k, vc := setup(ctx, t)
			p0 := member(ctx, t, k, vc, 0, v1alpha1.RolePrimary)
			p1 := member(ctx, t, k, vc, 1, v1alpha1.RolePrimary)
			start := time.Now()
			for _, p := range []v1alpha1.ValkeyNode{p0, p1} {
				if err := framework.KillPod(ctx, k.Client, podOf(ctx, t, k, vc, p.Name)); err != nil {
					t.Fatal(err)
				}
			}
			waitNotReadyThenReady(ctx, t, k, vc)
			t.Logf("cluster Ready again %s after two of three primaries were killed", time.Since(start).Round(10*time.Millisecond))
			for _, addr := range k.MemberAddrs(ctx, t, vc) {
				info, err := k.Admin(ctx, t, vc, addr).ClusterInfo(ctx)
				if err != nil || info["cluster_state"] != "ok" {
					t.Errorf("%s: cluster_state %v %v", addr, info["cluster_state"], err)
				}
			}
			// One takeover may be enough: once it restores a majority of primaries, Valkey
			// can elect the other lost primary's replica by itself.
			evs := k.Events(ctx, t, vc.Namespace, "Takeover")
			if len(evs) < 1 || len(evs) > 2 {
				t.Errorf("%d Takeover events, want 1 or 2:\n%s", len(evs), framework.DescribeEvents(evs))
			}
			t.Logf("%d Takeover events", len(evs))
			for _, e := range evs {
				if e.Type != corev1.EventTypeWarning || !strings.Contains(e.Note, "quorum lost") {
					t.Errorf("takeover event: %s %s", e.Type, e.Note)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// waitNotReadyThenReady waits for the cluster to notice the loss, then for Ready again.
func waitNotReadyThenReady(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) {
	t.Helper()
	_ = framework.WaitFor(ctx, k.Client, vc, 15*time.Second, "the loss noticed",
		framework.ConditionIs(v1alpha1.ConditionReady, metav1.ConditionFalse, ""))
	k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
}
