package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// oldIdentity is the line the members keep for a node ID no member has any more, at the
// address of member a.
func oldIdentity(id, slots string, mod func(*valkey.ClusterNode)) valkey.ClusterNode {
	n := valkey.ClusterNode{ID: id, IP: "10.0.0.1", Port: 6379, BusPort: 16379, Primary: true,
		PongRecv: t0.Add(-time.Minute).UnixMilli()}
	if slots != "" {
		n.Slots, _ = valkey.ParseRanges(slots)
	}
	mod(&n)
	return n
}

// setEpoch sets the config epoch of node id in m's view.
func setEpoch(m *member, id string, epoch uint64) {
	for i := range m.view {
		if m.view[i].ID == id {
			m.view[i].ConfigEpoch = epoch
		}
	}
}

func TestPlanTakeovers(t *testing.T) {
	silent := func(d time.Duration) func(*fakeMember) {
		return func(f *fakeMember) { f.down, f.silent = true, d }
	}
	a3 := fakeMember{name: "a3", shard: 0, ip: "10.0.0.7", id: "A3", primary: "A", offset: 100, linkUp: true}
	// a's pod came back empty with a new ID; its replica still follows the old one.
	restartedEmpty := with(healthyThreeByOne(), "a", func(f *fakeMember) { f.id, f.slots = "A-NEW", "" })
	justDied := func(f *fakeMember) { f.down, f.silent, f.unflagged = true, time.Second, true }
	exited := func(f *fakeMember) { justDied(f); f.serverDown = true }
	cases := []struct {
		name  string
		vc    func(*v1alpha1.ValkeyClusterSpec)
		fms   []fakeMember
		extra []valkey.ClusterNode
		mod   func(*scope)
		want  string // "lost primary: the replica taking over, or wait", joined by "; "
	}{
		{
			name: "Kubernetes saw the primary's server exit: its replica takes over at once, before anyone flags it",
			fms:  with(healthyThreeByOne(), "a", exited),
			want: "A: a2 FORCE",
		},
		{
			name: "the same with --fast-failover=false: Valkey's own detection stands",
			fms:  with(healthyThreeByOne(), "a", exited),
			mod:  func(s *scope) { s.topo.ignoreServerDown = true },
			want: "",
		},
		{
			name: "a primary that just went silent without a report of its exit: nothing yet",
			fms:  with(healthyThreeByOne(), "a", justDied),
			want: "",
		},
		{
			name: "a replica in the middle of a full sync is not promoted on a proof of death",
			fms:  with(with(healthyThreeByOne(), "a", exited), "a2", func(f *fakeMember) { f.linkUp = false }),
			mod: func(s *scope) {
				memberNamed(t, s.topo, "a2").repl.SyncInProgress = true
			},
			want: "A: wait",
		},
		{name: "every primary answers: nothing to heal", fms: healthyThreeByOne(), want: ""},
		{
			name: "a primary silent for less than 2x node timeout (the operator's 5 s) + 2 s: Valkey's own failover may still come",
			fms:  with(healthyThreeByOne(), "a", silent(11*time.Second)),
			want: "A: wait",
		},
		{
			name: "quorum lost: the replica takes over after 2x node timeout + 2 s",
			fms:  with(healthyThreeByOne(), "a", silent(12*time.Second)),
			want: "A: a2 FORCE",
		},
		{
			name: "a longer cluster-node-timeout lengthens the wait",
			vc:   func(s *v1alpha1.ValkeyClusterSpec) { s.Config = map[string]string{"cluster-node-timeout": "15000"} },
			fms:  with(healthyThreeByOne(), "a", silent(31*time.Second)),
			want: "A: wait",
		},
		{
			name: "with a longer cluster-node-timeout, the replica takes over after 2x that + 2 s",
			vc:   func(s *v1alpha1.ValkeyClusterSpec) { s.Config = map[string]string{"cluster-node-timeout": "15000"} },
			fms:  with(healthyThreeByOne(), "a", silent(32*time.Second)),
			want: "A: a2 FORCE",
		},
		{
			name: "the most caught-up replica takes over",
			fms:  append(with(healthyThreeByOne(), "a", silent(time.Minute)), with([]fakeMember{a3}, "a3", func(f *fakeMember) { f.offset = 120 })...),
			want: "A: a3 FORCE",
		},
		{
			name: "replicas equally caught up: the oldest takes over",
			fms:  append(with(healthyThreeByOne(), "a", silent(time.Minute)), a3),
			want: "A: a2 FORCE",
		},
		{
			name: "two primaries lost: each on its own clock",
			fms:  with(with(healthyThreeByOne(), "a", silent(time.Minute)), "b", silent(10*time.Second)),
			want: "A: a2 TAKEOVER; B: wait",
		},
		{
			name:  "a primary that restarted empty at its address (its old ID without an address) a minute ago: taken over without a vote",
			fms:   restartedEmpty,
			extra: []valkey.ClusterNode{oldIdentity("A", "0-5461", func(n *valkey.ClusterNode) { n.NoAddr = true })},
			want:  "A: a2 TAKEOVER",
		},
		{
			name: "Kubernetes saw the primary's server exit, but its replica knows an older config epoch of it than the voters: FORCE cannot win",
			fms:  with(healthyThreeByOne(), "a", exited),
			mod: func(s *scope) {
				setEpoch(memberNamed(t, s.topo, "b"), "A", 2)
				setEpoch(memberNamed(t, s.topo, "a2"), "A", 1)
			},
			want: "A: a2 TAKEOVER",
		},
		{
			name: "a proven death whose forced failover did not take effect within its window (20 s for a 5 s node timeout): taken over without a vote",
			fms:  with(healthyThreeByOne(), "a", func(f *fakeMember) { exited(f); f.silent = 21 * time.Second }),
			want: "A: a2 TAKEOVER",
		},
		{
			name: "a proven death whose forced failover did not take effect, the replica's link down since the death: still the one to take over",
			fms:  with(healthyThreeByOne(), "a", func(f *fakeMember) { exited(f); f.silent = 30 * time.Second }),
			mod: func(s *scope) {
				r := memberNamed(t, s.topo, "a2")
				r.repl.LinkUp, r.repl.LinkDownSince = false, 30
			},
			want: "A: a2 TAKEOVER",
		},
		{
			name: "a proven death, but the replica's link went down long before the primary went silent: not promoted",
			fms:  with(healthyThreeByOne(), "a", func(f *fakeMember) { exited(f); f.silent = 3 * time.Second }),
			mod: func(s *scope) {
				r := memberNamed(t, s.topo, "a2")
				r.repl.LinkUp, r.repl.LinkDownSince = false, 60
			},
			want: "A: wait",
		},
		{
			name: "a proven death within the forced failover's window: FORCE",
			fms:  with(healthyThreeByOne(), "a", func(f *fakeMember) { exited(f); f.silent = 19 * time.Second }),
			want: "A: a2 FORCE",
		},
		{
			name: "a partition: the operator and the replica lose the primary, another member still reaches it: no takeover",
			fms:  with(with(healthyThreeByOne(), "a", silent(time.Minute)), "a", func(f *fakeMember) { f.seenBy = []string{"b", "c2"} }),
			want: "A: wait",
		},
		{
			name: "one member still reaching the primary is enough to hold the takeover",
			fms:  with(with(healthyThreeByOne(), "a", silent(time.Minute)), "a", func(f *fakeMember) { f.seenBy = []string{"c"} }),
			want: "A: wait",
		},
		{
			name: "proof of death (another server answers at its address) is acted on at once, however short the silence",
			fms:  restartedEmpty,
			extra: []valkey.ClusterNode{oldIdentity("A", "0-5461", func(n *valkey.ClusterNode) {
				n.NoAddr, n.PongRecv = true, t0.Add(-time.Second).UnixMilli()
			})},
			want: "A: a2 FORCE",
		},
		{
			name: "a silent primary that served no slots needs no takeover",
			fms:  with(with(healthyThreeByOne(), "a", silent(time.Minute)), "a", func(f *fakeMember) { f.slots = "" }),
			want: "",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := scopeFor(t, cluster(c.vc), c.fms, c.extra...)
			if c.mod != nil {
				c.mod(s)
			}
			var got []string
			for _, to := range s.planTakeovers() {
				by := "wait"
				if to.by != nil {
					by = to.by.name() + " " + to.mode.String()
				}
				got = append(got, fmt.Sprintf("%s: %s", to.lost.id, by))
			}
			if g := strings.Join(got, "; "); g != c.want {
				t.Errorf("takeovers = %q, want %q", g, c.want)
			}
		})
	}
}

