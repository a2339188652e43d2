//go:build e2e

package placement

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// failbackWithin is how soon after a member is back in sync its shard's primary must be
// on its node again: the operator's hold (10 s in sync) and one planned failover.
const failbackWithin = 30 * time.Second

// labelZones gives each worker node without a zone label a zone of its own
// (topology.kubernetes.io/zone=e2e-zone-<n>) and takes the labels away when the test
// ends. It returns each worker node's zone.
func labelZones(ctx context.Context, t *testing.T, k *framework.Cluster) map[string]string {
	t.Helper()
	nodes, err := k.WorkerNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) < 3 {
		t.Fatalf("the suite needs three worker nodes, the cluster has %d", len(nodes))
	}
	zones := map[string]string{}
	for i := range nodes {
		n := &nodes[i]
		if z, ok := n.Labels[corev1.LabelTopologyZone]; ok {
			zones[n.Name] = z
			continue
		}
		z := fmt.Sprintf("e2e-zone-%d", i+1)
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, corev1.LabelTopologyZone, z)
		if err := k.Client.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
		zones[n.Name] = z
		name := n.Name
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			unset := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, corev1.LabelTopologyZone)
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := k.Client.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(unset))); err != nil {
				t.Errorf("take the zone label off %s: %v", name, err)
			}
		})
	}
	t.Logf("zones of the worker nodes: %v", zones)
	return zones
}

// primaryNodes returns, for each shard, the Kubernetes node its primary's pod runs on,
// as the servers themselves say which server serves the shard's slots.
func primaryNodes(ctx context.Context, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) (map[int32]string, error) {
	c, err := k.AnyAdmin(ctx, vc)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	view, err := c.ClusterNodes(ctx)
	if err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := k.Client.List(ctx, &pods, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name}); err != nil {
		return nil, err
	}
	byIP := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			byIP[p.Status.PodIP] = p
		}
	}
	out := map[int32]string{}
	for _, n := range view {
		if !n.Primary || n.Fail || n.PFail || len(n.Slots) == 0 {
			continue
		}
		p, ok := byIP[n.IP]
		if !ok {
			return nil, fmt.Errorf("no pod has the address %s of primary %.8s", n.IP, n.ID)
		}
		sh, err := strconv.Atoi(p.Labels[v1alpha1.LabelShardIndex])
		if err != nil {
			return nil, fmt.Errorf("pod %s: shard label %q: %w", p.Name, p.Labels[v1alpha1.LabelShardIndex], err)
		}
		if other, dup := out[int32(sh)]; dup {
			return nil, fmt.Errorf("shard %d has two primaries serving slots (on %s and %s)", sh, other, p.Spec.NodeName)
		}
		out[int32(sh)] = p.Spec.NodeName
	}
	return out, nil
}

// perNode counts the primaries on each node.
func perNode(places map[int32]string) map[string]int {
	out := map[string]int{}
	for _, n := range places {
		out[n]++
	}
	return out
}

