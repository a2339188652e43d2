package cluster

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
	"github.com/valkey-operator/valkey-operator/internal/guard"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestEvenSlots(t *testing.T) {
	for _, n := range []int32{1, 2, 3, 5, 6} {
		total := 0
		for s := int32(0); s < n; s++ {
			total += valkey.CountSlots(evenSlotsFor(n, s))
		}
		if total != plan.SlotCount {
			t.Errorf("%d shards cover %d slots", n, total)
		}
	}
	if got := fmt.Sprint(evenSlotsFor(3, 0)); got != "[0-5461]" {
		t.Errorf("shard 0 of 3 = %s", got)
	}
}

// TestShardInFailoverHasNoCandidate: the primary of shard 0 died and its pod came back
// empty under the same member with a new node ID; the replica still follows the old ID.
// The empty member must not become the candidate, or the replica (the data) would be
// told to replicate it.
func TestShardInFailoverHasNoCandidate(t *testing.T) {
	fms := plantest.ThreeByOne()
	fms[0].ID = "A-NEW" // a's pod came back empty
	fms[0].Slots = ""
	dead := valkey.ClusterNode{ID: "A", IP: "10.0.0.1", Port: 6379, Primary: true, PFail: true}
	rs, _ := valkey.ParseRanges("0-5461")
	dead.Slots = rs
	topo := plantest.Build(t, fms, dead)
	if !topo.InFailover(0) {
		t.Fatal("shard 0 is in failover")
	}
	s := &scope{Cluster: plan.Cluster{VC: plantest.Cluster(nil), Topo: topo}}
	if c := s.candidate(0); c != nil {
		t.Fatalf("candidate of a shard in failover = %s, want none", c.Name())
	}
	if c := s.candidate(1); c == nil || c.Name() != "b" {
		t.Fatalf("candidate of shard 1 = %v", c)
	}
}

// TestFailoverPendingIsPerShard: once any replica of a shard was asked to take over, no
// other replica of that shard is asked until it completed or the window passed.
func TestFailoverPendingIsPerShard(t *testing.T) {
	topo := plantest.Build(t, plantest.ThreeByOne())
	s := &scope{Cluster: plan.Cluster{VC: plantest.Cluster(nil), Topo: topo}}
	if s.failoverPending(0) != nil {
		t.Fatal("nothing asked yet")
	}
	a2 := topo.ByID("A2")
	ask := func(kind v1alpha1.FailoverKind, ago time.Duration) {
		a2.Node.Status.Failover = &v1alpha1.MemberFailover{Kind: kind, RequestedAt: metav1.NewMicroTime(plantest.T0.Add(-ago))}
	}
	ask(v1alpha1.FailoverPlanned, time.Second)
	if p := s.failoverPending(0); p != a2 {
		t.Fatalf("pending = %v, want a2", p)
	}
	if s.failoverPending(1) != nil {
		t.Error("shard 1 has nothing pending")
	}
	ask(v1alpha1.FailoverPlanned, s.failoverWindow(a2))
	if s.failoverPending(0) != nil {
		t.Error("an old request no longer blocks")
	}
	// A forced failover holds an election: Valkey starts the next one only after its retry
	// time (4 x the node timeout of 5 s), so the request is not repeated before.
	ask(v1alpha1.FailoverForced, 8*time.Second)
	if s.failoverPending(0) != a2 {
		t.Error("a forced failover asked 8 s ago no longer blocks; Valkey retries its election after 20 s")
	}
	ask(v1alpha1.FailoverForced, 20*time.Second)
	if s.failoverPending(0) != nil {
		t.Error("a forced failover asked 20 s ago still blocks")
	}
	ask(v1alpha1.FailoverForced, 0)
	a2.Self.Primary, a2.Self.Replica = true, false
	if s.failoverPending(0) != nil {
		t.Error("a completed takeover no longer blocks")
	}
}

// TestMeetingsRepairAOneSidedView: c2's pod came back with a new identity and the other
// members forgot it while it still knows them all. Each of them must meet it; nothing else
// needs a meeting.
func TestMeetingsRepairAOneSidedView(t *testing.T) {
	topo := plantest.Build(t, plantest.ThreeByOne())
	c2 := topo.ByID("C2")
	for _, m := range topo.Members {
		if m == c2 {
			continue
		}
		var kept []valkey.ClusterNode
		for _, n := range m.View {
			if n.ID != "C2" {
				kept = append(kept, n)
			}
		}
		m.View = kept
	}
	got := meetings(topo.Reachable())
	if len(got) != 5 {
		t.Fatalf("%d meetings, want 5 (everyone meets c2)", len(got))
	}
	for _, p := range got {
		if p[1] != c2 || p[0] == c2 {
			t.Errorf("meeting %s -> %s, want every other member -> c2", p[0].Name(), p[1].Name())
		}
	}
	if n := len(meetings(plantest.Build(t, plantest.ThreeByOne()).Reachable())); n != 0 {
		t.Errorf("a formed cluster needs %d meetings, want none", n)
	}
}

// scopeFor builds the scope of a pass over vc whose members are fms
// (plantest.ClusterFor).
func scopeFor(t *testing.T, vc *v1alpha1.ValkeyCluster, fms []plantest.FakeMember, extra ...valkey.ClusterNode) *scope {
	t.Helper()
	return &scope{Cluster: *plantest.ClusterFor(t, vc, fms, extra...), guard: guard.Check(vc)}
}
