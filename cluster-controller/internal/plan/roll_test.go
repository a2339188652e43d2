package plan_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
)

// TestRollEndsWhenTheLastMemberIsBack: an in-place roll authorises a member by raising
// its revision, which makes its spec current at once. Until its pod was rebuilt for that
// revision, the roll is not over: the shard stays the one to roll and the spec does not
// count as applied (Progressing stays True).
func TestRollEndsWhenTheLastMemberIsBack(t *testing.T) {
	vc := plantest.Cluster(func(s *v1alpha1.ValkeyClusterSpec) {
		s.Shards, s.ReplicasPerShard = 3, ptr.To[int32](1)
	})
	topo := plantest.Build(t, plantest.ThreeByOne())
	for _, m := range topo.Members {
		m.Node.Spec = plan.DesiredSpec(vc, m.Shard())
		m.Node.Spec.Revision, m.Node.Status.Revision = 1, 1
	}
	s := &plan.Cluster{VC: vc, Topo: topo}
	if sh, ok := s.NextShardToRoll(); ok {
		t.Fatalf("nothing to roll, got shard %d", sh)
	}
	if !s.MembersUpToDate() {
		t.Fatal("every member runs the spec's pod: want up to date")
	}

	c2 := topo.ByID("C2")
	c2.Node.Spec.Revision = 2 // authorised, its pod not rebuilt yet
	if sh, ok := s.NextShardToRoll(); !ok || sh != 2 {
		t.Errorf("next shard to roll = %d %v, want 2 (c2 is restarting)", sh, ok)
	}
	if s.MembersUpToDate() {
		t.Error("c2 still runs its old pod: want not up to date")
	}

	c2.Node.Status.Revision = 2
	if sh, ok := s.NextShardToRoll(); ok {
		t.Errorf("c2 is back: nothing to roll, got shard %d", sh)
	}
	if !s.MembersUpToDate() {
		t.Error("c2 is back: want up to date")
	}
}

var rollStepNames = map[plan.RollStep]string{
	plan.RollNothing: "nothing", plan.RollSettleFirst: "settle first", plan.RollWait: "wait", plan.RollBlocked: "blocked",
	plan.RollAddSuccessor: "add successor", plan.RollRetire: "retire", plan.RollRestart: "restart", plan.RollFailover: "failover",
}

