package cluster

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/guard"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// fakeMember builds a member whose server reports the given CLUSTER NODES lines (its own
// line flagged myself), as a real server would.
type fakeMember struct {
	name    string
	shard   int32
	ip      string
	id      string
	primary string // primary's ID for a replica
	slots   string // "0-5460"
	offset  int64
	linkUp  bool
	down    bool // server does not answer
	// silent is, for a member that is down, how long ago the others last heard from it
	// (a minute when zero).
	silent time.Duration
	// seenBy names the members that, for a member that is down, still reach it (a
	// partition between the operator and the member, not a death).
	seenBy []string
	// unflagged: the member is down but nobody flags it yet (it died less than the node
	// timeout ago); serverDown: its ValkeyNode says Kubernetes saw its server exit.
	unflagged, serverDown bool
	leaving               bool
	// joining: the member never became active (a new member); the others were.
	joining bool
	// podNotReady is the reason of a PodReady condition that is False: the member's pod
	// cannot run (ImagePullBackOff, CrashLoop, ...).
	podNotReady string
	// keys is the size of its dataset (INFO keyspace).
	keys int64
	// For scopeFor: outdated members run a pod the spec no longer asks for (an older
	// image); restarting members were authorised a new pod not rebuilt yet.
	outdated, restarting bool
	// locked: the member's server refuses the operator's login (its ValkeyNode says
	// OperatorLoginRefused): it does not answer the operator, the others see it as usual.
	locked bool
	// node is the Kubernetes node its pod runs on (status.nodeName).
	node string
	// epoch is its config epoch (the latest failover's primary has the highest).
	epoch uint64
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func build(t *testing.T, fms []fakeMember, extra ...valkey.ClusterNode) *topology {
	t.Helper()
	var nodes []valkey.ClusterNode
	for _, f := range fms {
		if f.id == "" {
			continue // a server whose ID nobody recorded: the others do not know it
		}
		n := valkey.ClusterNode{ID: f.id, IP: f.ip, Port: 6379, BusPort: 16379, Connected: true, PongRecv: t0.UnixMilli(), ConfigEpoch: f.epoch}
		if f.primary != "" {
			n.Replica, n.PrimaryID = true, f.primary
		} else {
			n.Primary = true
		}
		if f.slots != "" {
			rs, err := valkey.ParseRanges(f.slots)
			if err != nil {
				t.Fatal(err)
			}
			n.Slots = rs
		}
		if f.down {
			n.PFail, n.Connected = !f.unflagged, false
			silent := f.silent
			if silent == 0 {
				silent = time.Minute
			}
			n.PongRecv = t0.Add(-silent).UnixMilli()
		}
		nodes = append(nodes, n)
	}
	nodes = append(nodes, extra...)
	seen := map[string]map[string]bool{} // member name -> IDs it reaches although they are down
	for _, f := range fms {
		for _, by := range f.seenBy {
			if seen[by] == nil {
				seen[by] = map[string]bool{}
			}
			seen[by][f.id] = true
		}
	}
	var members []*member
	for i, f := range fms {
		vn := &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{
			Name: f.name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Second)),
		}}
		vn.Spec.ShardIndex = f.shard
		vn.Status.PodIP = f.ip
		vn.Status.NodeID = f.id
		vn.Status.NodeName = f.node
		if f.leaving {
			now := metav1.NewTime(t0)
			vn.DeletionTimestamp = &now
		}
		if !f.joining {
			vn.Status.Lifecycle = v1alpha1.LifecycleActive
		}
		if f.serverDown {
			vn.Status.Conditions = append(vn.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionServerDown,
				Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonContainerExited, Message: "container server of pod p exited with code 137"})
		}
		if f.locked {
			vn.Status.Conditions = append(vn.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionOperatorLoginRefused,
				Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPasswordRefused, Message: "WRONGPASS"})
		}
		if f.podNotReady != "" {
			vn.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionPodReady, Status: metav1.ConditionFalse,
				Reason: f.podNotReady, Message: "the pod does not run"}}
		}
		m := &member{node: vn, reachable: !f.down && !f.locked}
		if m.reachable {
			for _, n := range nodes {
				v := n
				if n.ID == f.id {
					v.Myself = true
					m.self = v
				}
				if seen[f.name][n.ID] {
					v.PFail, v.Connected, v.PongRecv = false, true, t0.UnixMilli()
				}
				m.view = append(m.view, v)
			}
			m.state = "ok"
			m.keys, m.keysKnown = f.keys, true
			m.repl = valkey.Replication{Role: valkey.RolePrimary, Offset: f.offset}
			if f.primary != "" {
				m.repl = valkey.Replication{Role: valkey.RoleReplica, LinkUp: f.linkUp, Offset: f.offset}
			}
			m.version = valkey.Version{Major: 8, Minor: 0, Patch: 1}
		}
		members = append(members, m)
	}
	// A primary lists its replicas whose link is up as online.
	for _, f := range fms {
		if f.primary == "" || !f.linkUp || f.down {
			continue
		}
		for j, p := range fms {
			if p.id == f.primary && !p.down {
				members[j].repl.Replicas = append(members[j].repl.Replicas, valkey.ReplicaInfo{IP: f.ip, Port: 6379, State: "online", Offset: f.offset})
			}
		}
	}
	return newTopology(members, t0)
}

