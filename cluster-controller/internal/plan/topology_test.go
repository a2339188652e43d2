package plan_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestPartitionedMembers(t *testing.T) {
	silentA := func(f *plantest.FakeMember) { f.Down, f.Silent = true, time.Minute }
	cases := []struct {
		name string
		fms  []plantest.FakeMember
		want string
	}{
		{name: "a dead member, flagged by every member", fms: plantest.With(plantest.HealthyThreeByOne(), "a", silentA), want: ""},
		{
			name: "flagged by its replica, reached by the others: a partition",
			fms: plantest.With(plantest.With(plantest.HealthyThreeByOne(), "a", silentA), "a", func(f *plantest.FakeMember) {
				f.SeenBy = []string{"b", "b2", "c", "c2"}
			}),
			want: "the operator cannot reach some members that other members still reach (a network partition, not a " +
				"dead server: no failover is forced): a is reached by b, c, b2, c2",
		},
		{
			// Right after a crash its replica flags it first; the kubelet has already said.
			name: "flagged by its replica, reached by the others, its server exited: not a partition",
			fms: plantest.With(plantest.With(plantest.HealthyThreeByOne(), "a", silentA), "a", func(f *plantest.FakeMember) {
				f.SeenBy = []string{"b", "b2", "c", "c2"}
				f.ServerDown = true
			}),
			want: "",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topo := plantest.Build(t, c.fms)
			if got := topo.Partitioned([]*plan.Member{plantest.MemberNamed(t, topo, "a")}); got != c.want {
				t.Errorf("partitioned = %q\nwant          %q", got, c.want)
			}
		})
	}
}

func TestPrimaryOfAndSync(t *testing.T) {
	topo := plantest.Build(t, plantest.ThreeByOne())
	for sh, want := range []string{"a", "b", "c"} {
		if p := topo.PrimaryOf(int32(sh)); p == nil || p.Name() != want {
			t.Errorf("primary of shard %d = %v, want %s", sh, p, want)
		}
	}
	if !plan.Synced(topo.ByID("A2"), topo.ByID("A")) {
		t.Error("a2 is linked and caught up: want synced")
	}
	if !plan.Synced(topo.ByID("B2"), topo.ByID("B")) {
		t.Error("b2 lags by 10 bytes: still synced")
	}
	if plan.Synced(topo.ByID("C2"), topo.ByID("C")) {
		t.Error("c2's link is down: want not synced")
	}
	if got := topo.CoveredSlots(); got != plan.SlotCount {
		t.Errorf("covered = %d", got)
	}
	if !topo.Formed() {
		t.Error("every member knows every other: want formed")
	}
}

func TestPrimaryOfNewShardIsTheOneItsReplicasFollow(t *testing.T) {
	fms := append(plantest.ThreeByOne(),
		plantest.FakeMember{Name: "d", Shard: 3, IP: "10.0.0.7", ID: "D"},
		plantest.FakeMember{Name: "d2", Shard: 3, IP: "10.0.0.8", ID: "D2", Primary: "D", LinkUp: true},
	)
	topo := plantest.Build(t, fms)
	if p := topo.PrimaryOf(3); p == nil || p.Name() != "d" {
		t.Fatalf("primary of new shard = %v, want d", p)
	}
}

func TestStrangersAndFollowed(t *testing.T) {
	dead := valkey.ClusterNode{ID: "OLD", IP: "10.0.0.99", Port: 6379, Primary: true, Fail: true}
	topo := plantest.Build(t, plantest.ThreeByOne(), dead)
	got := topo.Strangers()
	if len(got) != 1 || got[0] != "OLD" {
		t.Fatalf("strangers = %v, want [OLD]", got)
	}
	if topo.Followed("OLD") {
		t.Error("nobody follows OLD")
	}
	if !topo.Followed("A") {
		t.Error("a2 follows A")
	}
}

func TestStrangerAtTheAddressOfASilentMemberIsKept(t *testing.T) {
	fms := plantest.ThreeByOne()
	fms[5].Down = true // c2 does not answer
	fms[5].ID = ""     // and its ID was never recorded
	other := valkey.ClusterNode{ID: "C2REAL", IP: "10.0.0.6", Port: 6379, Replica: true, PrimaryID: "C"}
	topo := plantest.Build(t, fms, other)
	if !topo.MayBeMember("C2REAL") {
		t.Fatal("a node at the address of a silent member may be that member")
	}
}

func TestLostPrimaries(t *testing.T) {
	fms := plantest.ThreeByOne()
	fms[0].Down = true // a (primary of shard 0) is gone
	topo := plantest.Build(t, fms)
	lost := topo.LostPrimaries()
	if len(lost) != 1 || lost[0].ID != "A" || len(lost[0].Replicas) != 1 || lost[0].Replicas[0].Name() != "a2" {
		t.Fatalf("lost = %+v", lost)
	}
	if lost[0].SilentFor < 59*time.Second {
		t.Errorf("silentFor = %s, want about a minute", lost[0].SilentFor)
	}
}

func TestOwnedSlotsPrefersTheOwnersOwnReport(t *testing.T) {
	topo := plantest.Build(t, plantest.ThreeByOne())
	owned := topo.OwnedSlots()
	if got := valkey.FormatRanges(owned["A"]); got != "0-5461" {
		t.Errorf("A owns %s", got)
	}
	if len(owned) != 3 {
		t.Errorf("owners = %d, want 3", len(owned))
	}
}

