//go:build e2e

package heal

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

func TestReplicaPodDeleted(t *testing.T) {
	f := framework.NewFeature(suite, "replica pod deleted").
		Assess("the cluster returns to Ready and the old identity is forgotten", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k, vc := setup(ctx, t)
			r := k.Member(ctx, t, vc, 1, v1alpha1.RoleReplica)
			oldID := r.Status.NodeID
			ch := k.StartChecker(ctx, t, vc)
			start := time.Now()
			if err := k.Client.Delete(ctx, k.PodOf(ctx, t, vc, r.Name)); err != nil {
				t.Fatal(err)
			}
			k.WaitNotReadyThenReady(ctx, t, vc, time.Now(), 3*time.Minute)
			t.Logf("full redundancy back %s after the replica's pod was deleted", time.Since(start).Round(10*time.Millisecond))
			k.ForgottenEverywhere(ctx, t, vc, oldID)
			if got := len(vc.Status.Shards); got != 3 {
				t.Errorf("%d shards, want 3", got)
			}
			framework.StopChecker(ctx, t, ch, "", true)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// A primary's pod killed (its server SIGKILLed, then the pod deleted with no grace
// period, as an operator does to a pod that will not go): the pod is gone from the API
// before the kubelet could report the exit, and the cluster-controller promotes the
// replica on its own proof (the pod's old address refuses connections), as fast as for
// a crashed server, on every workload type.
func TestPrimaryKilled(t *testing.T)           { testPrimaryKilled(t, v1alpha1.WorkloadStatefulSet) }
func TestPrimaryKilledDeployment(t *testing.T) { testPrimaryKilled(t, v1alpha1.WorkloadDeployment) }
func TestPrimaryKilledPod(t *testing.T)        { testPrimaryKilled(t, v1alpha1.WorkloadPod) }

func testPrimaryKilled(t *testing.T, workload v1alpha1.WorkloadType) {
	f := framework.NewFeature(suite, "primary killed ("+string(workload)+")").
		Assess("its replica takes over on the operator's word, writes resume, redundancy comes back", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			vc.Spec.WorkloadType = workload
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			p := k.Member(ctx, t, vc, 0, v1alpha1.RolePrimary)
			r := k.Member(ctx, t, vc, 0, v1alpha1.RoleReplica)
			ch := k.StartChecker(ctx, t, vc)
			time.Sleep(time.Second)
			start := time.Now()
			if err := framework.KillPod(ctx, k.Client, k.PodOf(ctx, t, vc, p.Name)); err != nil {
				t.Fatal(err)
			}
			owner := k.WaitOwnerChange(ctx, t, vc, 0, p.Status.NodeID, 2*time.Minute)
			promotedAt := time.Now()
			t.Logf("shard 0 served by %.8s %s after the kill", owner, promotedAt.Sub(start).Round(10*time.Millisecond))
			if owner != r.Status.NodeID {
				t.Errorf("shard 0 is served by %.8s, want its replica %s (%.8s)", owner, r.Name, r.Status.NodeID)
			}
			k.WaitNotReadyThenReady(ctx, t, vc, start, 3*time.Minute)
			t.Logf("full redundancy back %s after the primary's pod was killed", time.Since(start).Round(10*time.Millisecond))
			k.CheckPromotion(ctx, t, vc, p.Name, promotedAt)
			k.ForgottenEverywhere(ctx, t, vc, p.Status.NodeID)
			// An unplanned loss may lose the writes not yet replicated: reported, not asserted.
			rep := framework.StopChecker(ctx, t, ch, "", false)
			t.Logf("write gap of shard 0: %s", rep.GapOf(0).Round(time.Millisecond))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestQuorumLost(t *testing.T) {
	f := framework.NewFeature(suite, "two primaries lost at once").
		Assess("the operator's takeover brings the cluster back and says so", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k, vc := setup(ctx, t)
			p0 := k.Member(ctx, t, vc, 0, v1alpha1.RolePrimary)
			p1 := k.Member(ctx, t, vc, 1, v1alpha1.RolePrimary)
			start := time.Now()
			for _, p := range []v1alpha1.ValkeyNode{p0, p1} {
				if err := framework.KillPod(ctx, k.Client, k.PodOf(ctx, t, vc, p.Name)); err != nil {
					t.Fatal(err)
				}
			}
			k.WaitNotReadyThenReady(ctx, t, vc, time.Now(), 3*time.Minute)
			t.Logf("cluster Ready again %s after two of three primaries were killed", time.Since(start).Round(10*time.Millisecond))
			for _, addr := range k.MemberAddrs(ctx, t, vc) {
				info, err := k.Admin(ctx, t, vc, addr).ClusterInfo(ctx)
				if err != nil || info["cluster_state"] != "ok" {
					t.Errorf("%s: cluster_state %v %v", addr, info["cluster_state"], err)
				}
			}
			// One takeover may be enough: once it restores a majority of primaries, Valkey
			// can elect the other lost primary's replica by itself. A FORCE asked while the
			// other primary still answered loses its votes when that one dies too: the
			// operator then asks a TAKEOVER of the same replica, an event of its own that
			// says the forced failover has not taken effect.
			evs := k.Events(ctx, t, vc.Namespace, "Takeover")
			var asked, escalated int
			for _, e := range evs {
				if strings.Contains(e.Note, "has not taken effect") {
					escalated++
				} else {
					asked++
				}
			}
			if asked < 1 || asked > 2 || escalated > asked {
				t.Errorf("%d Takeover events (%d escalated), want 1 or 2 and at most one escalation each:\n%s",
					len(evs), escalated, framework.DescribeEvents(evs))
			}
			t.Logf("%d Takeover events (%d escalated)", len(evs), escalated)
			// Each says why the operator forced it: the lost primaries are proven gone
			// (their pods' addresses refuse connections), or silent with quorum lost.
			for _, e := range evs {
				if e.Type != corev1.EventTypeWarning || !(strings.Contains(e.Note, "quorum lost") || strings.Contains(e.Note, "is gone")) {
					t.Errorf("takeover event: %s %s", e.Type, e.Note)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