func TestLostSlots(t *testing.T) {
	twoShards := without(healthyThreeByOne(), "c", "c2")
	leaving := func(f *fakeMember) { f.leaving = true }
	cases := []struct {
		name   string
		fms    []fakeMember
		mod    func(*scope)
		lost   string
		target string
	}{
		{name: "every slot served: nothing lost", fms: healthyThreeByOne()},
		{
			name: "a shard's only server restarted without its data: its slots go back to it, empty",
			fms:  with(without(healthyThreeByOne(), "c2"), "c", func(f *fakeMember) { f.slots = "" }),
			lost: "10923-16383", target: "c",
		},
		{
			name: "no primary without slots: the least loaded primary gets them",
			fms:  twoShards,
			lost: "10923-16383", target: "b",
		},
		{
			name: "primaries equally loaded: the lowest shard's gets them",
			fms:  with(twoShards, "a", func(f *fakeMember) { f.slots = "0-5460" }),
			lost: "5461-5461,10923-16383", target: "a",
		},
		{
			name: "every primary leaving: the slots wait for one",
			fms:  with(with(twoShards, "a", leaving), "b", leaving),
			lost: "10923-16383",
		},
		{
			name: "a slot migrating: nothing is given while a migration is open",
			fms:  twoShards,
			mod:  func(s *scope) { memberNamed(t, s.topo, "a").self.Migrating = map[int]string{5: "B"} },
		},
		{
			name: "a cluster being created has no lost slots",
			fms: []fakeMember{
				{name: "a", shard: 0, ip: "10.0.0.1", id: "A", joining: true},
				{name: "b", shard: 1, ip: "10.0.0.2", id: "B", joining: true},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := scopeFor(t, cluster(nil), c.fms)
			if c.mod != nil {
				c.mod(s)
			}
			lost, target := s.lostSlots()
			var name string
			if target != nil {
				name = target.name()
			}
			if got := valkey.FormatRanges(lost); got != c.lost || name != c.target {
				t.Errorf("lost %q to %q, want %q to %q", got, name, c.lost, c.target)
			}
		})
	}
}

