package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// TestRollEndsWhenTheLastMemberIsBack: an in-place roll authorises a member by raising
// its revision, which makes its spec current at once. Until its pod was rebuilt for that
// revision, the roll is not over: the shard stays the one to roll and the spec does not
// count as applied (Progressing stays True).
func TestRollEndsWhenTheLastMemberIsBack(t *testing.T) {
	vc := cluster(func(s *v1alpha1.ValkeyClusterSpec) {
		s.Shards, s.ReplicasPerShard = 3, ptr.To[int32](1)
	})
	topo := build(t, threeByOne())
	for _, m := range topo.members {
		m.node.Spec = desiredSpec(vc, m.shard())
		m.node.Spec.Revision, m.node.Status.Revision = 1, 1
	}
	s := &scope{vc: vc, topo: topo}
	if sh, ok := s.nextShardToRoll(); ok {
		t.Fatalf("nothing to roll, got shard %d", sh)
	}
	if !s.membersUpToDate() {
		t.Fatal("every member runs the spec's pod: want up to date")
	}

	c2 := topo.byID("C2")
	c2.node.Spec.Revision = 2 // authorised, its pod not rebuilt yet
	if sh, ok := s.nextShardToRoll(); !ok || sh != 2 {
		t.Errorf("next shard to roll = %d %v, want 2 (c2 is restarting)", sh, ok)
	}
	if s.membersUpToDate() {
		t.Error("c2 still runs its old pod: want not up to date")
	}

	c2.node.Status.Revision = 2
	if sh, ok := s.nextShardToRoll(); ok {
		t.Errorf("c2 is back: nothing to roll, got shard %d", sh)
	}
	if !s.membersUpToDate() {
		t.Error("c2 is back: want up to date")
	}
}

var rollStepNames = map[rollStep]string{
	rollNothing: "nothing", rollSettleFirst: "settle first", rollWait: "wait", rollBlocked: "blocked",
	rollAddSuccessor: "add successor", rollRetire: "retire", rollRestart: "restart", rollFailover: "failover",
}

