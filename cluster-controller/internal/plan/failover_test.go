package plan_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
)

// TestFailoverPendingIsPerShard: once any replica of a shard was asked to take over, no
// other replica of that shard is asked until it completed or the window passed.
func TestFailoverPendingIsPerShard(t *testing.T) {
	topo := plantest.Build(t, plantest.ThreeByOne())
	s := &plan.Cluster{VC: plantest.Cluster(nil), Topo: topo}
	if s.FailoverPending(0) != nil {
		t.Fatal("nothing asked yet")
	}
	a2 := topo.ByID("A2")
	ask := func(kind v1alpha1.FailoverKind, ago time.Duration) {
		a2.Node.Status.Failover = &v1alpha1.MemberFailover{Kind: kind, RequestedAt: metav1.NewMicroTime(plantest.T0.Add(-ago))}
	}
	ask(v1alpha1.FailoverPlanned, time.Second)
	if p := s.FailoverPending(0); p != a2 {
		t.Fatalf("pending = %v, want a2", p)
	}
	if s.FailoverPending(1) != nil {
		t.Error("shard 1 has nothing pending")
	}
	ask(v1alpha1.FailoverPlanned, s.FailoverWindow(a2))
	if s.FailoverPending(0) != nil {
		t.Error("an old request no longer blocks")
	}
	// A forced failover holds an election: Valkey starts the next one only after its retry
	// time (4 x the node timeout of 5 s), so the request is not repeated before.
	ask(v1alpha1.FailoverForced, 8*time.Second)
	if s.FailoverPending(0) != a2 {
		t.Error("a forced failover asked 8 s ago no longer blocks; Valkey retries its election after 20 s")
	}
	ask(v1alpha1.FailoverForced, 20*time.Second)
	if s.FailoverPending(0) != nil {
		t.Error("a forced failover asked 20 s ago still blocks")
	}
	ask(v1alpha1.FailoverForced, 0)
	a2.Self.Primary, a2.Self.Replica = true, false
	if s.FailoverPending(0) != nil {
		t.Error("a completed takeover no longer blocks")
	}
}