// TestVotersNotReaching: a2's pod came back at a new address that b has not learnt yet,
// and c's link to it is down: only a (its own primary, linked) would get its vote to a2.
func TestVotersNotReaching(t *testing.T) {
	topo := plantest.Build(t, plantest.ThreeByOne())
	a2 := topo.ByID("A2")
	if got := topo.VotersNotReaching(a2); len(got) != 0 {
		t.Fatalf("every primary reaches a2: got %v", got)
	}
	for i, n := range topo.ByID("B").View {
		if n.ID == "A2" {
			topo.ByID("B").View[i].IP = "10.0.0.99"
		}
	}
	for i, n := range topo.ByID("C").View {
		if n.ID == "A2" {
			topo.ByID("C").View[i].Connected = false
		}
	}
	if got := fmt.Sprint(topo.VotersNotReaching(a2)); got != "[b c]" {
		t.Errorf("voters not reaching a2 = %s, want [b c]", got)
	}
}

// TestSyncedNeedsThePrimaryStreaming: a replica that says its link is up is not in sync
// until its primary lists it online with an acknowledged offset (after a full sync, the
// first acknowledgement starts the stream).
func TestSyncedNeedsThePrimaryStreaming(t *testing.T) {
	topo := plantest.Build(t, plantest.ThreeByOne())
	a, a2 := topo.ByID("A"), topo.ByID("A2")
	if !plan.Synced(a2, a) {
		t.Fatal("a2 is linked, caught up and listed online: want synced")
	}
	a.Repl.Replicas[0].State = "wait_bgsave"
	if plan.Synced(a2, a) {
		t.Error("a's stream to a2 has not started: want not synced")
	}
	a.Repl.Replicas[0].State, a.Repl.Replicas[0].Offset = "online", 0
	a2.Repl.Offset = a.Repl.Offset - 100
	if plan.Synced(a2, a) {
		t.Error("a2 has not acknowledged anything yet and a holds writes back: want not synced")
	}
	// A primary with no writes since the sync sends a PING every 10 s: its offset moves
	// past the acknowledged 0 until the replica's next acknowledgement, a second later,
	// while the replica has already applied it.
	a2.Repl.Offset = a.Repl.Offset
	if !plan.Synced(a2, a) {
		t.Error("a2 has all a wrote (a PING), its acknowledgement not sent yet: want synced")
	}
	a.Repl.Offset, a2.Repl.Offset = 0, 0
	if !plan.Synced(a2, a) {
		t.Error("a new primary that wrote nothing holds nothing back: want synced")
	}
	a.Repl.Replicas = nil
	if plan.Synced(a2, a) {
		t.Error("a does not list a2: want not synced")
	}
}

// TestOpenSlotsArePrimaries: a slot state left on a replica (copied from its primary,
// which closed it since) does not count as an open slot, which would hold every phase;
// a primary's does.
func TestOpenSlotsArePrimaries(t *testing.T) {
	topo := plantest.Build(t, plantest.HealthyThreeByOne())
	if topo.OpenSlots() {
		t.Fatal("a healthy cluster has open slots")
	}
	replica := plantest.MemberNamed(t, topo, "a2")
	replica.Self.Importing = map[int]string{4097: "B"}
	if topo.OpenSlots() {
		t.Error("a replica's stale importing state counts as an open slot")
	}
	primary := plantest.MemberNamed(t, topo, "b")
	primary.Self.Migrating = map[int]string{4097: "C"}
	if !topo.OpenSlots() {
		t.Error("a primary's migrating slot does not count")
	}
}

func TestSlotsUnsettled(t *testing.T) {
	settled := plantest.Build(t, plantest.HealthyThreeByOne())
	if got := settled.SlotsUnsettled(); len(got) != 0 {
		t.Errorf("every member names the owners the owners report: want none, got %v", got)
	}

	// Slot 5461 moved from a to b; b2 has not heard of it yet.
	fms := plantest.HealthyThreeByOne()
	fms[0].Slots, fms[1].Slots = "0-5460", "5461-10922"
	moved := plantest.Build(t, fms)
	plantest.SetView(t, moved, "b2", "A", "0-5461")
	plantest.SetView(t, moved, "b2", "B", "5462-10922")
	if got := moved.SlotsUnsettled(); !slices.Equal(got, []string{"b2"}) {
		t.Errorf("b2 still names a as the owner of slot 5461: want [b2], got %v", got)
	}

	// The same range written another way (split in two) is the same map.
	split := plantest.Build(t, plantest.HealthyThreeByOne())
	plantest.SetView(t, split, "c", "A", "0-100,101-5461")
	if got := split.SlotsUnsettled(); len(got) != 0 {
		t.Errorf("a range split in two is the same slots: want none, got %v", got)
	}

	// A member that does not answer says nothing of its slots, and its stale view is unread.
	down := plantest.HealthyThreeByOne()
	down[2].Down = true
	gone := plantest.Build(t, down)
	if got := gone.SlotsUnsettled(); len(got) != 0 {
		t.Errorf("c does not answer: its entry is not compared, got %v", got)
	}

	// A leaving member's view is not read; its own report still counts.
	lv := plantest.With(plantest.HealthyThreeByOne(), "b2", func(f *plantest.FakeMember) { f.Leaving = true })
	leaving := plantest.Build(t, lv)
	plantest.SetView(t, leaving, "b2", "A", "0-100")
	if got := leaving.SlotsUnsettled(); len(got) != 0 {
		t.Errorf("b2 is leaving: its view is not read, got %v", got)
	}
}
