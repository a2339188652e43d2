//go:build e2e

package placement

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// TestKilledPrimaryMovesBack: a 3x1 cluster on three nodes in three zones holds one
// primary per node at rest. The server of shard 0's primary is SIGKILLed: its replica on
// another node takes over (the operator's promotion on the kubelet's report), and that
// node then holds two primaries. The killed server restarts empty, joins as the new
// replica and catches up; once it has been in sync for the operator's hold, a planned
// failover makes it the primary again, on its own node: no write fails while it moves,
// and no acknowledged write is lost over the whole run.
func TestKilledPrimaryMovesBack(t *testing.T) {
	f := framework.NewFeature(suite, "3x1: a killed primary's member takes its shard back once in sync").
		Assess("one primary per node at rest, and again after the kill", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			zones := labelZones(ctx, t, k)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			before := waitSpread(ctx, t, k, vc, zones, 1, 3*time.Minute)

			p := k.Member(ctx, t, vc, 0, v1alpha1.RolePrimary)
			r := k.Member(ctx, t, vc, 0, v1alpha1.RoleReplica)
			home := before[0]
			pod := k.PodOf(ctx, t, vc, p.Name)
			slot := firstSlot(t, vc, 0)
			all := k.StartChecker(ctx, t, vc)
			time.Sleep(time.Second)

			start := time.Now()
			if _, err := framework.SignalContainer(pod, "server", syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			owner := k.WaitOwnerChange(ctx, t, vc, slot, p.Status.NodeID, 2*time.Minute)
			t.Logf("shard 0 served by %.8s %s after the kill", owner, time.Since(start).Round(10*time.Millisecond))
			if owner != r.Status.NodeID {
				t.Errorf("shard 0 is served by %.8s, want its replica %s (%.8s)", owner, r.Name, r.Status.NodeID)
			}
			waitNotSpread(ctx, t, k, vc, time.Minute)

			back := waitBackInSync(ctx, t, k, vc.Namespace, p.Name, p.Status.NodeID, 3*time.Minute)
			t.Logf("%s back in sync %s after the kill", p.Name, back.Sub(start).Round(100*time.Millisecond))
			after := expectFailback(ctx, t, k, vc, zones, 1, back, p.Name+" was back in sync")
			if after[0] != home {
				t.Errorf("shard 0's primary runs on %s, want %s, where it ran before the kill", after[0], home)
			}
			framework.StopChecker(ctx, t, all, "from before the kill", true)
			checkMoves(ctx, t, k, vc, 0)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestNodeCutOffThenBack: the node of shard 0's primary is cut off from the network. The
// majority side fails the shard over to its replica on another node; the old primary,
// cut off, keeps its identity. When the link comes back it rejoins as a replica and
// catches up, and the shard's primary moves back to it with a planned failover.
func TestNodeCutOffThenBack(t *testing.T) {
	f := framework.NewFeature(suite, "3x1: a node cut off and back gets its primary back").WithLabel("disruptive", "true").
		Assess("the shard moves back once its member on the node is in sync", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			zones := labelZones(ctx, t, k)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			before := waitSpread(ctx, t, k, vc, zones, 1, 3*time.Minute)
			p := k.Member(ctx, t, vc, 0, v1alpha1.RolePrimary)
			victim := before[0]
			slot := firstSlot(t, vc, 0)
			all := k.StartChecker(ctx, t, vc)
			time.Sleep(time.Second)

			start := time.Now()
			if err := k.CutLink(ctx, victim); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { restoreNode(t, k, victim) })
			owner := k.WaitOwnerChange(ctx, t, vc, slot, p.Status.NodeID, 2*time.Minute)
			t.Logf("shard 0 served by %.8s on the majority side %s after the cut", owner, time.Since(start).Round(10*time.Millisecond))
			time.Sleep(10 * time.Second) // writes resume on the majority side
			if err := k.RestoreLink(ctx, victim); err != nil {
				t.Fatal(err)
			}
			restored := time.Now()
			back := waitBackInSync(ctx, t, k, vc.Namespace, p.Name, "", 3*time.Minute)
			t.Logf("%s back in sync %s after the link came back", p.Name, back.Sub(restored).Round(100*time.Millisecond))
			after := expectFailback(ctx, t, k, vc, zones, 1, back, p.Name+" was back in sync")
			t.Logf("%s after the link came back", time.Since(restored).Round(100*time.Millisecond))
			if after[0] != victim {
				t.Errorf("shard 0's primary runs on %s, want %s, the node that came back", after[0], victim)
			}
			// Writes acknowledged by the cut primary just before the cut and not yet
			// replicated may be lost: reported, not asserted.
			framework.StopChecker(ctx, t, all, "from before the cut, host side", false)
			checkMoves(ctx, t, k, vc, 0)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestSixShardsOnThreeNodes: a 6x1 cluster on three nodes holds at most two primaries
// per node at rest (the best three nodes allow: PrimariesSpread True, BestPossible, as
// three zones cannot hold six primaries one each), and again after a primary's server is
// SIGKILLed and its member is back, and after its node is cut off and back; after a drain
// the members run on two nodes, and the primaries are spread three and three.
func TestSixShardsOnThreeNodes(t *testing.T) {
	f := framework.NewFeature(suite, "6x1: at most two primaries per node").
		Assess("two primaries per node at rest, and again after a kill", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			zones := labelZones(ctx, t, k)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 6, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 4*time.Minute)
			waitSpread(ctx, t, k, vc, zones, 2, 3*time.Minute)

			p := k.Member(ctx, t, vc, 0, v1alpha1.RolePrimary)
			pod := k.PodOf(ctx, t, vc, p.Name)
			slot := firstSlot(t, vc, 0)
			all := k.StartChecker(ctx, t, vc)
			time.Sleep(time.Second)
			if _, err := framework.SignalContainer(pod, "server", syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			k.WaitOwnerChange(ctx, t, vc, slot, p.Status.NodeID, 2*time.Minute)
			waitBackInSync(ctx, t, k, vc.Namespace, p.Name, p.Status.NodeID, 3*time.Minute)
			places := waitSpread(ctx, t, k, vc, zones, 2, 2*time.Minute)
			framework.StopChecker(ctx, t, all, "from before the kill", true)

			// The node of shard 0's primary cut off and back: at most two per node again.
			p = k.Member(ctx, t, vc, 0, v1alpha1.RolePrimary)
			victim := places[0]
			all = k.StartChecker(ctx, t, vc)
			if err := k.CutLink(ctx, victim); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { restoreNode(t, k, victim) })
			k.WaitOwnerChange(ctx, t, vc, slot, p.Status.NodeID, 2*time.Minute)
			if err := k.RestoreLink(ctx, victim); err != nil {
				t.Fatal(err)
			}
			waitBackInSync(ctx, t, k, vc.Namespace, p.Name, "", 3*time.Minute)
			places = waitSpread(ctx, t, k, vc, zones, 2, 2*time.Minute)
			framework.StopChecker(ctx, t, all, "from before the cut, host side", false)

			// A node drained: its members run on the two others from then on (a running pod
			// never moves), so six primaries on two nodes are three per node at best.
			drained := places[0]
			all = k.StartCheckerWith(ctx, t, vc, checker.Options{Prefix: "drain"})
			drainAndWait(ctx, t, k, vc, drained)
			framework.StopChecker(ctx, t, all, "through the drain", true)
			moves := k.StartCheckerWith(ctx, t, vc, checker.Options{Prefix: "moves"})
			waitSpread(ctx, t, k, vc, zones, 3, 2*time.Minute)
			if r := framework.StopChecker(ctx, t, moves, "after the drain, until spread", true); r.Errors > 0 {
				t.Errorf("%d of %d writes failed while the primaries moved after the drain, want none", r.Errors, r.Writes)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestDrainedNode: the node of shard 0's primary is drained. The primary hands its shard
// over before its pod goes (a planned failover), its member comes back on another node
// and catches up; the primaries are then spread as well as the two nodes left allow (at
// most two per node, none beside a replica of its own shard) within the failback bound
// of the cluster being Ready, and a client without retries sees no failed write while
// they move. No acknowledged write is lost through the drain; its failed writes (the
// operator's own pods on the node are evicted too) are reported, and the failures suite
// is where a drain's own figures are held.
func TestDrainedNode(t *testing.T) {
	f := framework.NewFeature(suite, "3x1: a drained node's primary").WithLabel("disruptive", "true").
		Assess("the primaries are spread over the nodes left", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			zones := labelZones(ctx, t, k)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			before := waitSpread(ctx, t, k, vc, zones, 1, 3*time.Minute)
			all := k.StartCheckerWith(ctx, t, vc, checker.Options{Prefix: "drain"})
			time.Sleep(time.Second)
			ready := drainAndWait(ctx, t, k, vc, before[0])
			framework.StopChecker(ctx, t, all, "through the drain", true)
			after := expectFailback(ctx, t, k, vc, zones, 2, ready, "the cluster was Ready again")
			for sh, n := range after {
				if n == before[0] {
					t.Errorf("shard %d's primary runs on the drained node %s", sh, n)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// expectFailback waits until the primaries are spread again, at most maxPerNode per
// node, under a client without retries that starts now: the spread must come back within
// failbackWithin of since (what happened then is named by sinceWhat), and no write may
// fail while primaries move. It returns where the primaries run.
func expectFailback(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, zones map[string]string, maxPerNode int, since time.Time, sinceWhat string) map[int32]string {
	t.Helper()
	strict := k.StartCheckerWith(ctx, t, vc, checker.Options{Prefix: "failback"})
	after := waitSpread(ctx, t, k, vc, zones, maxPerNode, 2*time.Minute)
	took := time.Since(since)
	t.Logf("primaries spread again %s after %s", took.Round(100*time.Millisecond), sinceWhat)
	if took > failbackWithin {
		t.Errorf("the spread came back %s after %s, want within %s", took.Round(time.Second), sinceWhat, failbackWithin)
	}
	moved := framework.StopChecker(ctx, t, strict, "while the primaries moved", true)
	if moved.Errors > 0 || moved.Acked == 0 {
		t.Errorf("%d of %d writes failed while the primaries moved, want none", moved.Errors, moved.Writes)
	}
	return after
}

// drainAndWait drains node (uncordoned again at the end of the test) and waits until the
// cluster is Ready with every member in sync; it returns when it saw it.
func drainAndWait(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, node string) time.Time {
	t.Helper()
	start := time.Now()
	if err := k.Drain(ctx, node, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := k.Uncordon(ctx, node); err != nil {
			t.Error(err)
		}
	})
	t.Logf("node %s drained in %s", node, time.Since(start).Round(100*time.Millisecond))
	// The status may still say Ready from before the drain: first every member on
	// another node, in sync.
	err := framework.Until(ctx, 4*time.Minute, "every member on another node than "+node+", in sync", func(ctx context.Context) (bool, string, error) {
		for _, m := range k.Members(ctx, t, vc) {
			synced := m.Status.Role == v1alpha1.RolePrimary || meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ConditionSynced)
			if m.Status.NodeName == node || m.Status.NodeName == "" || !synced {
				return false, fmt.Sprintf("%s on node %q, role %s, in sync %v", m.Name, m.Status.NodeName, m.Status.Role, synced), nil
			}
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	k.WaitClusterReady(ctx, t, vc, 4*time.Minute)
	t.Logf("cluster Ready %s after the drain began", time.Since(start).Round(100*time.Millisecond))
	return time.Now()
}

// restoreNode brings a cut node back and waits until it is schedulable (cleanup).
func restoreNode(t *testing.T, k *framework.Cluster, node string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := k.RestoreLink(ctx, node); err != nil {
		t.Errorf("restore the link of %s: %v", node, err)
		return
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := framework.WaitFor(ctx, k.Client, n, 2*time.Minute, "become schedulable", framework.NodeBecomesSchedulable); err != nil {
		t.Error(err)
	}
}