func TestPlanRoll(t *testing.T) {
	volumes := func(s *v1alpha1.ValkeyClusterSpec) {
		s.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("1Gi")}
	}
	outdated := func(f *plantest.FakeMember) { f.Outdated = true }
	// b3 is a successor of shard 1 created with the spec: in sync, or not yet.
	b3 := plantest.FakeMember{Name: "b3", Shard: 1, IP: "10.0.0.7", ID: "B3", Primary: "B", Offset: 100, LinkUp: true, Joining: true}
	b3Syncing := b3
	b3Syncing.LinkUp = false
	b3NoImage := b3Syncing
	b3NoImage.PodNotReady = v1alpha1.ReasonImagePullBackOff
	cases := []struct {
		name    string
		vc      func(*v1alpha1.ValkeyClusterSpec)
		fms     []plantest.FakeMember
		step    plan.RollStep
		member  string
		message string
		after   time.Duration
	}{
		{name: "every member runs the spec's pod: nothing to roll", fms: plantest.HealthyThreeByOne(), step: plan.RollNothing},
		{
			name: "a member of a removed shard is not rolled",
			fms:  append(plantest.HealthyThreeByOne(), plantest.FakeMember{Name: "d", Shard: 3, IP: "10.0.0.7", ID: "D", Outdated: true}),
			step: plan.RollNothing,
		},
		{
			name: "an outdated member while a primary is lost: the roll waits for the cluster to settle, the pass goes on",
			fms:  plantest.With(plantest.With(plantest.HealthyThreeByOne(), "a", func(f *plantest.FakeMember) { f.Down = true }), "b2", outdated),
			step: plan.RollSettleFirst, message: "shard 1 needs a roll; waiting for the cluster to settle first",
		},
		{
			name: "an outdated member while a member leaves: the roll waits for the cluster to settle",
			fms:  plantest.With(plantest.With(plantest.HealthyThreeByOne(), "c2", func(f *plantest.FakeMember) { f.Leaving = true }), "b2", outdated),
			step: plan.RollSettleFirst, message: "shard 1 needs a roll; waiting for the cluster to settle first",
		},
		{
			name: "the lowest shard with an outdated member rolls first",
			fms:  plantest.With(plantest.With(plantest.HealthyThreeByOne(), "c2", outdated), "b2", outdated),
			step: plan.RollAddSuccessor, message: "shard 1: creating a successor with the new spec", after: plan.RequeueWait,
		},
		{
			name: "by replacement: an outdated replica gets an up-to-date successor first",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "b2", outdated),
			step: plan.RollAddSuccessor, message: "shard 1: creating a successor with the new spec", after: plan.RequeueWait,
		},
		{
			name: "by replacement: an outdated primary gets an up-to-date successor first",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "b", outdated),
			step: plan.RollAddSuccessor, message: "shard 1: creating a successor with the new spec", after: plan.RequeueWait,
		},
		{
			name: "by replacement: a successor not in sync yet is waited for",
			fms:  append(plantest.With(plantest.HealthyThreeByOne(), "b2", outdated), b3Syncing),
			step: plan.RollWait, member: "b3", message: "shard 1: waiting for successor b3 to sync", after: plan.RequeueSync,
		},
		{
			name: "by replacement: a shard whose members are all outdated gets all its successors at once",
			fms:  plantest.With(plantest.With(plantest.HealthyThreeByOne(), "b", outdated), "b2", outdated),
			step: plan.RollAddSuccessor, message: "shard 1: creating 2 successors with the new spec", after: plan.RequeueWait,
		},
		{
			name: "by replacement: a successor whose image does not pull blocks the roll, the old members keep serving",
			fms:  append(plantest.With(plantest.HealthyThreeByOne(), "b2", outdated), b3NoImage),
			step: plan.RollBlocked, member: "b3", after: plan.RequeueSteady,
			message: "shard 1: the roll is blocked: successor b3 cannot run (ImagePullBackOff: the pod does not run); the old members keep serving",
		},
		{
			name: "by replacement: once the successor is in sync the outdated replica retires",
			fms:  append(plantest.With(plantest.HealthyThreeByOne(), "b2", outdated), b3),
			step: plan.RollRetire, member: "b2", message: "shard 1: retiring outdated replica b2", after: plan.RequeueFast,
		},
		{
			name: "by replacement: only the primary outdated, the most caught-up replica in sync takes over",
			fms:  append(plantest.With(plantest.HealthyThreeByOne(), "b", outdated), b3), // b2 is 10 bytes behind b3
			step: plan.RollFailover, member: "b3", after: plan.RequeueFast,
		},
		{
			name: "without replicas, volumes or not, a shard rolls by replacement",
			vc: func(s *v1alpha1.ValkeyClusterSpec) {
				volumes(s)
				s.ReplicasPerShard = ptr.To[int32](0)
			},
			fms:  plantest.With(plantest.Without(plantest.HealthyThreeByOne(), "a2", "b2", "c2"), "a", outdated),
			step: plan.RollAddSuccessor, message: "shard 0: creating a successor with the new spec", after: plan.RequeueWait,
		},
		{
			name: "in place: an outdated replica restarts first, on its volume",
			vc:   volumes, fms: plantest.With(plantest.With(plantest.HealthyThreeByOne(), "b", outdated), "b2", outdated),
			step: plan.RollRestart, member: "b2", after: plan.RequeueWait,
		},
		{
			name: "in place: a member authorised a new pod not rebuilt yet is waited for",
			vc:   volumes, fms: plantest.With(plantest.With(plantest.HealthyThreeByOne(), "b", outdated), "b2", func(f *plantest.FakeMember) { f.Restarting = true }),
			step: plan.RollWait, member: "b2", message: "shard 1: waiting for b2 to come back in sync", after: plan.RequeueWait,
		},
		{
			name: "in place: a restarted replica not in sync yet holds the failover back",
			vc:   volumes, fms: plantest.With(plantest.With(plantest.HealthyThreeByOne(), "b", outdated), "b2", func(f *plantest.FakeMember) { f.LinkUp = false }),
			step: plan.RollWait, member: "b2", message: "shard 1: waiting for b2 to come back in sync", after: plan.RequeueWait,
		},
		{
			name: "in place: a restarted replica that crash-loops blocks the roll",
			vc:   volumes,
			fms: plantest.With(plantest.With(plantest.HealthyThreeByOne(), "b", outdated), "b2", func(f *plantest.FakeMember) {
				f.Restarting, f.PodNotReady = true, v1alpha1.ReasonCrashLoop
			}),
			step: plan.RollBlocked, member: "b2", after: plan.RequeueWait,
			message: "shard 1: the roll is blocked: b2 cannot run (CrashLoop: the pod does not run)",
		},
		{
			name: "in place: the replicas up to date, the primary's replica in sync takes over",
			vc:   volumes, fms: plantest.With(plantest.HealthyThreeByOne(), "b", outdated),
			step: plan.RollFailover, member: "b2", after: plan.RequeueFast,
		},
		{
			name: "in place: the old primary, now a replica, restarts last",
			vc:   volumes,
			fms: []plantest.FakeMember{
				{Name: "a", Shard: 0, IP: "10.0.0.1", ID: "A", Slots: "0-5461", Offset: 100},
				{Name: "b", Shard: 1, IP: "10.0.0.2", ID: "B", Primary: "B2", Offset: 100, LinkUp: true, Outdated: true},
				{Name: "c", Shard: 2, IP: "10.0.0.3", ID: "C", Slots: "10923-16383", Offset: 100},
				{Name: "a2", Shard: 0, IP: "10.0.0.4", ID: "A2", Primary: "A", Offset: 100, LinkUp: true},
				{Name: "b2", Shard: 1, IP: "10.0.0.5", ID: "B2", Slots: "5462-10922", Offset: 100},
				{Name: "c2", Shard: 2, IP: "10.0.0.6", ID: "C2", Primary: "C", Offset: 100, LinkUp: true},
			},
			step: plan.RollRestart, member: "b", after: plan.RequeueWait,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := plantest.ClusterFor(t, plantest.Cluster(c.vc), c.fms)
			p := s.PlanRoll()
			var member string
			if p.Member != nil {
				member = p.Member.Name()
			}
			if p.Step != c.step || member != c.member || p.Message != c.message || p.After != c.after {
				t.Errorf("plan = %s %q %q after %s\nwant   %s %q %q after %s",
					rollStepNames[p.Step], member, p.Message, p.After, rollStepNames[c.step], c.member, c.message, c.after)
			}
		})
	}
}

