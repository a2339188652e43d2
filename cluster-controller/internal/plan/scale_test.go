package plan_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
)

var scaleStepNames = map[plan.ScaleStep]string{
	plan.ScaleNothing: "nothing", plan.ScaleWaitForPrimaries: "wait for primaries",
	plan.ScaleWaitForState: "wait for cluster state", plan.ScaleMoveSlots: "move slots",
	plan.ScaleRetireRemovedShards: "retire removed shards", plan.ScaleRetireSurplusReplicas: "retire surplus replicas",
}

func TestPlanScale(t *testing.T) {
	shards := func(n int32) func(*v1alpha1.ValkeyClusterSpec) {
		return func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = n }
	}
	replicas := func(n int32) func(*v1alpha1.ValkeyClusterSpec) {
		return func(s *v1alpha1.ValkeyClusterSpec) { s.ReplicasPerShard = ptr.To(n) }
	}
	// d is the primary of a fourth shard, joined, without slots yet.
	d := plantest.FakeMember{Name: "d", Shard: 3, IP: "10.0.0.7", ID: "D", Joining: true}
	// a3 is a third member of shard 0, a replica in sync.
	a3 := plantest.FakeMember{Name: "a3", Shard: 0, IP: "10.0.0.8", ID: "A3", Primary: "A", Offset: 100, LinkUp: true}
	// twoShards is a cluster whose shards 0 and 1 serve every slot and whose shard 2 was
	// drained.
	twoShards := plantest.With(plantest.With(plantest.With(plantest.HealthyThreeByOne(),
		"a", func(f *plantest.FakeMember) { f.Slots = "0-8191" }),
		"b", func(f *plantest.FakeMember) { f.Slots = "8192-16383" }),
		"c", func(f *plantest.FakeMember) { f.Slots = "" })
	cases := []struct {
		name string
		vc   func(*v1alpha1.ValkeyClusterSpec)
		fms  []plantest.FakeMember
		mod  func(*plan.Cluster)
		// hold: the phase does nothing at all, not even finish open slots (ScaleHeld).
		hold    bool
		step    plan.ScaleStep
		moves   string // "from -> to: slots" joined by "; "
		retire  string // "member: why" joined by "; "
		reason  string
		message string
	}{
		{name: "the spec's shards hold even shares, no member beyond the spec: nothing to do", fms: plantest.HealthyThreeByOne()},
		{
			name: "a primary is lost: nothing moves and nobody retires until it is healed",
			vc:   shards(2), fms: plantest.With(plantest.HealthyThreeByOne(), "a", func(f *plantest.FakeMember) { f.Down = true }), hold: true,
		},
		{
			name: "a cluster being created is not scaled",
			fms:  []plantest.FakeMember{{Name: "a", IP: "10.0.0.1", ID: "A", Joining: true}}, hold: true,
		},
		{
			name: "scale out: a new shard without a member yet moves nothing (the members phase creates it)",
			vc:   shards(4), fms: plantest.HealthyThreeByOne(),
		},
		{
			name: "scale out: a new shard's primary the others do not know yet is waited for",
			vc:   shards(4), fms: append(plantest.HealthyThreeByOne(), d), mod: func(s *plan.Cluster) { plantest.Unknown(s.Topo, "D") },
			step: plan.ScaleWaitForPrimaries, reason: v1alpha1.ReasonScalingOut, message: "waiting for the new shards' primaries to join",
		},
		{
			name: "scale out: each shard gives the new shard's primary the top of its slots",
			vc:   shards(4), fms: append(plantest.HealthyThreeByOne(), d),
			step:  plan.ScaleMoveSlots,
			moves: "A -> D: 4096-5461; B -> D: 9558-10922; C -> D: 15019-16383", reason: v1alpha1.ReasonScalingOut,
			message: "moving 4096 slots in 3 moves",
		},
		{
			name: "scale out: a new shard's primary that does not see the cluster ok yet is waited for (it would refuse the keys)",
			vc:   shards(4), fms: append(plantest.HealthyThreeByOne(), d), mod: func(s *plan.Cluster) { s.Topo.ByID("D").State = "fail" },
			step: plan.ScaleWaitForState, reason: v1alpha1.ReasonScalingOut,
			message: "waiting for d to see the cluster ok before slots move (cluster_state: fail)",
		},
		{
			name: "scale in: the slots of the removed shard go to the remaining ones",
			vc:   shards(2), fms: plantest.HealthyThreeByOne(),
			step:  plan.ScaleMoveSlots,
			moves: "C -> A: 10923-13652; C -> B: 13653-16383", reason: v1alpha1.ReasonScalingIn,
			message: "moving 5461 slots in 2 moves",
		},
		{
			name: "scale in: once drained, the members of the removed shard retire together",
			vc:   shards(2), fms: twoShards,
			step:   plan.ScaleRetireRemovedShards,
			retire: "c: shard 2 is removed (spec.shards is 2); c2: shard 2 is removed (spec.shards is 2)",
			reason: v1alpha1.ReasonScalingIn, message: "retiring 2 members of removed shards",
		},
		{
			name: "scale in: a member already leaving is not retired again",
			vc:   shards(2), fms: plantest.With(twoShards, "c2", func(f *plantest.FakeMember) { f.Leaving = true }),
			step:   plan.ScaleRetireRemovedShards,
			retire: "c: shard 2 is removed (spec.shards is 2)",
			reason: v1alpha1.ReasonScalingIn, message: "retiring 1 members of removed shards",
		},
		{
			name: "fewer replicas: the newest of the replicas in sync retires",
			fms:  append(plantest.HealthyThreeByOne(), a3),
			step: plan.ScaleRetireSurplusReplicas, retire: "a3: shard 0 has more than 1 replicas",
			reason: v1alpha1.ReasonRemovingReplicas, message: "retiring 1 surplus replicas",
		},
		{
			name: "fewer replicas: a replica not in sync retires before a newer one in sync",
			fms:  append(plantest.With(plantest.HealthyThreeByOne(), "a2", func(f *plantest.FakeMember) { f.LinkUp = false }), a3),
			step: plan.ScaleRetireSurplusReplicas, retire: "a2: shard 0 has more than 1 replicas",
			reason: v1alpha1.ReasonRemovingReplicas, message: "retiring 1 surplus replicas",
		},
		{
			name: "no replicas asked: every shard's replica retires, never its primary",
			vc:   replicas(0),
			fms: plantest.With(plantest.With(plantest.HealthyThreeByOne(), // shard 0 failed over: a2 is its primary
				"a", func(f *plantest.FakeMember) { f.Slots, f.Primary, f.LinkUp = "", "A2", true }),
				"a2", func(f *plantest.FakeMember) { f.Slots, f.Primary = "0-5461", "" }),
			step:   plan.ScaleRetireSurplusReplicas,
			retire: "a: shard 0 has more than 0 replicas; b2: shard 1 has more than 0 replicas; c2: shard 2 has more than 0 replicas",
			reason: v1alpha1.ReasonRemovingReplicas, message: "retiring 3 surplus replicas",
		},
		{
			// Seen in the soak: a failover's two sides observed a moment apart, the old
			// primary still claiming the shard's slots in its own line while the new one
			// claims them too. Moving "its" slots to the shard's primary would send
			// SETSLOT to both sides of a failover.
			name: "a failover settling: two members claim the same slots, nothing moves until one does",
			fms: plantest.With(plantest.With(plantest.HealthyThreeByOne(),
				"c", func(f *plantest.FakeMember) { f.Down, f.Unflagged = true, true }),
				"c2", func(f *plantest.FakeMember) { f.Slots, f.Primary, f.Epoch = "10923-16383", "", 9 }),
			step: plan.ScaleWaitForState, reason: v1alpha1.ReasonSlotsNotPropagated,
			message: "waiting for c and c2 to agree which of them serves slots 10923-16383 (a failover settling)",
		},
		{
			name: "slots move before surplus replicas retire",
			vc:   shards(2), fms: append(plantest.HealthyThreeByOne(), a3),
			step:  plan.ScaleMoveSlots,
			moves: "C -> A: 10923-13652; C -> B: 13653-16383", reason: v1alpha1.ReasonScalingIn,
			message: "moving 5461 slots in 2 moves",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := plantest.ClusterFor(t, plantest.Cluster(c.vc), c.fms)
			if c.mod != nil {
				c.mod(s)
			}
			if hold := s.ScaleHeld(); hold != c.hold {
				t.Fatalf("held = %v, want %v", hold, c.hold)
			}
			if c.hold {
				return
			}
			p := s.PlanScale()
			var moves, retire []string
			for _, mv := range p.Moves {
				moves = append(moves, mv.String())
			}
			for _, r := range p.Retire {
				retire = append(retire, fmt.Sprintf("%s: %s", r.Member.Name(), r.Why))
			}
			got := fmt.Sprintf("%s [%s] [%s] %s %q", scaleStepNames[p.Step], strings.Join(moves, "; "), strings.Join(retire, "; "), p.Reason, p.Message)
			want := fmt.Sprintf("%s [%s] [%s] %s %q", scaleStepNames[c.step], c.moves, c.retire, c.reason, c.message)
			if got != want {
				t.Errorf("plan = %s\nwant   %s", got, want)
			}
		})
	}
}
