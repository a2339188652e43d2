//go:build e2e

package failures

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

func TestPrimaryPodDeletedOn80(t *testing.T) { testPrimaryPodDeleted(t, 8, 0) }
func TestPrimaryPodDeletedOn91(t *testing.T) { testPrimaryPodDeleted(t, 9, 1) }

// testPrimaryPodDeleted deletes a primary's pod as kubectl delete does (the default
// grace period): the primary hands its slots to its replica before it stops (the preStop
// hook on every version; on 9.x shutdown-on-sigterm failover would too), so clients see
// one planned failover, shorter than an unplanned one, and no acknowledged write is lost.
func testPrimaryPodDeleted(t *testing.T, major, minor int) {
	f := framework.NewFeature(suite, fmt.Sprintf("primary pod deleted on %d.%d", major, minor)).
		Assess("one planned failover, no acknowledged write lost, redundancy back", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k, vc := newCluster(ctx, t, 3, 1, withImage(t, major, minor))
			p := k.Member(ctx, t, vc, 0, v1alpha1.RolePrimary)
			r := k.Member(ctx, t, vc, 0, v1alpha1.RoleReplica)
			pod := k.PodOf(ctx, t, vc, p.Name)
			slots := shardSlots(t, vc)
			owners := watchOwners(k, vc, slots)
			ch := k.StartChecker(ctx, t, vc)
			time.Sleep(time.Second)

			start := time.Now()
			if err := k.Client.Delete(ctx, pod); err != nil {
				t.Fatal(err)
			}
			owner := k.WaitOwnerChange(ctx, t, vc, slots[0], p.Status.NodeID, time.Minute)
			t.Logf("shard 0 served by %.8s %s after the delete", owner, time.Since(start).Round(10*time.Millisecond))
			if owner != r.Status.NodeID {
				t.Errorf("shard 0 is served by %.8s, want its replica %s (%.8s)", owner, r.Name, r.Status.NodeID)
			}
			took := k.WaitNotReadyThenReady(ctx, t, vc, start, 4*time.Minute)
			t.Logf("full redundancy back %s after the primary's pod was deleted", took.Round(100*time.Millisecond))
			time.Sleep(500 * time.Millisecond)
			changes := owners.Stop()
			rep := framework.StopChecker(ctx, t, ch, "primary pod deleted", true)
			checkOwnerChanges(t, changes, slots, map[int32]int{0: 1})
			gap := rep.GapOf(slots[0])
			t.Logf("write gap of shard 0: %s", gap.Round(time.Millisecond))
			if gap >= nodeTimeout {
				t.Errorf("shard 0 could not be written for %s: an unplanned failover, not a handover (it takes less than cluster-node-timeout %s)", gap, nodeTimeout)
			}
			// The StatefulSet's new pod is a new, empty node that joined as a replica; the
			// old identity is gone from every member.
			now := getMember(ctx, t, k, vc.Namespace, p.Name)
			if now.Status.NodeID == p.Status.NodeID || now.Status.Role != v1alpha1.RoleReplica {
				t.Errorf("member %s: node %.8s role %s, want a new node ID as a replica", p.Name, now.Status.NodeID, now.Status.Role)
			}
			k.ForgottenEverywhere(ctx, t, vc, p.Status.NodeID)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
