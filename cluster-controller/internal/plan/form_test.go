package plan_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// TestStuckCause: the cluster names what keeps its members from starting, from their
// own PodReady and StorageReady conditions: the most common cause, how many members
// share it, and one of their messages.
func TestStuckCause(t *testing.T) {
	cond := func(typ, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	mk := func(name string, cs ...metav1.Condition) *plan.Member {
		m := &plan.Member{Node: &v1alpha1.ValkeyNode{}}
		m.Node.Name = name
		m.Node.Status.Conditions = cs
		return m
	}
	pull := cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonImagePullBackOff, `pod a-0 cannot pull image 10.99.0.1:1/nope:1 of container server: Back-off pulling image "10.99.0.1:1/nope:1"`)
	for _, tc := range []struct {
		name    string
		members []*plan.Member
		reason  string
		msg     string
	}{
		{"nothing blocked", []*plan.Member{mk("a", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonPodPending, "starting"))}, "", ""},
		{"six members cannot pull the image", []*plan.Member{mk("a", pull), mk("b", pull), mk("c", pull), mk("d", pull), mk("e", pull), mk("f", pull)},
			v1alpha1.ReasonImagePullBackOff, "ImagePullBackOff: 6 members cannot run (a, b, c, d, e, f): pod a-0 cannot pull image 10.99.0.1:1/nope:1"},
		{"the missing StorageClass, behind the pods it keeps Pending", []*plan.Member{mk("a",
			cond(v1alpha1.ConditionStorageReady, v1alpha1.ReasonStorageClassNotFound, "StorageClass gp3 not found"),
			cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonPodUnschedulable, "pod has unbound immediate PersistentVolumeClaims"))},
			v1alpha1.ReasonStorageClassNotFound, "StorageClassNotFound: 1 member cannot run (a): StorageClass gp3 not found"},
		{"a server that is not Valkey 8.0+", []*plan.Member{
			mk("a", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonUnsupportedServer, "this image's valkey-server is Redis 7.0.15; the operator runs Valkey 8.0 or later")),
			mk("b", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonUnsupportedServer, "this image's valkey-server is Redis 7.0.15; the operator runs Valkey 8.0 or later"))},
			v1alpha1.ReasonUnsupportedServer, "UnsupportedServer: 2 members cannot run (a, b): this image's valkey-server is Redis 7.0.15; the operator runs Valkey 8.0 or later"},
		{"a quoted secret in a member's message is not repeated", []*plan.Member{
			mk("a", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonCrashLoop, ">>> 'masterauth s3cret'"))},
			v1alpha1.ReasonCrashLoop, "CrashLoop: 1 member cannot run (a): >>> 'masterauth <redacted>'"},
		{"the cause most members share", []*plan.Member{
			mk("a", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonCrashLoop, "Bad directive")),
			mk("b", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonPriorityClassNotFound, "PriorityClass high not found")),
			mk("c", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonPriorityClassNotFound, "PriorityClass high not found"))},
			v1alpha1.ReasonPriorityClassNotFound, "PriorityClassNotFound: 2 members cannot run (b, c): PriorityClass high not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg, ok := plan.StuckCause(tc.members)
			if ok != (tc.reason != "") || reason != tc.reason || !strings.HasPrefix(msg, tc.msg) {
				t.Errorf("stuckCause = %v %q %q, want %q %q", ok, reason, msg, tc.reason, tc.msg)
			}
		})
	}
}