func TestToForget(t *testing.T) {
	stranger := func(mod func(*valkey.ClusterNode)) valkey.ClusterNode {
		n := valkey.ClusterNode{ID: "OLD", IP: "10.0.0.99", Port: 6379, Primary: true}
		mod(&n)
		return n
	}
	// a2 took over shard 0, and a's pod came back empty with a new ID as its replica.
	aCameBack := with(with(healthyThreeByOne(),
		"a2", func(f *fakeMember) { f.primary, f.slots = "", "0-5461" }),
		"a", func(f *fakeMember) { f.id, f.primary, f.slots, f.linkUp = "A-NEW", "A2", "", true })
	cases := []struct {
		name   string
		fms    []fakeMember
		extra  []valkey.ClusterNode
		mod    func(*scope)
		forget string
		soon   bool
	}{
		{name: "no strangers: nothing to forget", fms: healthyThreeByOne()},
		{
			name: "a stranger the cluster flags as failed is forgotten",
			fms:  healthyThreeByOne(), extra: []valkey.ClusterNode{stranger(func(n *valkey.ClusterNode) { n.Fail = true })},
			forget: "OLD",
		},
		{
			name: "a stranger without an address is forgotten",
			fms:  healthyThreeByOne(), extra: []valkey.ClusterNode{stranger(func(n *valkey.ClusterNode) { n.NoAddr = true })},
			forget: "OLD",
		},
		{
			name: "a stranger only suspected (PFAIL) is kept, and looked at again soon",
			fms:  healthyThreeByOne(), extra: []valkey.ClusterNode{stranger(func(n *valkey.ClusterNode) { n.PFail = true })},
			soon: true,
		},
		{
			name: "a stranger that still talks may be a member whose new pod the operator has not seen: kept",
			fms:  healthyThreeByOne(), extra: []valkey.ClusterNode{stranger(func(n *valkey.ClusterNode) { n.Connected = true })},
			soon: true,
		},
		{
			name:  "a failed primary a replica still follows is kept: the replica needs it known to take over",
			fms:   with(healthyThreeByOne(), "a", func(f *fakeMember) { f.id, f.slots = "A-NEW", "" }),
			extra: []valkey.ClusterNode{oldIdentity("A", "0-5461", func(n *valkey.ClusterNode) { n.Fail = true })},
		},
		{
			name:   "the old identity of a member whose pod came back empty is forgotten at once",
			fms:    aCameBack,
			extra:  []valkey.ClusterNode{oldIdentity("A", "", func(n *valkey.ClusterNode) { n.PFail = true })},
			mod:    func(s *scope) { memberNamed(t, s.topo, "a").node.Status.NodeID = "A" },
			forget: "A",
		},
		{
			name:  "a failed stranger at the address of a member that does not answer may be that member: kept",
			fms:   with(healthyThreeByOne(), "c2", func(f *fakeMember) { f.down, f.id = true, "" }),
			extra: []valkey.ClusterNode{{ID: "C2REAL", IP: "10.0.0.6", Port: 6379, Replica: true, PrimaryID: "C", Fail: true}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := scopeFor(t, cluster(nil), c.fms, c.extra...)
			if c.mod != nil {
				c.mod(s)
			}
			forget, soon := s.topo.toForget()
			if got := strings.Join(forget, ","); got != c.forget || soon != c.soon {
				t.Errorf("forget %q (soon %v), want %q (soon %v)", got, soon, c.forget, c.soon)
			}
		})
	}
}

