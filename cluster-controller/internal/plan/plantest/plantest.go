// Package plantest builds the topologies the planners' table tests start from: fake
// members whose servers report what real ones would. It is test support for the plan
// package and for the cluster package's tests of what acts on the plans.
package plantest

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// FakeMember builds a member whose server reports the given CLUSTER NODES lines (its own
// line flagged myself), as a real server would.
type FakeMember struct {
	Name    string
	Shard   int32
	IP      string
	ID      string
	Primary string // primary's ID for a replica
	Slots   string // "0-5460"
	Offset  int64
	LinkUp  bool
	Down    bool // server does not answer
	// silent is, for a member that is down, how long ago the others last heard from it
	// (a minute when zero).
	Silent time.Duration
	// seenBy names the members that, for a member that is down, still reach it (a
	// partition between the operator and the member, not a death).
	SeenBy []string
	// unflagged: the member is down but nobody flags it yet (it died less than the node
	// timeout ago); serverDown: its ValkeyNode says Kubernetes saw its server exit.
	Unflagged, ServerDown bool
	Leaving               bool
	// joining: the member never became active (a new member); the others were.
	Joining bool
	// podNotReady is the reason of a PodReady condition that is False: the member's pod
	// cannot run (ImagePullBackOff, CrashLoop, ...).
	PodNotReady string
	// keys is the size of its dataset (INFO keyspace).
	Keys int64
	// For a Cluster built from them: outdated members run a pod the spec no longer asks for (an older
	// image); restarting members were authorised a new pod not rebuilt yet.
	Outdated, Restarting bool
	// locked: the member's server refuses the operator's login (its ValkeyNode says
	// OperatorLoginRefused): it does not answer the operator, the others see it as usual.
	Locked bool
	// node is the Kubernetes node its pod runs on (status.nodeName).
	Node string
	// epoch is its config epoch (the latest failover's primary has the highest).
	Epoch uint64
}

// T0 is the time of the topologies Build makes.
var T0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Build makes the topology whose members are fms, each server reporting the CLUSTER
// NODES lines of fms (and extra) as a real server would.
func Build(t *testing.T, fms []FakeMember, extra ...valkey.ClusterNode) *plan.Topology {
	t.Helper()
	var nodes []valkey.ClusterNode
	for _, f := range fms {
		if f.ID == "" {
			continue // a server whose ID nobody recorded: the others do not know it
		}
		n := valkey.ClusterNode{ID: f.ID, IP: f.IP, Port: 6379, BusPort: 16379, Connected: true, PongRecv: T0.UnixMilli(), ConfigEpoch: f.Epoch}
		if f.Primary != "" {
			n.Replica, n.PrimaryID = true, f.Primary
		} else {
			n.Primary = true
		}
		if f.Slots != "" {
			rs, err := valkey.ParseRanges(f.Slots)
			if err != nil {
				t.Fatal(err)
			}
			n.Slots = rs
		}
		if f.Down {
			n.PFail, n.Connected = !f.Unflagged, false
			silent := f.Silent
			if silent == 0 {
				silent = time.Minute
			}
			n.PongRecv = T0.Add(-silent).UnixMilli()
		}
		nodes = append(nodes, n)
	}
	nodes = append(nodes, extra...)
	seen := map[string]map[string]bool{} // member name -> IDs it reaches although they are down
	for _, f := range fms {
		for _, by := range f.SeenBy {
			if seen[by] == nil {
				seen[by] = map[string]bool{}
			}
			seen[by][f.ID] = true
		}
	}
	var members []*plan.Member
	for i, f := range fms {
		vn := &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{
			Name: f.Name, CreationTimestamp: metav1.NewTime(T0.Add(time.Duration(i) * time.Second)),
		}}
		vn.Spec.ShardIndex = f.Shard
		vn.Status.PodIP = f.IP
		vn.Status.NodeID = f.ID
		vn.Status.NodeName = f.Node
		if f.Leaving {
			now := metav1.NewTime(T0)
			vn.DeletionTimestamp = &now
		}
		if !f.Joining {
			vn.Status.Lifecycle = v1alpha1.LifecycleActive
		}
		if f.ServerDown {
			vn.Status.Conditions = append(vn.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionServerDown,
				Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonContainerExited, Message: "container server of pod p exited with code 137"})
		}
		if f.Locked {
			vn.Status.Conditions = append(vn.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionOperatorLoginRefused,
				Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPasswordRefused, Message: "WRONGPASS"})
		}
		if f.PodNotReady != "" {
			vn.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionPodReady, Status: metav1.ConditionFalse,
				Reason: f.PodNotReady, Message: "the pod does not run"}}
		}
		m := &plan.Member{Node: vn, Reachable: !f.Down && !f.Locked}
		if m.Reachable {
			for _, n := range nodes {
				v := n
				if n.ID == f.ID {
					v.Myself = true
					m.Self = v
				}
				if seen[f.Name][n.ID] {
					v.PFail, v.Connected, v.PongRecv = false, true, T0.UnixMilli()
				}
				m.View = append(m.View, v)
			}
			m.State = "ok"
			m.Keys, m.KeysKnown = f.Keys, true
			m.Repl = valkey.Replication{Role: valkey.RolePrimary, Offset: f.Offset}
			if f.Primary != "" {
				m.Repl = valkey.Replication{Role: valkey.RoleReplica, LinkUp: f.LinkUp, Offset: f.Offset}
			}
			m.Version = valkey.Version{Major: 8, Minor: 0, Patch: 1}
		}
		members = append(members, m)
	}
	// A primary lists its replicas whose link is up as online.
	for _, f := range fms {
		if f.Primary == "" || !f.LinkUp || f.Down {
			continue
		}
		for j, p := range fms {
			if p.ID == f.Primary && !p.Down {
				members[j].Repl.Replicas = append(members[j].Repl.Replicas, valkey.ReplicaInfo{IP: f.IP, Port: 6379, State: "online", Offset: f.Offset})
			}
		}
	}
	return plan.NewTopology(members, T0)
}