// TestPlanEmpty: the slots of a cluster whose answering servers serve none are given
// out only on positive evidence that nothing is there to lose, and as lost data only for
// a cluster that has been Ready.
func TestPlanEmpty(t *testing.T) {
	// fresh is a 3x1 cluster of new servers: none serves a slot, none holds a key.
	fresh := func() []plantest.FakeMember {
		var out []plantest.FakeMember
		for _, f := range plantest.HealthyThreeByOne() {
			f.Slots, f.Primary, f.LinkUp, f.Joining = "", "", false, true
			out = append(out, f)
		}
		return out
	}
	// restarted is fresh after the cluster was Ready: every member active before.
	restarted := func() []plantest.FakeMember {
		var out []plantest.FakeMember
		for _, f := range fresh() {
			f.Joining = false
			out = append(out, f)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		fms   []plantest.FakeMember
		ready bool // the cluster has been Ready
		want  string
	}{
		{name: "a new cluster whose servers all answer: the slots are assigned as new", fms: fresh(),
			want: "assign a, b, c"},
		{name: "a new cluster with a member slow to answer: wait, it may already hold slots", fms: plantest.With(fresh(), "a2", func(f *plantest.FakeMember) { f.Down = true }),
			want: "wait WaitingForPods: waiting for the servers of a2 before assigning slots"},
		{name: "during formation the primaries given slots went silent and their replicas do not know it yet: no second assignment",
			fms:  plantest.With(plantest.With(plantest.With(fresh(), "a", func(f *plantest.FakeMember) { f.Down = true }), "b", func(f *plantest.FakeMember) { f.Down = true }), "c", func(f *plantest.FakeMember) { f.Down = true }),
			want: "wait WaitingForPods: waiting for the servers of a, b, c before assigning slots"},
		{name: "members active before but a cluster never Ready: assigned as new, no data was served", fms: restarted(),
			want: "assign a, b, c"},
		{name: "a cluster that was Ready, every server back empty: the slots are given again, the data is lost", fms: restarted(), ready: true,
			want: "lost a, b, c"},
		{name: "a cluster that was Ready with a member that does not answer: wait for it",
			fms: plantest.With(restarted(), "b2", func(f *plantest.FakeMember) { f.Down = true }), ready: true,
			want: "wait SlotsUncovered: no server that answers serves a slot; waiting for b2 to answer before concluding that the data is lost"},
		{name: "a cluster that was Ready with a member holding keys: no slot is given while its data has no place",
			fms: plantest.With(restarted(), "c2", func(f *plantest.FakeMember) { f.Keys = 40 }), ready: true,
			want: "wait SlotsUncovered: no server serves a slot, but c2 (40 keys) hold data: the slots are not assigned again while a member holds keys no slot map places"},
		{name: "a leaving member that does not answer does not hold the decision",
			fms: plantest.With(restarted(), "c2", func(f *plantest.FakeMember) { f.Down, f.Leaving = true, true }), ready: true,
			want: "lost a, b, c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := plantest.ClusterFor(t, plantest.Cluster(nil), tc.fms)
			if tc.ready {
				plantest.WasReady(s)
			}
			p := s.PlanEmpty()
			got := "wait " + p.Reason + ": " + p.Wait
			if p.Wait == "" {
				names := make([]string, len(p.Primaries))
				for i, m := range p.Primaries {
					names[i] = m.Name()
				}
				got = "assign " + strings.Join(names, ", ")
				if p.Lost {
					got = "lost " + strings.Join(names, ", ")
				}
			}
			if got != tc.want {
				t.Errorf("planEmpty:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestEvenSlots(t *testing.T) {
	for _, n := range []int32{1, 2, 3, 5, 6} {
		total := 0
		for s := int32(0); s < n; s++ {
			total += valkey.CountSlots(plan.EvenSlotsFor(n, s))
		}
		if total != plan.SlotCount {
			t.Errorf("%d shards cover %d slots", n, total)
		}
	}
	if got := fmt.Sprint(plan.EvenSlotsFor(3, 0)); got != "[0-5461]" {
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
	s := &plan.Cluster{VC: plantest.Cluster(nil), Topo: topo}
	if c := s.Candidate(0); c != nil {
		t.Fatalf("candidate of a shard in failover = %s, want none", c.Name())
	}
	if c := s.Candidate(1); c == nil || c.Name() != "b" {
		t.Fatalf("candidate of shard 1 = %v", c)
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
	got := plan.Meetings(topo.Reachable())
	if len(got) != 5 {
		t.Fatalf("%d meetings, want 5 (everyone meets c2)", len(got))
	}
	for _, p := range got {
		if p[1] != c2 || p[0] == c2 {
			t.Errorf("meeting %s -> %s, want every other member -> c2", p[0].Name(), p[1].Name())
		}
	}
	if n := len(plan.Meetings(plantest.Build(t, plantest.ThreeByOne()).Reachable())); n != 0 {
		t.Errorf("a formed cluster needs %d meetings, want none", n)
	}
}
