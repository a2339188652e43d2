package plan_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// setEpoch sets the config epoch of node id in m's view.
func setEpoch(m *plan.Member, id string, epoch uint64) {
	for i := range m.View {
		if m.View[i].ID == id {
			m.View[i].ConfigEpoch = epoch
		}
	}
}

// asPrimary makes m's view list node id as a primary (a view behind a failover).
func asPrimary(m *plan.Member, id string) {
	for i := range m.View {
		if m.View[i].ID == id {
			m.View[i].Primary, m.View[i].Replica, m.View[i].PrimaryID = true, false, ""
		}
	}
}

func TestPlanTakeovers(t *testing.T) {
	// forcedAgo records on the member named name a FORCE asked ago.
	forcedAgo := func(name string, ago time.Duration) func(*plan.Cluster) {
		return func(s *plan.Cluster) {
			plantest.MemberNamed(t, s.Topo, name).Node.Status.Failover = &v1alpha1.MemberFailover{
				Kind: v1alpha1.FailoverForced, RequestedAt: metav1.NewMicroTime(plantest.T0.Add(-ago)),
			}
		}
	}
	// downSince dates the ServerDown report of the member named name ago, and sets the
	// replica a2's link up or down.
	downSince := func(name string, ago time.Duration, linkUp bool) func(*plan.Cluster) {
		return func(s *plan.Cluster) {
			conds := plantest.MemberNamed(t, s.Topo, name).Node.Status.Conditions
			for i := range conds {
				if conds[i].Type == v1alpha1.ConditionServerDown {
					conds[i].LastTransitionTime = metav1.NewTime(plantest.T0.Add(-ago))
				}
			}
			r := plantest.MemberNamed(t, s.Topo, "a2")
			r.Repl.LinkUp = linkUp
			if !linkUp {
				r.Repl.LinkDownSince = 0
			}
		}
	}
	silent := func(d time.Duration) func(*plantest.FakeMember) {
		return func(f *plantest.FakeMember) { f.Down, f.Silent = true, d }
	}
	a3 := plantest.FakeMember{Name: "a3", Shard: 0, IP: "10.0.0.7", ID: "A3", Primary: "A", Offset: 100, LinkUp: true}
	// a's pod came back empty with a new ID; its replica still follows the old one.
	restartedEmpty := plantest.With(plantest.HealthyThreeByOne(), "a", func(f *plantest.FakeMember) { f.ID, f.Slots = "A-NEW", "" })
	justDied := func(f *plantest.FakeMember) { f.Down, f.Silent, f.Unflagged = true, time.Second, true }
	exited := func(f *plantest.FakeMember) { justDied(f); f.ServerDown = true }
	// a's pod was replaced: the new pod, at another address, runs an empty server with a
	// new ID; its replica still follows the old one.
	replacedPod := plantest.With(plantest.HealthyThreeByOne(), "a", func(f *plantest.FakeMember) { f.ID, f.Slots, f.IP = "A-NEW", "", "10.0.0.9" })
	reportedExit := func(id string, ago time.Duration) func(*plan.Cluster) {
		return func(s *plan.Cluster) {
			s.Topo.Exited = map[string]plan.Exit{id: {Why: "the server of pod vk-a no longer listens at 10.0.0.1 (connection refused)", Since: plantest.T0.Add(-ago)}}
		}
	}
	cases := []struct {
		name  string
		vc    func(*v1alpha1.ValkeyClusterSpec)
		fms   []plantest.FakeMember
		extra []valkey.ClusterNode
		mod   func(*plan.Cluster)
		want  string // "lost primary: the replica taking over, or wait", joined by "; "
	}{
		{
			name: "Kubernetes saw the primary's server exit: its replica takes over at once, before anyone flags it",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", exited),
			want: "A: a2 FORCE",
		},
		{
			name: "the primary's server reported down half a second ago, its replica's link still up: it may not have read all yet, wait",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", exited),
			mod:  downSince("a", 500*time.Millisecond, true),
			want: "A: wait (draining a2)",
		},
		{
			name: "the primary's server reported down half a second ago, its replica saw the link close: it has read all, FORCE",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", exited),
			mod:  downSince("a", 500*time.Millisecond, false),
			want: "A: a2 FORCE",
		},
		{
			name: "the primary's server reported down 2 s ago, its replica's link still up: promoted anyway",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", exited),
			mod:  downSince("a", plan.DrainWait, true),
			want: "A: a2 FORCE",
		},
		{
			name: "the same with --fast-failover=false: Valkey's own detection stands",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", exited),
			mod:  func(s *plan.Cluster) { s.Topo.IgnoreServerDown = true },
			want: "",
		},
		{
			name: "a primary that just went silent without a report of its exit: nothing yet",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", justDied),
			want: "",
		},
		{
			name: "a replica in the middle of a full sync is not promoted on a proof of death",
			fms:  plantest.With(plantest.With(plantest.HealthyThreeByOne(), "a", exited), "a2", func(f *plantest.FakeMember) { f.LinkUp = false }),
			mod: func(s *plan.Cluster) {
				plantest.MemberNamed(t, s.Topo, "a2").Repl.SyncInProgress = true
			},
			want: "A: wait",
		},
		{name: "every primary answers: nothing to heal", fms: plantest.HealthyThreeByOne(), want: ""},
		{
			name: "a primary silent for less than 2x node timeout (the operator's 5 s) + 2 s: Valkey's own failover may still come",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", silent(11*time.Second)),
			want: "A: wait",
		},
		{
			name: "quorum lost: the replica takes over after 2x node timeout + 2 s",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", silent(12*time.Second)),
			want: "A: a2 FORCE",
		},
		{
			name: "a longer cluster-node-timeout lengthens the wait",
			vc:   func(s *v1alpha1.ValkeyClusterSpec) { s.Config = map[string]string{"cluster-node-timeout": "15000"} },
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", silent(31*time.Second)),
			want: "A: wait",
		},
		{
			name: "with a longer cluster-node-timeout, the replica takes over after 2x that + 2 s",
			vc:   func(s *v1alpha1.ValkeyClusterSpec) { s.Config = map[string]string{"cluster-node-timeout": "15000"} },
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", silent(32*time.Second)),
			want: "A: a2 FORCE",
		},
		{
			name: "the most caught-up replica takes over",
			fms:  append(plantest.With(plantest.HealthyThreeByOne(), "a", silent(time.Minute)), plantest.With([]plantest.FakeMember{a3}, "a3", func(f *plantest.FakeMember) { f.Offset = 120 })...),
			want: "A: a3 FORCE",
		},
		{
			name: "replicas equally caught up: the oldest takes over",
			fms:  append(plantest.With(plantest.HealthyThreeByOne(), "a", silent(time.Minute)), a3),
			want: "A: a2 FORCE",
		},
		{
			name: "two primaries lost: each on its own clock",
			fms:  plantest.With(plantest.With(plantest.HealthyThreeByOne(), "a", silent(time.Minute)), "b", silent(10*time.Second)),
			want: "A: a2 TAKEOVER; B: wait",
		},
		{
			name:  "a primary that restarted empty at its address (its old ID without an address) a minute ago: taken over without a vote",
			fms:   restartedEmpty,
			extra: []valkey.ClusterNode{plantest.OldIdentity("A", "0-5461", func(n *valkey.ClusterNode) { n.NoAddr = true })},
			want:  "A: a2 TAKEOVER",
		},
		{
			name: "Kubernetes saw the primary's server exit, but its replica knows an older config epoch of it than the voters: FORCE cannot win",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", exited),
			mod: func(s *plan.Cluster) {
				setEpoch(plantest.MemberNamed(t, s.Topo, "b"), "A", 2)
				setEpoch(plantest.MemberNamed(t, s.Topo, "a2"), "A", 1)
			},
			want: "A: a2 TAKEOVER",
		},
		{
			name: "a proven death right after a planned failover, before a voter heard of it (it still lists the replica as the primary): taken over without a vote",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", exited),
			mod: func(s *plan.Cluster) {
				asPrimary(plantest.MemberNamed(t, s.Topo, "b"), "A2")
			},
			want: "A: a2 TAKEOVER",
		},
		{
			name: "a proven death, one voter of five behind on the replica: a majority still votes, FORCE",
			fms:  plantest.With(fiveByOne(), "a", exited),
			mod: func(s *plan.Cluster) {
				asPrimary(plantest.MemberNamed(t, s.Topo, "b"), "A2")
			},
			want: "A: a2 FORCE",
		},
		{
			name: "a proven death whose replica was asked for a FORCE 1.5 s ago and is still a replica: taken over without a vote",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", exited),
			mod:  forcedAgo("a2", plan.ForceGrace),
			want: "A: a2 TAKEOVER (escalates)",
		},
		{
			name: "a proven death whose replica was asked for a FORCE a second ago: its election is given the time to complete",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", exited),
			mod:  forcedAgo("a2", time.Second),
			want: "A: a2 FORCE",
		},
		{
			name: "a proven death whose forced failover did not take effect within its window (20 s for a 5 s node timeout): taken over without a vote",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", func(f *plantest.FakeMember) { exited(f); f.Silent = 21 * time.Second }),
			want: "A: a2 TAKEOVER",
		},
		{
			name: "a proven death whose forced failover did not take effect, the replica's link down since the death: still the one to take over",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", func(f *plantest.FakeMember) { exited(f); f.Silent = 30 * time.Second }),
			mod: func(s *plan.Cluster) {
				r := plantest.MemberNamed(t, s.Topo, "a2")
				r.Repl.LinkUp, r.Repl.LinkDownSince = false, 30
			},
			want: "A: a2 TAKEOVER",
		},
		{
			name: "a proven death, but the replica's link went down long before the primary went silent: not promoted",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", func(f *plantest.FakeMember) { exited(f); f.Silent = 3 * time.Second }),
			mod: func(s *plan.Cluster) {
				r := plantest.MemberNamed(t, s.Topo, "a2")
				r.Repl.LinkUp, r.Repl.LinkDownSince = false, 60
			},
			want: "A: wait",
		},
		{
			name: "a proven death within the forced failover's window: FORCE",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", func(f *plantest.FakeMember) { exited(f); f.Silent = 19 * time.Second }),
			want: "A: a2 FORCE",
		},
		{
			name: "a partition: the operator and the replica lose the primary, another member still reaches it: no takeover",
			fms:  plantest.With(plantest.With(plantest.HealthyThreeByOne(), "a", silent(time.Minute)), "a", func(f *plantest.FakeMember) { f.SeenBy = []string{"b", "c2"} }),
			want: "A: wait",
		},
		{
			name: "one member still reaching the primary is enough to hold the takeover",
			fms:  plantest.With(plantest.With(plantest.HealthyThreeByOne(), "a", silent(time.Minute)), "a", func(f *plantest.FakeMember) { f.SeenBy = []string{"c"} }),
			want: "A: wait",
		},
		{
			name: "proof of death (another server answers at its address) is acted on at once, however short the silence",
			fms:  restartedEmpty,
			extra: []valkey.ClusterNode{plantest.OldIdentity("A", "0-5461", func(n *valkey.ClusterNode) {
				n.NoAddr, n.PongRecv = true, plantest.T0.Add(-time.Second).UnixMilli()
			})},
			want: "A: a2 FORCE",
		},
		{
			name: "a primary's pod replaced (new address, new server, new ID) after its member reported the server's exit, which it reports no more: the exit stands, FORCE",
			fms:  replacedPod,
			extra: []valkey.ClusterNode{plantest.OldIdentity("A", "0-5461", func(n *valkey.ClusterNode) {
				n.PongRecv = plantest.T0.Add(-3 * time.Second).UnixMilli()
			})},
			mod:  reportedExit("A", 3*time.Second),
			want: "A: a2 FORCE",
		},
		{
			name: "the same without the report: Valkey's own detection stands",
			fms:  replacedPod,
			extra: []valkey.ClusterNode{plantest.OldIdentity("A", "0-5461", func(n *valkey.ClusterNode) {
				n.PongRecv = plantest.T0.Add(-3 * time.Second).UnixMilli()
			})},
			want: "",
		},
		{
			name: "a reported exit of a server that answers again with its ID (it restarted with its nodes.conf): nothing to heal",
			fms:  plantest.HealthyThreeByOne(),
			mod:  reportedExit("A", 3*time.Second),
			want: "",
		},
		{
			name: "a silent primary that served no slots needs no takeover",
			fms:  plantest.With(plantest.With(plantest.HealthyThreeByOne(), "a", silent(time.Minute)), "a", func(f *plantest.FakeMember) { f.Slots = "" }),
			want: "",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := plantest.ClusterFor(t, plantest.Cluster(c.vc), c.fms, c.extra...)
			if c.mod != nil {
				c.mod(s)
			}
			var got []string
			for _, to := range s.PlanTakeovers() {
				by := "wait"
				if to.Draining != "" {
					by += " (draining " + strings.Fields(to.Draining)[0] + ")"
				}
				if to.By != nil {
					by = to.By.Name() + " " + to.Mode.String()
				}
				if to.Escalates {
					by += " (escalates)"
				}
				got = append(got, fmt.Sprintf("%s: %s", to.Lost.ID, by))
			}
			if g := strings.Join(got, "; "); g != c.want {
				t.Errorf("takeovers = %q, want %q", g, c.want)
			}
		})
	}
}