// describePlaces prints shard -> node in shard order.
func describePlaces(places map[int32]string) string {
	shards := make([]int, 0, len(places))
	for sh := range places {
		shards = append(shards, int(sh))
	}
	sort.Ints(shards)
	var b strings.Builder
	for _, sh := range shards {
		fmt.Fprintf(&b, "shard %d on %s; ", sh, places[int32(sh)])
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// waitSpread waits until the cluster has nothing left to do (Ready, Progressing False),
// PrimariesSpread is True, every shard's primary is on a node of the servers' view with
// at most maxPerNode primaries per node, and status.shards names each primary's node and
// its zone as zones has it. It returns where the primaries run.
func waitSpread(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, zones map[string]string, maxPerNode int, timeout time.Duration) map[int32]string {
	t.Helper()
	var places map[int32]string
	err := framework.Until(ctx, timeout, fmt.Sprintf("the primaries of %s spread, at most %d per node", vc.Name, maxPerNode), func(ctx context.Context) (bool, string, error) {
		if err := k.Client.Get(ctx, client.ObjectKeyFromObject(vc), vc); err != nil {
			return false, "", err
		}
		if ok, why := framework.ClusterReady(vc); !ok {
			return false, why, nil
		}
		c := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionPrimariesSpread)
		if c == nil || c.Status != metav1.ConditionTrue {
			return false, fmt.Sprintf("PrimariesSpread: %v", c), nil
		}
		var err error
		places, err = primaryNodes(ctx, k, vc)
		if err != nil {
			return false, err.Error(), nil
		}
		if len(places) != int(vc.Spec.ShardCount()) {
			return false, fmt.Sprintf("%d shards served: %s", len(places), describePlaces(places)), nil
		}
		for n, count := range perNode(places) {
			if count > maxPerNode {
				return false, fmt.Sprintf("node %s holds %d primaries: %s", n, count, describePlaces(places)), nil
			}
		}
		for _, sh := range vc.Status.Shards {
			if sh.PrimaryNode != places[sh.Index] || sh.PrimaryZone != zones[sh.PrimaryNode] {
				return false, fmt.Sprintf("status.shards[%d] says node %q zone %q, the servers node %q (zone %q)",
					sh.Index, sh.PrimaryNode, sh.PrimaryZone, places[sh.Index], zones[places[sh.Index]]), nil
			}
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionPrimariesSpread)
	t.Logf("primaries: %s; PrimariesSpread=%s %s: %s", describePlaces(places), c.Status, c.Reason, c.Message)
	return places
}

// waitNotSpread waits until PrimariesSpread says the spread does not hold.
func waitNotSpread(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, timeout time.Duration) {
	t.Helper()
	if err := framework.WaitFor(ctx, k.Client, vc, timeout, "PrimariesSpread False",
		framework.ConditionIs(v1alpha1.ConditionPrimariesSpread, metav1.ConditionFalse, v1alpha1.ReasonNotSpread)); err != nil {
		t.Fatal(err)
	}
	framework.LogCondition(t, vc, v1alpha1.ConditionPrimariesSpread)
}

// waitBackInSync waits until member name is a replica in sync (its Synced condition),
// with a node ID other than notID when set (a server that restarted empty), and
// returns when it saw it.
func waitBackInSync(ctx context.Context, t *testing.T, k *framework.Cluster, ns, name, notID string, timeout time.Duration) time.Time {
	t.Helper()
	vn := &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	err := framework.WaitFor(ctx, k.Client, vn, timeout, name+" back in sync", func(vn *v1alpha1.ValkeyNode) (bool, string) {
		c := meta.FindStatusCondition(vn.Status.Conditions, v1alpha1.ConditionSynced)
		if c == nil {
			return false, "no Synced condition"
		}
		ok := c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonSynced && (notID == "" || vn.Status.NodeID != notID)
		return ok, fmt.Sprintf("Synced=%s %s, node %.8s", c.Status, c.Reason, vn.Status.NodeID)
	})
	if err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// firstSlot is the first slot of shard sh, as the cluster's status lists it.
func firstSlot(t *testing.T, vc *v1alpha1.ValkeyCluster, sh int32) int {
	t.Helper()
	for _, s := range vc.Status.Shards {
		if s.Index == sh && len(s.Slots) > 0 {
			r, err := valkey.ParseSlotRange(s.Slots[0])
			if err != nil {
				t.Fatal(err)
			}
			return r.Start
		}
	}
	t.Fatalf("no slots of shard %d in the status: %+v", sh, vc.Status.Shards)
	return 0
}

// checkMoves checks the user-visible trace of failback: a RestoringPlacement event
// naming the shard, and the operator's count of primary moves for it.
func checkMoves(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, sh int32) {
	t.Helper()
	evs := k.Events(ctx, t, vc.Namespace, v1alpha1.ReasonRestoringPlacement)
	found := false
	for _, e := range evs {
		found = found || strings.HasPrefix(e.Note, fmt.Sprintf("shard %d: ", sh))
	}
	if !found {
		t.Errorf("no RestoringPlacement event names shard %d:\n%s", sh, framework.DescribeEvents(evs))
	}
	t.Logf("RestoringPlacement events:\n%s", framework.DescribeEvents(evs))
	moves, err := k.OperatorMetric(ctx, "cluster-controller", "valkey_operator_primary_moves_total",
		map[string]string{"namespace": vc.Namespace, "cluster": vc.Name, "shard": strconv.Itoa(int(sh))})
	if err != nil {
		t.Fatal(err)
	}
	if moves < 1 {
		t.Errorf("valkey_operator_primary_moves_total of shard %d is %v, want at least 1", sh, moves)
	}
}
