//go:build e2e

package scale

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// TestScaleChangedMidway changes the shard count while slots are moving, on 8.0 (MIGRATE,
// the slower path): 3 -> 5 becomes 3 -> 4 half way, then 4 -> 2 is reverted to 4 half way.
// Each time the cluster must converge to the last spec: every key readable, the slots
// balanced over exactly that many shards, no open slot, no member left for a shard the
// spec no longer has, and no acknowledged write lost.
func TestScaleChangedMidway(t *testing.T) {
	f := framework.NewFeature(suite, "shard count changed while slots move").
		Assess("the cluster converges to the last spec", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			img, err := k.ValkeyImage(8, 0)
			if err != nil {
				t.Fatal(err)
			}
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			vc.Spec.Image = img.Ref
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			framework.WriteKeys(ctx, t, k.MemberAddrs(ctx, t, vc), keys)
			ch := k.StartChecker(ctx, t, vc)

			for _, step := range []struct{ from, first, then int32 }{{3, 5, 4}, {4, 2, 4}} {
				start := time.Now()
				k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = step.first })
				seen := waitUnbalanced(ctx, t, k, vc, int(step.from))
				k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = step.then })
				t.Logf("%d -> %d: changed to %d shards %s after the first change, with slots per primary %s",
					step.from, step.first, step.then, time.Since(start).Round(10*time.Millisecond), seen)
				k.WaitClusterReady(ctx, t, vc, 10*time.Minute)
				t.Logf("%d shards: Ready %s after the first change", step.then, time.Since(start).Round(100*time.Millisecond))
				checkBalanced(ctx, t, k, vc, int(step.then))
				checkMembers(ctx, t, k, vc, step.then, 1)
				framework.ReadKeys(ctx, t, k.MemberAddrs(ctx, t, vc), keys)
			}
			framework.StopChecker(ctx, t, ch, "", true)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestReplicasUpAndDown adds a replica to every shard, then removes them all, under
// writes: the primaries never change (no failover) and every key stays readable.
func TestReplicasUpAndDown(t *testing.T) {
	f := framework.NewFeature(suite, "replicas per shard up and down").
		Assess("replicas join and leave, primaries stay", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 2, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			framework.WriteKeys(ctx, t, k.MemberAddrs(ctx, t, vc), keys)
			before := primaries(ctx, t, k, vc)
			ch := k.StartChecker(ctx, t, vc)
			for _, replicas := range []int32{2, 0} {
				start := time.Now()
				k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.ReplicasPerShard = ptr.To(replicas) })
				k.WaitClusterReady(ctx, t, vc, 5*time.Minute)
				t.Logf("%d replicas per shard: Ready %s after the change", replicas, time.Since(start).Round(100*time.Millisecond))
				checkMembers(ctx, t, k, vc, 2, replicas)
				if now := primaries(ctx, t, k, vc); now != before {
					t.Errorf("primaries changed from %s to %s: a scale of replicas must not fail over", before, now)
				}
				checkBalanced(ctx, t, k, vc, 2)
			}
			framework.ReadKeys(ctx, t, k.MemberAddrs(ctx, t, vc), keys)
			framework.StopChecker(ctx, t, ch, "", true)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// waitUnbalanced waits until the slots are no longer spread evenly over shards
// primaries (a move has begun) and returns the slot counts it saw.
func waitUnbalanced(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, shards int) string {
	t.Helper()
	c, err := k.AnyAdmin(ctx, vc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	even := valkey.SlotCount / shards
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		nodes, err := c.ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var counts []int
		moving := false
		for _, n := range nodes {
			if !n.Primary || len(n.Slots) == 0 {
				continue
			}
			got := valkey.CountSlots(n.Slots)
			counts = append(counts, got)
			moving = moving || got < even || got > even+1
		}
		if moving || len(counts) != shards {
			sort.Sort(sort.Reverse(sort.IntSlice(counts)))
			return fmt.Sprint(counts)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no slot moved within 2 minutes of the change from %d shards", shards)
	return ""
}

// checkMembers wants exactly the members of the spec: shards x (1 + replicas), none
// labelled with a shard the spec does not have.
func checkMembers(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, shards, replicas int32) {
	t.Helper()
	members := k.Members(ctx, t, vc)
	var extra []string
	for _, m := range members {
		if m.Spec.ShardIndex >= shards {
			extra = append(extra, fmt.Sprintf("%s (shard %d)", m.Name, m.Spec.ShardIndex))
		}
	}
	if want := int(shards * (1 + replicas)); len(members) != want || len(extra) > 0 {
		t.Errorf("%d members, want %d; members of shards the spec does not have: %v", len(members), want, extra)
	}
}

// primaries lists, sorted, the node IDs of the primaries that serve slots.
func primaries(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) string {
	t.Helper()
	c, err := k.AnyAdmin(ctx, vc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nodes, err := c.ClusterNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range nodes {
		if n.Primary && len(n.Slots) > 0 {
			ids = append(ids, n.ID[:8])
		}
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}