func threeByOne() []fakeMember {
	return []fakeMember{
		{name: "a", shard: 0, ip: "10.0.0.1", id: "A", slots: "0-5461", offset: 100},
		{name: "b", shard: 1, ip: "10.0.0.2", id: "B", slots: "5462-10922", offset: 100},
		{name: "c", shard: 2, ip: "10.0.0.3", id: "C", slots: "10923-16383", offset: 100},
		{name: "a2", shard: 0, ip: "10.0.0.4", id: "A2", primary: "A", offset: 100, linkUp: true},
		{name: "b2", shard: 1, ip: "10.0.0.5", id: "B2", primary: "B", offset: 90, linkUp: true},
		{name: "c2", shard: 2, ip: "10.0.0.6", id: "C2", primary: "C", offset: 100, linkUp: false},
	}
}

// healthyThreeByOne is threeByOne with every replica in sync.
func healthyThreeByOne() []fakeMember {
	fms := threeByOne()
	fms[5].linkUp = true
	return fms
}

// with returns fms with the member named name changed by mod.
func with(fms []fakeMember, name string, mod func(*fakeMember)) []fakeMember {
	out := append([]fakeMember(nil), fms...)
	for i := range out {
		if out[i].name == name {
			mod(&out[i])
			return out
		}
	}
	panic("no member " + name)
}

// without returns fms without the members named names.
func without(fms []fakeMember, names ...string) []fakeMember {
	var out []fakeMember
	for _, f := range fms {
		if !slices.Contains(names, f.name) {
			out = append(out, f)
		}
	}
	return out
}

// scopeFor builds the scope of a pass over vc whose members are fms: each member's spec
// is the one vc asks for its shard, at revision 1 with its pod built for it, except the
// members marked outdated (an older image) or restarting (revision 2 authorised, the pod
// still at 1).
func scopeFor(t *testing.T, vc *v1alpha1.ValkeyCluster, fms []fakeMember, extra ...valkey.ClusterNode) *scope {
	t.Helper()
	topo := build(t, fms, extra...)
	for _, f := range fms {
		m := memberNamed(t, topo, f.name)
		m.node.Spec = desiredSpec(vc, m.shard())
		m.node.Spec.Revision, m.node.Status.Revision = 1, 1
		if f.outdated {
			m.node.Spec.Image = "valkey/valkey:7.2"
		}
		if f.restarting {
			m.node.Spec.Revision = 2
		}
	}
	return &scope{vc: vc, guard: guard.Check(vc), topo: topo}
}

// unknown removes node id from the views of the other members: they have not met it yet.
func unknown(topo *topology, id string) {
	for _, m := range topo.members {
		if m.id() != id {
			m.view = slices.DeleteFunc(m.view, func(n valkey.ClusterNode) bool { return n.ID == id })
		}
	}
}

