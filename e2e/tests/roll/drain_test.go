//go:build e2e

package roll

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestDrainOn80(t *testing.T) { testDrain(t, 8, 0, v1alpha1.WorkloadStatefulSet) }
func TestDrainOn91(t *testing.T) { testDrain(t, 9, 1, v1alpha1.WorkloadStatefulSet) }

// The other workload types: a Deployment's pods and bare pods (whose controller is their
// ValkeyNode: the PodDisruptionBudget reads its scale subresource).
func TestDrainDeployment(t *testing.T) { testDrain(t, 8, 0, v1alpha1.WorkloadDeployment) }
func TestDrainPod(t *testing.T)        { testDrain(t, 8, 0, v1alpha1.WorkloadPod) }

// testDrain drains the Kubernetes node that holds a primary: each primary on it hands its
// slots to a replica in sync as its pod stops (the preStop hook on every version; on 9.x
// Valkey's own shutdown-on-sigterm failover would too): one failover per primary there,
// no acknowledged write lost. kubectl drain evicts through the PodDisruptionBudgets, so it completes only
// if the disruption controller can evaluate them for the workload type. The primaries
// stay where the drain put them (primaryPlacement policy None), so that the failovers
// counted are the drain's.
func testDrain(t *testing.T, major, minor int, workload v1alpha1.WorkloadType) {
	f := framework.NewFeature(suite, fmt.Sprintf("drain of a primary's node on %d.%d (%s)", major, minor, workload)).
		Assess("one failover per primary on the node, no write lost", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			img, err := k.ValkeyImage(major, minor)
			if err != nil {
				t.Fatal(err)
			}
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			vc.Spec.Image = img.Ref
			vc.Spec.WorkloadType = workload
			vc.Spec.PrimaryPlacement = &v1alpha1.PrimaryPlacementSpec{Policy: v1alpha1.PrimaryPlacementNone}
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			// The node of shard 0's primary, and every primary on it.
			var node string
			pods := map[string]string{}
			for _, p := range k.Pods(ctx, t, vc) {
				pods[p.Labels[v1alpha1.LabelNode]] = p.Spec.NodeName
			}
			var slots []int
			for _, m := range k.Members(ctx, t, vc) {
				if m.Status.Role == v1alpha1.RolePrimary && m.Spec.ShardIndex == 0 {
					node = pods[m.Name]
				}
			}
			primariesThere := 0
			for _, m := range k.Members(ctx, t, vc) {
				if m.Status.Role == v1alpha1.RolePrimary && pods[m.Name] == node {
					primariesThere++
				}
			}
			for _, s := range vc.Status.Shards {
				r, _ := valkey.ParseSlotRange(s.Slots[0])
				slots = append(slots, r.Start)
			}
			owners := framework.WatchOwners(func(ctx context.Context) (*valkey.Client, error) { return k.AnyAdmin(ctx, vc) }, slots)
			ch := k.StartChecker(ctx, t, vc)
			time.Sleep(time.Second)
			start := time.Now()
			if err := k.Drain(ctx, node, 3*time.Minute); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = k.Uncordon(context.Background(), node) })
			t.Logf("drained %s (%d primaries there) in %s", node, primariesThere, time.Since(start).Round(100*time.Millisecond))
			k.WaitClusterReady(ctx, t, vc, 5*time.Minute)
			t.Logf("full redundancy back %s after the drain started", time.Since(start).Round(100*time.Millisecond))
			changes := owners.Stop()
			r := framework.StopChecker(ctx, t, ch, "", false)
			total := 0
			for _, n := range changes {
				total += n
			}
			t.Logf("owner changes per shard slot: %v", changes)
			if total != primariesThere {
				t.Errorf("%d failovers seen by the servers, want one per primary on the drained node (%d)", total, primariesThere)
			}
			if r.Lost != 0 {
				t.Errorf("%d acknowledged writes lost: %v", r.Lost, r.LostKeys)
			}
			if err := k.Uncordon(ctx, node); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
