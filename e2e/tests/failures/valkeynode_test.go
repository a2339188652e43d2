//go:build e2e

package failures

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// TestValkeyNodeDeleted deletes a primary's ValkeyNode by hand (kubectl delete
// valkeynode): its finalizer holds it while the operator fails the primary over to its
// replica (one planned failover), creates a successor, makes every member forget the
// old node, and only then lets it go.
func TestValkeyNodeDeleted(t *testing.T) {
	f := framework.NewFeature(suite, "ValkeyNode of a primary deleted").
		Assess("one planned failover, a successor, the old node forgotten", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k, vc := newCluster(ctx, t, 3, 1, nil)
			p := k.Member(ctx, t, vc, 0, v1alpha1.RolePrimary)
			r := k.Member(ctx, t, vc, 0, v1alpha1.RoleReplica)
			slots := shardSlots(t, vc)
			owners := watchOwners(k, vc, slots)
			ch := k.StartChecker(ctx, t, vc)
			time.Sleep(time.Second)

			start := time.Now()
			if err := k.Client.Delete(ctx, &p); err != nil {
				t.Fatal(err)
			}
			owner := k.WaitOwnerChange(ctx, t, vc, slots[0], p.Status.NodeID, time.Minute)
			t.Logf("shard 0 served by %.8s %s after the delete", owner, time.Since(start).Round(10*time.Millisecond))
			if owner != r.Status.NodeID {
				t.Errorf("shard 0 is served by %.8s, want its replica %s (%.8s)", owner, r.Name, r.Status.NodeID)
			}
			if err := framework.WaitForDeletion(ctx, k.Client, &p, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			t.Logf("ValkeyNode %s gone %s after the delete", p.Name, time.Since(start).Round(100*time.Millisecond))
			took := k.WaitNotReadyThenReady(ctx, t, vc, start, 4*time.Minute)
			t.Logf("full redundancy back %s after the delete", took.Round(100*time.Millisecond))
			time.Sleep(500 * time.Millisecond)

			changes := owners.Stop()
			rep := framework.StopChecker(ctx, t, ch, "ValkeyNode deleted", true)
			t.Logf("write gap of shard 0: %s", rep.GapOf(slots[0]).Round(time.Millisecond))
			checkOwnerChanges(t, changes, slots, map[int32]int{0: 1})
			members := k.Members(ctx, t, vc)
			if len(members) != 6 {
				t.Errorf("%d members, want 6", len(members))
			}
			for _, m := range members {
				if m.Name == p.Name {
					t.Errorf("the deleted member %s is back", p.Name)
				}
			}
			waitEvent(ctx, t, k, vc.Namespace, "MemberLeft", "Normal", 10*time.Second, p.Name)
			waitEvent(ctx, t, k, vc.Namespace, "MemberCreated", "Normal", 10*time.Second, "shard 0 has 1 of 2 members")
			k.ForgottenEverywhere(ctx, t, vc, p.Status.NodeID)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