func TestLostSlots(t *testing.T) {
	twoShards := plantest.Without(plantest.HealthyThreeByOne(), "c", "c2")
	leaving := func(f *plantest.FakeMember) { f.Leaving = true }
	cases := []struct {
		name   string
		fms    []plantest.FakeMember
		mod    func(*plan.Cluster)
		lost   string
		target string
	}{
		{name: "every slot served: nothing lost", fms: plantest.HealthyThreeByOne()},
		{
			name: "a shard's only server restarted without its data: its slots go back to it, empty",
			fms:  plantest.With(plantest.Without(plantest.HealthyThreeByOne(), "c2"), "c", func(f *plantest.FakeMember) { f.Slots = "" }),
			lost: "10923-16383", target: "c",
		},
		{
			name: "no primary without slots: the least loaded primary gets them",
			fms:  twoShards,
			lost: "10923-16383", target: "b",
		},
		{
			name: "primaries equally loaded: the lowest shard's gets them",
			fms:  plantest.With(twoShards, "a", func(f *plantest.FakeMember) { f.Slots = "0-5460" }),
			lost: "5461-5461,10923-16383", target: "a",
		},
		{
			name: "every primary leaving: the slots wait for one",
			fms:  plantest.With(plantest.With(twoShards, "a", leaving), "b", leaving),
			lost: "10923-16383",
		},
		{
			name: "a slot migrating: nothing is given while a migration is open",
			fms:  twoShards,
			mod:  func(s *plan.Cluster) { plantest.MemberNamed(t, s.Topo, "a").Self.Migrating = map[int]string{5: "B"} },
		},
		{
			name: "a cluster being created has no lost slots",
			fms: []plantest.FakeMember{
				{Name: "a", Shard: 0, IP: "10.0.0.1", ID: "A", Joining: true},
				{Name: "b", Shard: 1, IP: "10.0.0.2", ID: "B", Joining: true},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := plantest.ClusterFor(t, plantest.Cluster(nil), c.fms)
			if c.mod != nil {
				c.mod(s)
			}
			lost, target := s.LostSlots()
			var name string
			if target != nil {
				name = target.Name()
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
	aCameBack := plantest.With(plantest.With(plantest.HealthyThreeByOne(),
		"a2", func(f *plantest.FakeMember) { f.Primary, f.Slots = "", "0-5461" }),
		"a", func(f *plantest.FakeMember) { f.ID, f.Primary, f.Slots, f.LinkUp = "A-NEW", "A2", "", true })
	cases := []struct {
		name   string
		fms    []plantest.FakeMember
		extra  []valkey.ClusterNode
		mod    func(*plan.Cluster)
		forget string
		soon   bool
	}{
		{name: "no strangers: nothing to forget", fms: plantest.HealthyThreeByOne()},
		{
			name: "a stranger the cluster flags as failed is forgotten",
			fms:  plantest.HealthyThreeByOne(), extra: []valkey.ClusterNode{stranger(func(n *valkey.ClusterNode) { n.Fail = true })},
			forget: "OLD",
		},
		{
			name: "a stranger without an address is forgotten",
			fms:  plantest.HealthyThreeByOne(), extra: []valkey.ClusterNode{stranger(func(n *valkey.ClusterNode) { n.NoAddr = true })},
			forget: "OLD",
		},
		{
			name: "a stranger only suspected (PFAIL) is kept, and looked at again soon",
			fms:  plantest.HealthyThreeByOne(), extra: []valkey.ClusterNode{stranger(func(n *valkey.ClusterNode) { n.PFail = true })},
			soon: true,
		},
		{
			name: "a stranger that still talks may be a member whose new pod the operator has not seen: kept",
			fms:  plantest.HealthyThreeByOne(), extra: []valkey.ClusterNode{stranger(func(n *valkey.ClusterNode) { n.Connected = true })},
			soon: true,
		},
		{
			name:  "a failed primary a replica still follows is kept: the replica needs it known to take over",
			fms:   plantest.With(plantest.HealthyThreeByOne(), "a", func(f *plantest.FakeMember) { f.ID, f.Slots = "A-NEW", "" }),
			extra: []valkey.ClusterNode{plantest.OldIdentity("A", "0-5461", func(n *valkey.ClusterNode) { n.Fail = true })},
		},
		{
			name:   "the old identity of a member whose pod came back empty is forgotten at once",
			fms:    aCameBack,
			extra:  []valkey.ClusterNode{plantest.OldIdentity("A", "", func(n *valkey.ClusterNode) { n.PFail = true })},
			mod:    func(s *plan.Cluster) { plantest.MemberNamed(t, s.Topo, "a").Node.Status.NodeID = "A" },
			forget: "A",
		},
		{
			name:  "a failed stranger at the address of a member that does not answer may be that member: kept",
			fms:   plantest.With(plantest.HealthyThreeByOne(), "c2", func(f *plantest.FakeMember) { f.Down, f.ID = true, "" }),
			extra: []valkey.ClusterNode{{ID: "C2REAL", IP: "10.0.0.6", Port: 6379, Replica: true, PrimaryID: "C", Fail: true}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := plantest.ClusterFor(t, plantest.Cluster(nil), c.fms, c.extra...)
			if c.mod != nil {
				c.mod(s)
			}
			forget, soon := s.Topo.ToForget()
			if got := strings.Join(forget, ","); got != c.forget || soon != c.soon {
				t.Errorf("forget %q (soon %v), want %q (soon %v)", got, soon, c.forget, c.soon)
			}
		})
	}
}
func TestPromotionsKeepTheSpread(t *testing.T) {
	// Shard 0 has two replicas, on n2 (beside shard 1's primary) and on n3 (alone).
	fms := append(plantest.SpreadThreeByOne(),
		plantest.FakeMember{Name: "a3", Shard: 0, IP: "10.0.0.7", ID: "A3", Primary: "A", Offset: 100, LinkUp: true, Node: "n3"})
	fms = plantest.With(fms, "c", func(f *plantest.FakeMember) { f.Node = "n1" })
	fms = plantest.With(fms, "c2", func(f *plantest.FakeMember) { f.Node = "n2" })

	t.Run("a lost primary: of its replicas equally caught up, the one on the free node", func(t *testing.T) {
		s := plantest.PlacedCluster(t, plantest.With(fms, "a", func(f *plantest.FakeMember) {
			f.Down, f.Silent, f.Unflagged, f.ServerDown = true, time.Second, true, true
		}), nil)
		ts := s.PlanTakeovers()
		if len(ts) != 1 || ts[0].By == nil || ts[0].By.Name() != "a3" {
			t.Fatalf("takeovers %+v, want a3", ts)
		}
	})
	t.Run("a lost primary: the most caught up replica comes first, wherever it runs", func(t *testing.T) {
		s := plantest.PlacedCluster(t, plantest.With(plantest.With(fms, "a", func(f *plantest.FakeMember) {
			f.Down, f.Silent, f.Unflagged, f.ServerDown = true, time.Second, true, true
		}),
			"a2", func(f *plantest.FakeMember) { f.Offset = 120 }), nil)
		ts := s.PlanTakeovers()
		if len(ts) != 1 || ts[0].By == nil || ts[0].By.Name() != "a2" {
			t.Fatalf("takeovers %+v, want a2", ts)
		}
	})
	t.Run("a planned failover (roll, request, leaving primary): the replica in sync on the free node", func(t *testing.T) {
		s := plantest.PlacedCluster(t, fms, nil)
		if got := s.SpreadChoice(0, plan.ByOffset([]*plan.Member{plantest.MemberNamed(t, s.Topo, "a2"), plantest.MemberNamed(t, s.Topo, "a3")})); got.Name() != "a3" {
			t.Errorf("got %s, want a3", got.Name())
		}
	})
	t.Run("policy None: the most caught up, as before", func(t *testing.T) {
		s := plantest.PlacedCluster(t, fms, nil)
		s.Place = nil
		if got := s.SpreadChoice(0, plan.ByOffset([]*plan.Member{plantest.MemberNamed(t, s.Topo, "a2"), plantest.MemberNamed(t, s.Topo, "a3")})); got.Name() != "a2" {
			t.Errorf("got %s, want a2", got.Name())
		}
	})
}

// fiveByOne is five healthy shards of a primary and one replica each.
func fiveByOne() []plantest.FakeMember {
	slots := []string{"0-3276", "3277-6553", "6554-9830", "9831-13107", "13108-16383"}
	var fms []plantest.FakeMember
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		id := strings.ToUpper(name)
		fms = append(fms,
			plantest.FakeMember{Name: name, Shard: int32(i), IP: fmt.Sprintf("10.0.0.%d", i+1), ID: id, Slots: slots[i], Offset: 100},
			plantest.FakeMember{Name: name + "2", Shard: int32(i), IP: fmt.Sprintf("10.0.0.%d", i+11), ID: id + "2", Primary: id, Offset: 100, LinkUp: true})
	}
	return fms
}

func TestReplicationCycles(t *testing.T) {
	three := func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = 3 }
	loop := func(slotsOn string) []plantest.FakeMember {
		fms := plantest.With(plantest.HealthyThreeByOne(), "c", func(f *plantest.FakeMember) { f.Primary, f.Slots = "C2", "" })
		fms = plantest.With(fms, "c2", func(f *plantest.FakeMember) { f.LinkUp = false })
		switch slotsOn {
		case "c":
			fms = plantest.With(fms, "c", func(f *plantest.FakeMember) { f.Slots = "10923-16383" })
		case "c2":
			fms = plantest.With(fms, "c2", func(f *plantest.FakeMember) { f.Slots = "10923-16383" })
		}
		return fms
	}
	cases := []struct {
		name string
		fms  []plantest.FakeMember
		want string // "promoted<-other", joined by "; "
	}{
		{name: "a healthy cluster has no loop", fms: plantest.HealthyThreeByOne(), want: ""},
		{name: "a replica that follows a replica of another shard's primary is no loop",
			fms: plantest.With(plantest.HealthyThreeByOne(), "b2", func(f *plantest.FakeMember) { f.Primary = "A2" }), want: ""},
		{name: "two members replicate each other, the slots assigned to one: that one takes over", fms: loop("c"), want: "c<-c2"},
		{name: "the slots on the other one", fms: loop("c2"), want: "c2<-c"},
		{name: "before the slots are assigned: the shard's candidate takes over", fms: loop(""), want: "c<-c2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &plan.Cluster{VC: plantest.Cluster(three), Topo: plantest.Build(t, tc.fms)}
			var got []string
			for _, cb := range s.ReplicationCycles() {
				got = append(got, cb.By.Name()+"<-"+cb.Other.Name())
			}
			if g := strings.Join(got, "; "); g != tc.want {
				t.Errorf("got %q, want %q", g, tc.want)
			}
		})
	}
}