// ThreeByOne is three shards of a primary and a replica each: b2 lags behind its
// primary, c2's link is down.
func ThreeByOne() []FakeMember {
	return []FakeMember{
		{Name: "a", Shard: 0, IP: "10.0.0.1", ID: "A", Slots: "0-5461", Offset: 100},
		{Name: "b", Shard: 1, IP: "10.0.0.2", ID: "B", Slots: "5462-10922", Offset: 100},
		{Name: "c", Shard: 2, IP: "10.0.0.3", ID: "C", Slots: "10923-16383", Offset: 100},
		{Name: "a2", Shard: 0, IP: "10.0.0.4", ID: "A2", Primary: "A", Offset: 100, LinkUp: true},
		{Name: "b2", Shard: 1, IP: "10.0.0.5", ID: "B2", Primary: "B", Offset: 90, LinkUp: true},
		{Name: "c2", Shard: 2, IP: "10.0.0.6", ID: "C2", Primary: "C", Offset: 100, LinkUp: false},
	}
}

// HealthyThreeByOne is ThreeByOne with every replica in sync.
func HealthyThreeByOne() []FakeMember {
	fms := ThreeByOne()
	fms[5].LinkUp = true
	return fms
}

// With returns fms with the member named name changed by mod.
func With(fms []FakeMember, name string, mod func(*FakeMember)) []FakeMember {
	out := append([]FakeMember(nil), fms...)
	for i := range out {
		if out[i].Name == name {
			mod(&out[i])
			return out
		}
	}
	panic("no member " + name)
}

// Without returns fms without the members named names.
func Without(fms []FakeMember, names ...string) []FakeMember {
	var out []FakeMember
	for _, f := range fms {
		if !slices.Contains(names, f.Name) {
			out = append(out, f)
		}
	}
	return out
}

// Unknown removes node id from the views of the other members: they have not met it yet.
func Unknown(topo *plan.Topology, id string) {
	for _, m := range topo.Members {
		if m.ID() != id {
			m.View = slices.DeleteFunc(m.View, func(n valkey.ClusterNode) bool { return n.ID == id })
		}
	}
}

// MemberNamed returns the member called name.
func MemberNamed(t *testing.T, topo *plan.Topology, name string) *plan.Member {
	t.Helper()
	for _, m := range topo.Members {
		if m.Name() == name {
			return m
		}
	}
	t.Fatalf("no member %s", name)
	return nil
}

// SetView sets, in member name's view, the slots the entry of id shows.
func SetView(t *testing.T, topo *plan.Topology, name, id, slots string) {
	t.Helper()
	m := MemberNamed(t, topo, name)
	for i := range m.View {
		if m.View[i].ID != id {
			continue
		}
		rs, err := valkey.ParseRanges(slots)
		if slots != "" && err != nil {
			t.Fatal(err)
		}
		m.View[i].Slots = rs
		return
	}
	t.Fatalf("%s does not know %s", name, id)
}

