//go:build e2e

package failures

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// downFor is how long the cluster-controller stays down in these features.
const downFor = 20 * time.Second

// whileDown checks that the cluster serves while the cluster-controller is down: a
// second write-checker (its own keys) runs for downFor and must see no failed write.
func whileDown(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) {
	t.Helper()
	ch := k.StartCheckerWith(ctx, t, vc, checker.Options{Prefix: "down"})
	time.Sleep(downFor)
	r := framework.StopChecker(ctx, t, ch, fmt.Sprintf("%s with the cluster-controller down", downFor), true)
	if r.Errors > 0 || r.Acked == 0 {
		t.Errorf("the cluster did not keep serving while the cluster-controller was down: %d of %d writes failed", r.Errors, r.Writes)
	}
}

// TestOperatorDownDuringRoll stops the cluster-controller in the middle of an upgrade
// from 8.0 to 9.1, right after the first shard failed over: the cluster keeps serving,
// and once the controller is back the roll resumes from what the servers say and ends
// with exactly one failover per shard and no acknowledged write lost.
func TestOperatorDownDuringRoll(t *testing.T) {
	f := framework.NewFeature(suite, "operator down during a roll").
		Assess("the roll resumes: one failover per shard, no write lost", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k, vc := newCluster(ctx, t, 3, 1, withImage(t, 8, 0))
			next, err := k.ValkeyImage(9, 1)
			if err != nil {
				t.Fatal(err)
			}
			slots := shardSlots(t, vc)
			before, err := k.OwnerOf(ctx, vc, slots[0])
			if err != nil {
				t.Fatal(err)
			}
			owners := watchOwners(k, vc, slots)
			ch := k.StartChecker(ctx, t, vc)
			time.Sleep(time.Second)

			start := time.Now()
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Image = next.Ref })
			k.WaitOwnerChange(ctx, t, vc, slots[0], before, 5*time.Minute)
			t.Logf("shard 0 failed over %s after the change; stopping the cluster-controller", time.Since(start).Round(100*time.Millisecond))
			t.Cleanup(func() { ensureClusterController(t, k) })
			k.ScaleOperator(ctx, t, "cluster-controller", 0)
			whileDown(ctx, t, k, vc)
			k.ScaleOperator(ctx, t, "cluster-controller", 1)
			k.WaitClusterReady(ctx, t, vc, 10*time.Minute)
			t.Logf("roll done %s after the change (the controller was down %s)", time.Since(start).Round(100*time.Millisecond), downFor)
			time.Sleep(500 * time.Millisecond)

			changes := owners.Stop()
			framework.StopChecker(ctx, t, ch, "whole roll", true)
			checkOwnerChanges(t, changes, slots, map[int32]int{0: 1, 1: 1, 2: 1})
			for _, m := range k.Members(ctx, t, vc) {
				if m.Spec.Image != next.Ref || m.Status.Version != next.Version {
					t.Errorf("member %s: image %s version %s, want %s (%s)", m.Name, m.Spec.Image, m.Status.Version, next.Ref, next.Version)
				}
			}
			if n := len(k.Members(ctx, t, vc)); n != 6 {
				t.Errorf("%d members after the roll, want 6", n)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// scaleKeys is how many keys TestOperatorDownDuringScale writes before scaling.
const scaleKeys = 20000

// TestOperatorDownDuringScale stops the cluster-controller while slots move from three
// shards to a new fourth one (Valkey 8.0: SETSLOT and MIGRATE, slot by slot): clients
// keep being served, and once the controller is back it finishes any slot left open and
// the move, with the slots balanced, every key readable and no acknowledged write lost.
func TestOperatorDownDuringScale(t *testing.T) {
	f := framework.NewFeature(suite, "operator down during a scale").
		Assess("the scale resumes: balanced, no open slot, every key readable", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k, vc := newCluster(ctx, t, 3, 1, withImage(t, 8, 0))
			framework.WriteKeys(ctx, t, k.MemberAddrs(ctx, t, vc), scaleKeys)
			ch := k.StartChecker(ctx, t, vc)
			time.Sleep(time.Second)

			start := time.Now()
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = 4 })
			moving := waitSlotsMoving(ctx, t, k, vc)
			t.Logf("slots moving %s after the change (%s); stopping the cluster-controller", time.Since(start).Round(100*time.Millisecond), moving)
			t.Cleanup(func() { ensureClusterController(t, k) })
			k.ScaleOperator(ctx, t, "cluster-controller", 0)
			t.Logf("while the controller is down: %s", slotState(ctx, t, k, vc))
			whileDown(ctx, t, k, vc)
			k.ScaleOperator(ctx, t, "cluster-controller", 1)
			k.WaitClusterReady(ctx, t, vc, 10*time.Minute)
			t.Logf("scale done %s after the change (the controller was down %s)", time.Since(start).Round(100*time.Millisecond), downFor)

			framework.StopChecker(ctx, t, ch, "whole scale", true)
			if open := slotState(ctx, t, k, vc); open != "no open slot" {
				t.Errorf("after the scale: %s", open)
			}
			k.CheckBalanced(ctx, t, vc, 4)
			framework.ReadKeys(ctx, t, k.MemberAddrs(ctx, t, vc), scaleKeys)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// waitSlotsMoving waits until the new shard's primary holds some but not all of its
// share of the slots, or a member has a slot importing or migrating.
func waitSlotsMoving(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) string {
	t.Helper()
	var seen string
	err := framework.Until(ctx, 5*time.Minute, "slots moving to the new shard", func(ctx context.Context) (bool, string, error) {
		if s := slotState(ctx, t, k, vc); s != "no open slot" {
			seen = s
			return true, "", nil
		}
		for _, m := range k.Members(ctx, t, vc) {
			if m.Spec.ShardIndex != 3 || m.Status.PodIP == "" {
				continue
			}
			c, err := k.AdminClient(ctx, vc, m.Status.PodIP+":6379")
			if err != nil {
				continue
			}
			nodes, err := c.ClusterNodes(ctx)
			c.Close()
			if err != nil {
				continue
			}
			for _, n := range nodes {
				if got := valkey.CountSlots(n.Slots); n.Myself && n.Primary && got > 0 && got < valkey.SlotCount/4 {
					seen = fmt.Sprintf("the new shard's primary %s holds %d slots", m.Name, got)
					return true, "", nil
				}
			}
		}
		return false, "no slot moved yet", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return seen
}

// slotState says which members have slots importing or migrating ("no open slot" when
// none has).
func slotState(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) string {
	t.Helper()
	var open []string
	for _, addr := range k.MemberAddrs(ctx, t, vc) {
		c, err := k.AdminClient(ctx, vc, addr)
		if err != nil {
			continue
		}
		nodes, err := c.ClusterNodes(ctx)
		c.Close()
		if err != nil {
			continue
		}
		for _, n := range nodes {
			if n.Myself && (len(n.Importing) > 0 || len(n.Migrating) > 0) {
				open = append(open, fmt.Sprintf("%s importing %v migrating %v", addr, n.Importing, n.Migrating))
			}
		}
	}
	if len(open) == 0 {
		return "no open slot"
	}
	return fmt.Sprint(open)
}