// memberNamed returns the member called name.
func memberNamed(t *testing.T, topo *topology, name string) *member {
	t.Helper()
	for _, m := range topo.members {
		if m.name() == name {
			return m
		}
	}
	t.Fatalf("no member %s", name)
	return nil
}

func TestPrimaryOfAndSync(t *testing.T) {
	topo := build(t, threeByOne())
	for sh, want := range []string{"a", "b", "c"} {
		if p := topo.primaryOf(int32(sh)); p == nil || p.name() != want {
			t.Errorf("primary of shard %d = %v, want %s", sh, p, want)
		}
	}
	if !synced(topo.byID("A2"), topo.byID("A")) {
		t.Error("a2 is linked and caught up: want synced")
	}
	if !synced(topo.byID("B2"), topo.byID("B")) {
		t.Error("b2 lags by 10 bytes: still synced")
	}
	if synced(topo.byID("C2"), topo.byID("C")) {
		t.Error("c2's link is down: want not synced")
	}
	if got := topo.coveredSlots(); got != slotCount {
		t.Errorf("covered = %d", got)
	}
	if !topo.formed() {
		t.Error("every member knows every other: want formed")
	}
}

func TestPrimaryOfNewShardIsTheOneItsReplicasFollow(t *testing.T) {
	fms := append(threeByOne(),
		fakeMember{name: "d", shard: 3, ip: "10.0.0.7", id: "D"},
		fakeMember{name: "d2", shard: 3, ip: "10.0.0.8", id: "D2", primary: "D", linkUp: true},
	)
	topo := build(t, fms)
	if p := topo.primaryOf(3); p == nil || p.name() != "d" {
		t.Fatalf("primary of new shard = %v, want d", p)
	}
}

func TestStrangersAndFollowed(t *testing.T) {
	dead := valkey.ClusterNode{ID: "OLD", IP: "10.0.0.99", Port: 6379, Primary: true, Fail: true}
	topo := build(t, threeByOne(), dead)
	got := topo.strangers()
	if len(got) != 1 || got[0] != "OLD" {
		t.Fatalf("strangers = %v, want [OLD]", got)
	}
	if topo.followed("OLD") {
		t.Error("nobody follows OLD")
	}
	if !topo.followed("A") {
		t.Error("a2 follows A")
	}
}

func TestStrangerAtTheAddressOfASilentMemberIsKept(t *testing.T) {
	fms := threeByOne()
	fms[5].down = true // c2 does not answer
	fms[5].id = ""     // and its ID was never recorded
	other := valkey.ClusterNode{ID: "C2REAL", IP: "10.0.0.6", Port: 6379, Replica: true, PrimaryID: "C"}
	topo := build(t, fms, other)
	if !topo.mayBeMember("C2REAL") {
		t.Fatal("a node at the address of a silent member may be that member")
	}
}

func TestLostPrimaries(t *testing.T) {
	fms := threeByOne()
	fms[0].down = true // a (primary of shard 0) is gone
	topo := build(t, fms)
	lost := topo.lostPrimaries()
	if len(lost) != 1 || lost[0].id != "A" || len(lost[0].replicas) != 1 || lost[0].replicas[0].name() != "a2" {
		t.Fatalf("lost = %+v", lost)
	}
	if lost[0].silentFor < 59*time.Second {
		t.Errorf("silentFor = %s, want about a minute", lost[0].silentFor)
	}
}

func TestOwnedSlotsPrefersTheOwnersOwnReport(t *testing.T) {
	topo := build(t, threeByOne())
	owned := topo.ownedSlots()
	if got := valkey.FormatRanges(owned["A"]); got != "0-5461" {
		t.Errorf("A owns %s", got)
	}
	if len(owned) != 3 {
		t.Errorf("owners = %d, want 3", len(owned))
	}
}

