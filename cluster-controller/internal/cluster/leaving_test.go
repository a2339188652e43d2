package cluster

import (
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestHoldDeparture(t *testing.T) {
	leavingDown := func(f *fakeMember) { f.leaving, f.down = true, true }
	podType := func(s *v1alpha1.ValkeyClusterSpec) { s.WorkloadType = v1alpha1.WorkloadPod }
	cases := []struct {
		name   string
		vc     func(*v1alpha1.ValkeyClusterSpec)
		fms    []fakeMember
		member string
		want   string // the reason, "" when it may be forgotten now
	}{
		{
			name: "a leaving replica that is down holds nothing: forgotten", fms: with(healthyThreeByOne(), "a2", leavingDown),
			member: "a2", want: "",
		},
		{
			name: "a leaving primary that is down and still followed: its replica takes over first",
			fms:  with(healthyThreeByOne(), "a", leavingDown), member: "a", want: v1alpha1.ReasonFailingOver,
		},
		{
			name: "a leaving primary that is down, with slots and no replica: it waits for its server to come back",
			fms:  with(without(healthyThreeByOne(), "a2"), "a", leavingDown), member: "a", want: v1alpha1.ReasonWaitingForMember,
		},
		{
			name: "the same with a bare pod gone for good: its data went with it, so it is forgotten",
			vc:   podType,
			fms: with(with(without(healthyThreeByOne(), "a2"), "a", leavingDown), "a", func(f *fakeMember) {
				f.podNotReady = v1alpha1.ReasonPodMissing
			}),
			member: "a", want: "",
		},
		{
			name: "a leaving primary that is down and holds no slots (scaled in): forgotten",
			fms: with(without(healthyThreeByOne(), "a2"), "a", func(f *fakeMember) {
				f.leaving, f.down, f.slots = true, true, ""
			}),
			member: "a", want: "",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := scopeFor(t, cluster(c.vc), c.fms)
			reason, msg := s.holdDeparture(memberNamed(t, s.topo, c.member))
			if reason != c.want {
				t.Errorf("reason = %q (%s), want %q", reason, msg, c.want)
			}
		})
	}
}

func TestInUse(t *testing.T) {
	conns := []valkey.ClientConn{
		{User: "app", Flags: "N", Idle: 0, Cmd: "set"},                         // in use
		{User: "app", Flags: "N", Idle: 3 * time.Second, Cmd: "get"},           // idle since before
		{User: "app", Flags: "N", Idle: 0, Cmd: "ping"},                        // a library's health check
		{User: "app", Flags: "N", Idle: 0, Cmd: "cluster|slots"},               // a topology refresh
		{User: "_operator", Flags: "N", Idle: 0, Cmd: "client|list"},           // the operator itself
		{User: "_replication", Flags: "S", Idle: 0, Cmd: "replconf"},           // a replica's link
		{User: "default", Flags: "M", Idle: 0, Cmd: "ping"},                    // its own primary's link
		{User: "reader", Flags: "r", Idle: 500 * time.Millisecond, Cmd: "get"}, // in use
	}
	if got := inUse(conns, time.Second); got != 2 {
		t.Errorf("%d connections in use, want 2 (the set and the recent get)", got)
	}
}