func TestShardsAhead(t *testing.T) {
	outdated := func(f *plantest.FakeMember) { f.Outdated = true }
	all := plantest.With(plantest.With(plantest.With(plantest.With(plantest.With(plantest.With(plantest.HealthyThreeByOne(), "a", outdated), "a2", outdated), "b", outdated), "b2", outdated),
		"c", outdated), "c2", outdated)
	cases := []struct {
		name string
		fms  []plantest.FakeMember
		n    int
		want string
	}{
		{name: "every member outdated: the next two shards get their two successors each", fms: all, n: 2, want: "1:2 2:2"},
		{name: "one shard ahead only", fms: all, n: 1, want: "1:2"},
		{name: "shards with nothing outdated are skipped", fms: plantest.With(plantest.With(plantest.HealthyThreeByOne(), "a", outdated), "c2", outdated), n: 1, want: "2:1"},
		{
			name: "a shard whose successor is already there needs no more",
			fms:  append(plantest.With(plantest.HealthyThreeByOne(), "b2", outdated), plantest.FakeMember{Name: "b3", Shard: 1, IP: "10.0.0.7", ID: "B3", Primary: "B", Joining: true}),
			n:    2, want: "",
		},
		{
			name: "a shard whose successor cannot run gets no more",
			fms: append(plantest.With(plantest.With(plantest.HealthyThreeByOne(), "b2", outdated), "b", outdated),
				plantest.FakeMember{Name: "b3", Shard: 1, IP: "10.0.0.7", Joining: true, Down: true, PodNotReady: v1alpha1.ReasonImagePullBackOff}),
			n: 2, want: "",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := plantest.ClusterFor(t, plantest.Cluster(nil), c.fms)
			var got []string
			for _, a := range s.ShardsAhead(0, c.n) {
				got = append(got, fmt.Sprintf("%d:%d", a.Shard, a.Count))
			}
			if g := strings.Join(got, " "); g != c.want {
				t.Errorf("ahead = %q, want %q", g, c.want)
			}
		})
	}
}