func TestPlanRoll(t *testing.T) {
	volumes := func(s *v1alpha1.ValkeyClusterSpec) {
		s.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("1Gi")}
	}
	outdated := func(f *fakeMember) { f.outdated = true }
	// b3 is a successor of shard 1 created with the spec: in sync, or not yet.
	b3 := fakeMember{name: "b3", shard: 1, ip: "10.0.0.7", id: "B3", primary: "B", offset: 100, linkUp: true, joining: true}
	b3Syncing := b3
	b3Syncing.linkUp = false
	b3NoImage := b3Syncing
	b3NoImage.podNotReady = v1alpha1.ReasonImagePullBackOff
	cases := []struct {
		name    string
		vc      func(*v1alpha1.ValkeyClusterSpec)
		fms     []fakeMember
		step    rollStep
		member  string
		message string
		after   time.Duration
	}{
		{name: "every member runs the spec's pod: nothing to roll", fms: healthyThreeByOne(), step: rollNothing},
		{
			name: "a member of a removed shard is not rolled",
			fms:  append(healthyThreeByOne(), fakeMember{name: "d", shard: 3, ip: "10.0.0.7", id: "D", outdated: true}),
			step: rollNothing,
		},
		{
			name: "an outdated member while a primary is lost: the roll waits for the cluster to settle, the pass goes on",
			fms:  with(with(healthyThreeByOne(), "a", func(f *fakeMember) { f.down = true }), "b2", outdated),
			step: rollSettleFirst, message: "shard 1 needs a roll; waiting for the cluster to settle first",
		},
		{
			name: "an outdated member while a member leaves: the roll waits for the cluster to settle",
			fms:  with(with(healthyThreeByOne(), "c2", func(f *fakeMember) { f.leaving = true }), "b2", outdated),
			step: rollSettleFirst, message: "shard 1 needs a roll; waiting for the cluster to settle first",
		},
		{
			name: "the lowest shard with an outdated member rolls first",
			fms:  with(with(healthyThreeByOne(), "c2", outdated), "b2", outdated),
			step: rollAddSuccessor, message: "shard 1: creating a successor with the new spec", after: requeueWait,
		},
		{
			name: "by replacement: an outdated replica gets an up-to-date successor first",
			fms:  with(healthyThreeByOne(), "b2", outdated),
			step: rollAddSuccessor, message: "shard 1: creating a successor with the new spec", after: requeueWait,
		},
		{
			name: "by replacement: an outdated primary gets an up-to-date successor first",
			fms:  with(healthyThreeByOne(), "b", outdated),
			step: rollAddSuccessor, message: "shard 1: creating a successor with the new spec", after: requeueWait,
		},
		{
			name: "by replacement: a successor not in sync yet is waited for",
			fms:  append(with(healthyThreeByOne(), "b2", outdated), b3Syncing),
			step: rollWait, member: "b3", message: "shard 1: waiting for successor b3 to sync", after: requeueSync,
		},
		{
			name: "by replacement: a shard whose members are all outdated gets all its successors at once",
			fms:  with(with(healthyThreeByOne(), "b", outdated), "b2", outdated),
			step: rollAddSuccessor, message: "shard 1: creating 2 successors with the new spec", after: requeueWait,
		},
		{
			name: "by replacement: a successor whose image does not pull blocks the roll, the old members keep serving",
			fms:  append(with(healthyThreeByOne(), "b2", outdated), b3NoImage),
			step: rollBlocked, member: "b3", after: requeueSteady,
			message: "shard 1: the roll is blocked: successor b3 cannot run (ImagePullBackOff: the pod does not run); the old members keep serving",
		},
		{
			name: "by replacement: once the successor is in sync the outdated replica retires",
			fms:  append(with(healthyThreeByOne(), "b2", outdated), b3),
			step: rollRetire, member: "b2", message: "shard 1: retiring outdated replica b2", after: requeueFast,
		},
		{
			name: "by replacement: only the primary outdated, the most caught-up replica in sync takes over",
			fms:  append(with(healthyThreeByOne(), "b", outdated), b3), // b2 is 10 bytes behind b3
			step: rollFailover, member: "b3", after: requeueFast,
		},
		{
			name: "without replicas, volumes or not, a shard rolls by replacement",
			vc: func(s *v1alpha1.ValkeyClusterSpec) {
				volumes(s)
				s.ReplicasPerShard = ptr.To[int32](0)
			},
			fms:  with(without(healthyThreeByOne(), "a2", "b2", "c2"), "a", outdated),
			step: rollAddSuccessor, message: "shard 0: creating a successor with the new spec", after: requeueWait,
		},
		{
			name: "in place: an outdated replica restarts first, on its volume",
			vc:   volumes, fms: with(with(healthyThreeByOne(), "b", outdated), "b2", outdated),
			step: rollRestart, member: "b2", after: requeueWait,
		},
		{
			name: "in place: a member authorised a new pod not rebuilt yet is waited for",
			vc:   volumes, fms: with(with(healthyThreeByOne(), "b", outdated), "b2", func(f *fakeMember) { f.restarting = true }),
			step: rollWait, member: "b2", message: "shard 1: waiting for b2 to come back in sync", after: requeueWait,
		},
		{
			name: "in place: a restarted replica not in sync yet holds the failover back",
			vc:   volumes, fms: with(with(healthyThreeByOne(), "b", outdated), "b2", func(f *fakeMember) { f.linkUp = false }),
			step: rollWait, member: "b2", message: "shard 1: waiting for b2 to come back in sync", after: requeueWait,
		},
		{
			name: "in place: a restarted replica that crash-loops blocks the roll",
			vc:   volumes,
			fms: with(with(healthyThreeByOne(), "b", outdated), "b2", func(f *fakeMember) {
				f.restarting, f.podNotReady = true, v1alpha1.ReasonCrashLoop
			}),
			step: rollBlocked, member: "b2", after: requeueWait,
			message: "shard 1: the roll is blocked: b2 cannot run (CrashLoop: the pod does not run)",
		},
		{
			name: "in place: the replicas up to date, the primary's replica in sync takes over",
			vc:   volumes, fms: with(healthyThreeByOne(), "b", outdated),
			step: rollFailover, member: "b2", after: requeueFast,
		},
		{
			name: "in place: the old primary, now a replica, restarts last",
			vc:   volumes,
			fms: []fakeMember{
				{name: "a", shard: 0, ip: "10.0.0.1", id: "A", slots: "0-5461", offset: 100},
				{name: "b", shard: 1, ip: "10.0.0.2", id: "B", primary: "B2", offset: 100, linkUp: true, outdated: true},
				{name: "c", shard: 2, ip: "10.0.0.3", id: "C", slots: "10923-16383", offset: 100},
				{name: "a2", shard: 0, ip: "10.0.0.4", id: "A2", primary: "A", offset: 100, linkUp: true},
				{name: "b2", shard: 1, ip: "10.0.0.5", id: "B2", slots: "5462-10922", offset: 100},
				{name: "c2", shard: 2, ip: "10.0.0.6", id: "C2", primary: "C", offset: 100, linkUp: true},
			},
			step: rollRestart, member: "b", after: requeueWait,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := scopeFor(t, cluster(c.vc), c.fms)
			p := s.planRoll()
			var member string
			if p.member != nil {
				member = p.member.name()
			}
			if p.step != c.step || member != c.member || p.message != c.message || p.after != c.after {
				t.Errorf("plan = %s %q %q after %s\nwant   %s %q %q after %s",
					rollStepNames[p.step], member, p.message, p.after, rollStepNames[c.step], c.member, c.message, c.after)
			}
		})
	}
}

func TestShardsAhead(t *testing.T) {
	outdated := func(f *fakeMember) { f.outdated = true }
	all := with(with(with(with(with(with(healthyThreeByOne(), "a", outdated), "a2", outdated), "b", outdated), "b2", outdated),
		"c", outdated), "c2", outdated)
	cases := []struct {
		name string
		fms  []fakeMember
		n    int
		want string
	}{
		{name: "every member outdated: the next two shards get their two successors each", fms: all, n: 2, want: "1:2 2:2"},
		{name: "one shard ahead only", fms: all, n: 1, want: "1:2"},
		{name: "shards with nothing outdated are skipped", fms: with(with(healthyThreeByOne(), "a", outdated), "c2", outdated), n: 1, want: "2:1"},
		{
			name: "a shard whose successor is already there needs no more",
			fms:  append(with(healthyThreeByOne(), "b2", outdated), fakeMember{name: "b3", shard: 1, ip: "10.0.0.7", id: "B3", primary: "B", joining: true}),
			n:    2, want: "",
		},
		{
			name: "a shard whose successor cannot run gets no more",
			fms: append(with(with(healthyThreeByOne(), "b2", outdated), "b", outdated),
				fakeMember{name: "b3", shard: 1, ip: "10.0.0.7", joining: true, down: true, podNotReady: v1alpha1.ReasonImagePullBackOff}),
			n: 2, want: "",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := scopeFor(t, cluster(nil), c.fms)
			var got []string
			for _, a := range s.shardsAhead(0, c.n) {
				got = append(got, fmt.Sprintf("%d:%d", a.shard, a.count))
			}
			if g := strings.Join(got, " "); g != c.want {
				t.Errorf("ahead = %q, want %q", g, c.want)
			}
		})
	}
}