// OldIdentity is the line the members keep for a node ID no member has any more, at the
// address of member a.
func OldIdentity(id, slots string, mod func(*valkey.ClusterNode)) valkey.ClusterNode {
	n := valkey.ClusterNode{ID: id, IP: "10.0.0.1", Port: 6379, BusPort: 16379, Primary: true,
		PongRecv: T0.Add(-time.Minute).UnixMilli()}
	if slots != "" {
		n.Slots, _ = valkey.ParseRanges(slots)
	}
	mod(&n)
	return n
}

// Cluster is a ValkeyCluster vk in namespace ns with the spec mod makes (the defaults
// for nil).
func Cluster(mod func(*v1alpha1.ValkeyClusterSpec)) *v1alpha1.ValkeyCluster {
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "vk", Namespace: "ns"}}
	if mod != nil {
		mod(&vc.Spec)
	}
	return vc
}

// OnNodes puts the members of fms on Kubernetes nodes: nodes maps a member to its node.
func OnNodes(fms []FakeMember, nodes map[string]string) []FakeMember {
	out := append([]FakeMember(nil), fms...)
	for i := range out {
		out[i].Node = nodes[out[i].Name]
	}
	return out
}

// SpreadThreeByOne is HealthyThreeByOne on three nodes, one primary each, every replica
// on another node than its primary.
func SpreadThreeByOne() []FakeMember {
	return OnNodes(HealthyThreeByOne(), map[string]string{"a": "n1", "b": "n2", "c": "n3", "a2": "n2", "b2": "n3", "c2": "n1"})
}

// FailedOver is fms after shard 0's replica a2 took over from a (a back as its replica,
// in sync): a2's config epoch is the newest.
func FailedOver(fms []FakeMember) []FakeMember {
	fms = With(fms, "a", func(f *FakeMember) { f.Primary, f.Slots, f.LinkUp = "A2", "", true })
	return With(fms, "a2", func(f *FakeMember) { f.Primary, f.Slots, f.LinkUp, f.Epoch = "", "0-5461", false, 9 })
}

// ThreeZones puts the nodes n1, n2 and n3 in zones z1, z2 and z3.
var ThreeZones = map[string]string{"n1": "z1", "n2": "z2", "n3": "z3"}

// PlacedCluster is the planners' input of a pass over a 3x1 cluster whose members are fms, with the
// placement read from zones; every member has been in sync for a minute.
func PlacedCluster(t *testing.T, fms []FakeMember, zones map[string]string) *plan.Cluster {
	t.Helper()
	s := ClusterFor(t, Cluster(nil), fms)
	for _, m := range s.Topo.Members {
		m.Node.Status.Conditions = append(m.Node.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionSynced,
			Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSynced, LastTransitionTime: metav1.NewTime(T0.Add(-time.Minute))})
	}
	s.Place = plan.NewPlacement(s, v1alpha1.DefaultPlacementTopologyKey, zones, nil)
	ServedLong(s)
	return s
}

// ServedLong makes every shard's primary serve for an hour already.
func ServedLong(s *plan.Cluster) {
	for i := range s.Place.Shards {
		s.Place.Shards[i].PrimaryFor = time.Hour
	}
}

// ClusterFor builds the planners' input of a pass over vc whose members are fms: each member's spec
// is the one vc asks for its shard, at revision 1 with its pod built for it, except the
// members marked outdated (an older image) or restarting (revision 2 authorised, the pod
// still at 1).
func ClusterFor(t *testing.T, vc *v1alpha1.ValkeyCluster, fms []FakeMember, extra ...valkey.ClusterNode) *plan.Cluster {
	t.Helper()
	topo := Build(t, fms, extra...)
	for _, f := range fms {
		m := MemberNamed(t, topo, f.Name)
		m.Node.Spec = plan.DesiredSpec(vc, m.Shard())
		m.Node.Spec.Revision, m.Node.Status.Revision = 1, 1
		if f.Outdated {
			m.Node.Spec.Image = "valkey/valkey:7.2"
		}
		if f.Restarting {
			m.Node.Spec.Revision = 2
		}
	}
	return &plan.Cluster{VC: vc, Topo: topo}
}

// WasReady marks the input's cluster as one that has been Ready.
func WasReady(c *plan.Cluster) {
	at := metav1.NewTime(T0.Add(-time.Hour))
	c.VC.Status.FirstReadyTime = &at
}