func TestPartitionedMembers(t *testing.T) {
	silentA := func(f *fakeMember) { f.down, f.silent = true, time.Minute }
	cases := []struct {
		name string
		fms  []fakeMember
		want string
	}{
		{name: "a dead member, flagged by every member", fms: with(healthyThreeByOne(), "a", silentA), want: ""},
		{
			name: "flagged by its replica, reached by the others: a partition",
			fms: with(with(healthyThreeByOne(), "a", silentA), "a", func(f *fakeMember) {
				f.seenBy = []string{"b", "b2", "c", "c2"}
			}),
			want: "the operator cannot reach some members that other members still reach (a network partition, not a " +
				"dead server: no failover is forced): a is reached by b, c, b2, c2",
		},
		{
			// Right after a crash its replica flags it first; the kubelet has already said.
			name: "flagged by its replica, reached by the others, its server exited: not a partition",
			fms: with(with(healthyThreeByOne(), "a", silentA), "a", func(f *fakeMember) {
				f.seenBy = []string{"b", "b2", "c", "c2"}
				f.serverDown = true
			}),
			want: "",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := scopeFor(t, cluster(nil), c.fms)
			if got := s.topo.partitioned([]*member{memberNamed(t, s.topo, "a")}); got != c.want {
				t.Errorf("partitioned = %q\nwant          %q", got, c.want)
			}
		})
	}
}