func TestEvenSlots(t *testing.T) {
	for _, n := range []int32{1, 2, 3, 5, 6} {
		total := 0
		for s := int32(0); s < n; s++ {
			total += valkey.CountSlots(evenSlotsFor(n, s))
		}
		if total != slotCount {
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
	fms := threeByOne()
	fms[0].id = "A-NEW" // a's pod came back empty
	fms[0].slots = ""
	dead := valkey.ClusterNode{ID: "A", IP: "10.0.0.1", Port: 6379, Primary: true, PFail: true}
	rs, _ := valkey.ParseRanges("0-5461")
	dead.Slots = rs
	topo := build(t, fms, dead)
	if !topo.inFailover(0) {
		t.Fatal("shard 0 is in failover")
	}
	s := &scope{vc: cluster(nil), topo: topo}
	if c := s.candidate(0); c != nil {
		t.Fatalf("candidate of a shard in failover = %s, want none", c.name())
	}
	if c := s.candidate(1); c == nil || c.name() != "b" {
		t.Fatalf("candidate of shard 1 = %v", c)
	}
}

// TestFailoverPendingIsPerShard: once any replica of a shard was asked to take over, no
// other replica of that shard is asked until it completed or the window passed.
func TestFailoverPendingIsPerShard(t *testing.T) {
	topo := build(t, threeByOne())
	s := &scope{vc: cluster(nil), topo: topo}
	if s.failoverPending(0) != nil {
		t.Fatal("nothing asked yet")
	}
	a2 := topo.byID("A2")
	ask := func(kind v1alpha1.FailoverKind, ago time.Duration) {
		a2.node.Status.Failover = &v1alpha1.MemberFailover{Kind: kind, RequestedAt: metav1.NewMicroTime(t0.Add(-ago))}
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
	a2.self.Primary, a2.self.Replica = true, false
	if s.failoverPending(0) != nil {
		t.Error("a completed takeover no longer blocks")
	}
}

// TestMeetingsRepairAOneSidedView: c2's pod came back with a new identity and the other
// members forgot it while it still knows them all. Each of them must meet it; nothing else
// needs a meeting.
func TestMeetingsRepairAOneSidedView(t *testing.T) {
	topo := build(t, threeByOne())
	c2 := topo.byID("C2")
	for _, m := range topo.members {
		if m == c2 {
			continue
		}
		var kept []valkey.ClusterNode
		for _, n := range m.view {
			if n.ID != "C2" {
				kept = append(kept, n)
			}
		}
		m.view = kept
	}
	got := meetings(topo.reachable())
	if len(got) != 5 {
		t.Fatalf("%d meetings, want 5 (everyone meets c2)", len(got))
	}
	for _, p := range got {
		if p[1] != c2 || p[0] == c2 {
			t.Errorf("meeting %s -> %s, want every other member -> c2", p[0].name(), p[1].name())
		}
	}
	if n := len(meetings(build(t, threeByOne()).reachable())); n != 0 {
		t.Errorf("a formed cluster needs %d meetings, want none", n)
	}
}

// TestVotersNotReaching: a2's pod came back at a new address that b has not learnt yet,
// and c's link to it is down: only a (its own primary, linked) would get its vote to a2.
func TestVotersNotReaching(t *testing.T) {
	topo := build(t, threeByOne())
	a2 := topo.byID("A2")
	if got := topo.votersNotReaching(a2); len(got) != 0 {
		t.Fatalf("every primary reaches a2: got %v", got)
	}
	for i, n := range topo.byID("B").view {
		if n.ID == "A2" {
			topo.byID("B").view[i].IP = "10.0.0.99"
		}
	}
	for i, n := range topo.byID("C").view {
		if n.ID == "A2" {
			topo.byID("C").view[i].Connected = false
		}
	}
	if got := fmt.Sprint(topo.votersNotReaching(a2)); got != "[b c]" {
		t.Errorf("voters not reaching a2 = %s, want [b c]", got)
	}
}

// TestSyncedNeedsThePrimaryStreaming: a replica that says its link is up is not in sync
// until its primary lists it online with an acknowledged offset (after a full sync, the
// first acknowledgement starts the stream).
func TestSyncedNeedsThePrimaryStreaming(t *testing.T) {
	topo := build(t, threeByOne())
	a, a2 := topo.byID("A"), topo.byID("A2")
	if !synced(a2, a) {
		t.Fatal("a2 is linked, caught up and listed online: want synced")
	}
	a.repl.Replicas[0].State = "wait_bgsave"
	if synced(a2, a) {
		t.Error("a's stream to a2 has not started: want not synced")
	}
	a.repl.Replicas[0].State, a.repl.Replicas[0].Offset = "online", 0
	if synced(a2, a) {
		t.Error("a2 has not acknowledged anything yet: want not synced")
	}
	a.repl.Offset, a2.repl.Offset = 0, 0
	if !synced(a2, a) {
		t.Error("a new primary that wrote nothing holds nothing back: want synced")
	}
	a.repl.Replicas = nil
	if synced(a2, a) {
		t.Error("a does not list a2: want not synced")
	}
}

// TestOpenSlotsArePrimaries: a slot state left on a replica (copied from its primary,
// which closed it since) does not count as an open slot, which would hold every phase;
// a primary's does.
func TestOpenSlotsArePrimaries(t *testing.T) {
	topo := build(t, healthyThreeByOne())
	if topo.openSlots() {
		t.Fatal("a healthy cluster has open slots")
	}
	replica := memberNamed(t, topo, "a2")
	replica.self.Importing = map[int]string{4097: "B"}
	if topo.openSlots() {
		t.Error("a replica's stale importing state counts as an open slot")
	}
	primary := memberNamed(t, topo, "b")
	primary.self.Migrating = map[int]string{4097: "C"}
	if !topo.openSlots() {
		t.Error("a primary's migrating slot does not count")
	}
}

// setView sets, in member name's view, the slots the entry of id shows.
func setView(t *testing.T, topo *topology, name, id, slots string) {
	t.Helper()
	m := memberNamed(t, topo, name)
	for i := range m.view {
		if m.view[i].ID != id {
			continue
		}
		rs, err := valkey.ParseRanges(slots)
		if slots != "" && err != nil {
			t.Fatal(err)
		}
		m.view[i].Slots = rs
		return
	}
	t.Fatalf("%s does not know %s", name, id)
}

func TestSlotsUnsettled(t *testing.T) {
	settled := build(t, healthyThreeByOne())
	if got := settled.slotsUnsettled(); len(got) != 0 {
		t.Errorf("every member names the owners the owners report: want none, got %v", got)
	}

	// Slot 5461 moved from a to b; b2 has not heard of it yet.
	fms := healthyThreeByOne()
	fms[0].slots, fms[1].slots = "0-5460", "5461-10922"
	moved := build(t, fms)
	setView(t, moved, "b2", "A", "0-5461")
	setView(t, moved, "b2", "B", "5462-10922")
	if got := moved.slotsUnsettled(); !slices.Equal(got, []string{"b2"}) {
		t.Errorf("b2 still names a as the owner of slot 5461: want [b2], got %v", got)
	}

	// The same range written another way (split in two) is the same map.
	split := build(t, healthyThreeByOne())
	setView(t, split, "c", "A", "0-100,101-5461")
	if got := split.slotsUnsettled(); len(got) != 0 {
		t.Errorf("a range split in two is the same slots: want none, got %v", got)
	}

	// A member that does not answer says nothing of its slots, and its stale view is unread.
	down := healthyThreeByOne()
	down[2].down = true
	gone := build(t, down)
	if got := gone.slotsUnsettled(); len(got) != 0 {
		t.Errorf("c does not answer: its entry is not compared, got %v", got)
	}

	// A leaving member's view is not read; its own report still counts.
	lv := with(healthyThreeByOne(), "b2", func(f *fakeMember) { f.leaving = true })
	leaving := build(t, lv)
	setView(t, leaving, "b2", "A", "0-100")
	if got := leaving.slotsUnsettled(); len(got) != 0 {
		t.Errorf("b2 is leaving: its view is not read, got %v", got)
	}
}
