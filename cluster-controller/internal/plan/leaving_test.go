package plan_test

import (
	"testing"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
)

func TestHoldDeparture(t *testing.T) {
	leavingDown := func(f *plantest.FakeMember) { f.Leaving, f.Down = true, true }
	podType := func(s *v1alpha1.ValkeyClusterSpec) { s.WorkloadType = v1alpha1.WorkloadPod }
	cases := []struct {
		name   string
		vc     func(*v1alpha1.ValkeyClusterSpec)
		fms    []plantest.FakeMember
		member string
		want   string // the reason, "" when it may be forgotten now
	}{
		{
			name: "a leaving replica that is down holds nothing: forgotten", fms: plantest.With(plantest.HealthyThreeByOne(), "a2", leavingDown),
			member: "a2", want: "",
		},
		{
			name: "a leaving primary that is down and still followed: its replica takes over first",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", leavingDown), member: "a", want: v1alpha1.ReasonFailingOver,
		},
		{
			name: "a leaving primary that is down, with slots and no replica: it waits for its server to come back",
			fms:  plantest.With(plantest.Without(plantest.HealthyThreeByOne(), "a2"), "a", leavingDown), member: "a", want: v1alpha1.ReasonWaitingForMember,
		},
		{
			name: "the same with a bare pod gone for good: its data went with it, so it is forgotten",
			vc:   podType,
			fms: plantest.With(plantest.With(plantest.Without(plantest.HealthyThreeByOne(), "a2"), "a", leavingDown), "a", func(f *plantest.FakeMember) {
				f.PodNotReady = v1alpha1.ReasonPodMissing
			}),
			member: "a", want: "",
		},
		{
			name: "a leaving primary that is down and holds no slots (scaled in): forgotten",
			fms: plantest.With(plantest.Without(plantest.HealthyThreeByOne(), "a2"), "a", func(f *plantest.FakeMember) {
				f.Leaving, f.Down, f.Slots = true, true, ""
			}),
			member: "a", want: "",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := plantest.ClusterFor(t, plantest.Cluster(c.vc), c.fms)
			reason, msg := s.HoldDeparture(plantest.MemberNamed(t, s.Topo, c.member))
			if reason != c.want {
				t.Errorf("reason = %q (%s), want %q", reason, msg, c.want)
			}
		})
	}
}
