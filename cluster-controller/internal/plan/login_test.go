package plan_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
)

var loginStepNames = map[plan.LoginStep]string{
	plan.LoginNothing: "nothing", plan.LoginWait: "wait", plan.LoginFailover: "failover", plan.LoginRestart: "restart",
}

func TestPlanLoginRecovery(t *testing.T) {
	locked := func(f *plantest.FakeMember) { f.Locked = true }
	noReplicas := func(s *v1alpha1.ValkeyClusterSpec) { s.ReplicasPerShard = ptr.To[int32](0) }
	// twoReplicas is shard 0 of a 1x2 cluster: a serves, a2 and a3 follow it.
	twoReplicas := []plantest.FakeMember{
		{Name: "a", Shard: 0, IP: "10.0.0.1", ID: "A", Slots: "0-16383", Offset: 100},
		{Name: "a2", Shard: 0, IP: "10.0.0.2", ID: "A2", Primary: "A", Offset: 100, LinkUp: true},
		{Name: "a3", Shard: 0, IP: "10.0.0.3", ID: "A3", Primary: "A", Offset: 100, LinkUp: true},
	}
	oneShard := func(s *v1alpha1.ValkeyClusterSpec) { s.Shards, s.ReplicasPerShard = 1, ptr.To[int32](2) }
	cases := []struct {
		name    string
		vc      func(*v1alpha1.ValkeyClusterSpec)
		fms     []plantest.FakeMember
		mod     func(t *testing.T, s *plan.Cluster)
		step    plan.LoginStep
		member  string
		replica string
		message string
		after   time.Duration
	}{
		{name: "every member accepts the operator's login: nothing to do", fms: plantest.HealthyThreeByOne(), step: plan.LoginNothing},
		{
			name: "a replica refuses: it restarts at once",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "b2", locked),
			step: plan.LoginRestart, member: "b2", after: plan.RequeueWait,
		},
		{
			name: "a primary refuses: its replica in sync takes over first, read from the replica's side",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "b", locked),
			step: plan.LoginFailover, member: "b", replica: "b2", after: plan.RequeueFast,
		},
		{
			name: "a primary refuses and its replica's link is down: it waits, nothing restarts",
			fms:  plantest.With(plantest.ThreeByOne(), "c", locked),
			step: plan.LoginWait, member: "c", after: plan.RequeueWait,
			message: "c refuses the operator's login: waiting for a replica of shard 2 in sync to take over from c",
		},
		{
			name: "the old primary, now a replica as the others see it, restarts",
			fms: []plantest.FakeMember{
				{Name: "a", Shard: 0, IP: "10.0.0.1", ID: "A", Slots: "0-5461", Offset: 100},
				{Name: "b", Shard: 1, IP: "10.0.0.2", ID: "B", Primary: "B2", Offset: 100, LinkUp: true, Locked: true},
				{Name: "c", Shard: 2, IP: "10.0.0.3", ID: "C", Slots: "10923-16383", Offset: 100},
				{Name: "a2", Shard: 0, IP: "10.0.0.4", ID: "A2", Primary: "A", Offset: 100, LinkUp: true},
				{Name: "b2", Shard: 1, IP: "10.0.0.5", ID: "B2", Slots: "5462-10922", Offset: 100},
				{Name: "c2", Shard: 2, IP: "10.0.0.6", ID: "C2", Primary: "C", Offset: 100, LinkUp: true},
			},
			step: plan.LoginRestart, member: "b", after: plan.RequeueWait,
		},
		{
			name: "a failover asked already is waited for",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "b", locked),
			mod: func(t *testing.T, s *plan.Cluster) {
				plantest.MemberNamed(t, s.Topo, "b2").Node.Status.Failover = &v1alpha1.MemberFailover{
					Kind: v1alpha1.FailoverPlanned, RequestedAt: metav1.NewMicroTime(plantest.T0.Add(-time.Second))}
			},
			step: plan.LoginWait, member: "b2", after: plan.RequeueFast,
			message: "b refuses the operator's login: waiting for b2 to take over shard 1 from b",
		},
		{
			name: "one restart at a time: a member restarting is waited for",
			fms:  plantest.With(plantest.With(plantest.HealthyThreeByOne(), "b2", locked), "a2", func(f *plantest.FakeMember) { f.Restarting = true }),
			step: plan.LoginWait, member: "a2", after: plan.RequeueWait,
			message: "b2 refuses the operator's login: waiting for a2 to restart first",
		},
		{
			name: "at most one restart per period: a member restarted 2 minutes ago waits 8 more",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "b2", locked),
			mod: func(t *testing.T, s *plan.Cluster) {
				plantest.MemberNamed(t, s.Topo, "b2").Node.Spec.RestartedAt = plantest.T0.Add(-2 * time.Minute).Format(time.RFC3339)
			},
			step: plan.LoginWait, member: "b2", after: 8 * time.Minute,
			message: "b2 refuses the operator's login: b2 was restarted at 2026-11-29T11:58:00Z; it is not restarted again before 2026-11-29T12:08:00Z",
		},
		{
			name: "a refusal reported 4 s ago is acted on after 10 s",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "b2", locked),
			mod: func(t *testing.T, s *plan.Cluster) {
				c := plan.LoginRefused(plantest.MemberNamed(t, s.Topo, "b2"))
				c.LastTransitionTime = metav1.NewTime(plantest.T0.Add(-4 * time.Second))
			},
			step: plan.LoginWait, member: "b2", after: 6 * time.Second,
			message: "b2 refuses the operator's login: reported at 2026-11-29T11:59:56Z, acted on once it has held for 10s",
		},
		{
			name: "a restart older than the period does not hold it",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "b2", locked),
			mod: func(t *testing.T, s *plan.Cluster) {
				plantest.MemberNamed(t, s.Topo, "b2").Node.Spec.RestartedAt = plantest.T0.Add(-11 * time.Minute).Format(time.RFC3339)
			},
			step: plan.LoginRestart, member: "b2", after: plan.RequeueWait,
		},
		{
			name: "a replica waits while another replica of its shard is not in sync",
			vc:   oneShard, fms: plantest.With(plantest.With(twoReplicas, "a2", locked), "a3", func(f *plantest.FakeMember) { f.LinkUp = false }),
			step: plan.LoginWait, member: "a3", after: plan.RequeueWait,
			message: "a2 refuses the operator's login: waiting for a3 to be back in sync before a2 restarts",
		},
		{
			name: "a primary and a replica refuse: the replica's restart does not wait for the primary, whose only other replica is locked",
			fms:  plantest.With(plantest.With(plantest.HealthyThreeByOne(), "b", locked), "b2", locked),
			step: plan.LoginRestart, member: "b2", after: plan.RequeueWait,
		},
		{
			name: "a primary refuses and another of its replicas is in sync: the primary hands over first",
			vc:   oneShard, fms: plantest.With(plantest.With(twoReplicas, "a", locked), "a2", locked),
			step: plan.LoginFailover, member: "a", replica: "a3", after: plan.RequeueFast,
		},
		{
			name: "no replicas and no volume: the primary is not restarted",
			vc:   noReplicas, fms: plantest.With(plantest.Without(plantest.HealthyThreeByOne(), "a2", "b2", "c2"), "b", locked),
			step: plan.LoginWait, member: "b", after: plan.RequeueSteady,
			message: "b refuses the operator's login: b serves shard 1 alone and keeps its data in memory only: " +
				"a restart would lose the shard's data, so the operator does not restart it",
		},
		{
			name: "no replicas, with a volume: the primary restarts on it",
			vc: func(s *v1alpha1.ValkeyClusterSpec) {
				noReplicas(s)
				s.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("1Gi")}
			},
			fms:  plantest.With(plantest.Without(plantest.HealthyThreeByOne(), "a2", "b2", "c2"), "b", locked),
			step: plan.LoginRestart, member: "b", after: plan.RequeueWait,
		},
		{
			name: "a member nobody that answers knows: it is not restarted blind",
			fms:  plantest.With(plantest.With(plantest.HealthyThreeByOne(), "b", locked), "b2", func(f *plantest.FakeMember) { f.Down = true }),
			mod:  func(_ *testing.T, s *plan.Cluster) { plantest.Unknown(s.Topo, "B") },
			step: plan.LoginWait, member: "b", after: plan.RequeueWait,
			message: "b refuses the operator's login: no member that answers knows whether b serves slots",
		},
		{
			name: "a leaving member is left to its retirement",
			fms:  plantest.With(plantest.With(plantest.HealthyThreeByOne(), "b2", locked), "b2", func(f *plantest.FakeMember) { f.Leaving = true }),
			step: plan.LoginNothing,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := plantest.ClusterFor(t, plantest.Cluster(c.vc), c.fms)
			if c.mod != nil {
				c.mod(t, s)
			}
			p := s.PlanLoginRecovery(10 * time.Minute)
			var member, replica string
			if p.Member != nil {
				member = p.Member.Name()
			}
			if p.Replica != nil {
				replica = p.Replica.Name()
			}
			if p.Step != c.step || member != c.member || replica != c.replica || p.Message != c.message || p.After != c.after {
				t.Errorf("plan = %s %q %q %q after %s\nwant   %s %q %q %q after %s",
					loginStepNames[p.Step], member, replica, p.Message, p.After,
					loginStepNames[c.step], c.member, c.replica, c.message, c.after)
			}
		})
	}
}
