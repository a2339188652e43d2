package cluster

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
	"github.com/valkey-operator/valkey-operator/internal/guard"
)

func TestPlacementCondition(t *testing.T) {
	cases := []struct {
		name  string
		fms   []plantest.FakeMember
		zones map[string]string
		mod   func(*scope)
		want  string
	}{
		{
			name: "one primary per node and zone",
			fms:  plantest.SpreadThreeByOne(), zones: plantest.ThreeZones,
			want: "True Spread: the 3 primaries run on 3 nodes in 3 zones (topology.kubernetes.io/zone), none beside a replica of its own shard",
		},
		{
			name: "nodes without zones",
			fms:  plantest.SpreadThreeByOne(),
			want: "True Spread: the 3 primaries run on 3 nodes, none beside a replica of its own shard",
		},
		{
			name: "shard 0 failed over next to shard 1's primary: not spread, the move back is planned",
			fms:  plantest.FailedOver(plantest.SpreadThreeByOne()), zones: plantest.ThreeZones,
			want: "False NotSpread: node n2 holds the primaries of shards 0, 1; zone z2 holds the primaries of shards 0, 1; " +
				"planned: shard 0 to a on node n1 (zone z1)",
		},
		{
			name: "the same while the cluster is paused",
			fms:  plantest.FailedOver(plantest.SpreadThreeByOne()), zones: plantest.ThreeZones,
			mod: func(s *scope) { s.paused = true },
			want: "False NotSpread: node n2 holds the primaries of shards 0, 1; zone z2 holds the primaries of shards 0, 1; " +
				"planned: shard 0 to a on node n1 (zone z1); the cluster is paused",
		},
		{
			name: "every member on two nodes: the best they allow",
			fms:  plantest.OnNodes(plantest.HealthyThreeByOne(), map[string]string{"a": "n1", "b": "n2", "c": "n1", "a2": "n2", "b2": "n1", "c2": "n2"}),
			want: "True BestPossible: as evenly as the nodes the members run on allow: node n1 holds the primaries of shards 0, 2",
		},
		{
			name: "a primary whose node is not known yet",
			fms:  plantest.With(plantest.SpreadThreeByOne(), "b", func(f *plantest.FakeMember) { f.Node = "" }),
			want: "Unknown Unknown: the node of the primary of shard 1 is not known yet",
		},
		{
			name: "the labels of a node cannot be read",
			fms:  plantest.SpreadThreeByOne(),
			mod:  func(s *scope) { s.Place.Unread = []string{"n3 (nodes \"n3\" is forbidden)"} },
			want: "True Spread: the 3 primaries run on 3 nodes, none beside a replica of its own shard; " +
				"the labels of nodes n3 (nodes \"n3\" is forbidden) cannot be read: their zones are not known",
		},
		{
			name: "policy None",
			fms:  plantest.FailedOver(plantest.SpreadThreeByOne()),
			mod:  func(s *scope) { s.Place = nil },
			want: "Unknown PlacementOff: spec.primaryPlacement.policy is None: the operator neither checks nor restores where the primaries run",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := placedScope(t, tc.fms, tc.zones)
			if tc.mod != nil {
				tc.mod(s)
			}
			if got := condString(placementCondition(s, 1)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestFailbackWaitsForTheCluster(t *testing.T) {
	cases := []struct {
		name string
		fms  []plantest.FakeMember
		mod  func(*scope)
		// want is the move ("shard:from>to") or why it waits.
		want string
	}{
		{name: "a healthy cluster with a shard out of place: the move back", fms: plantest.FailedOver(plantest.SpreadThreeByOne()), want: "0:a2>a"},
		{
			name: "a roll in flight",
			fms:  plantest.FailedOver(plantest.SpreadThreeByOne()),
			mod:  func(s *scope) { s.progress(v1alpha1.ReasonRolling, "shard 1: retiring outdated replica b2") },
			want: "waiting for the cluster to finish what it is doing (Rolling)",
		},
		{
			name: "a replica of another shard not in sync",
			fms:  plantest.With(plantest.FailedOver(plantest.SpreadThreeByOne()), "c2", func(f *plantest.FakeMember) { f.LinkUp = false }),
			want: "waiting for the cluster to be Ready, every replica in sync",
		},
		{
			name: "a failover the user asked for",
			fms:  plantest.FailedOver(plantest.SpreadThreeByOne()),
			mod:  func(s *scope) { s.VC.Annotations = map[string]string{v1alpha1.AnnotationFailover: "1"} },
			want: "waiting for the requested failover",
		},
		{
			name: "a takeover in flight",
			fms:  plantest.FailedOver(plantest.SpreadThreeByOne()),
			mod: func(s *scope) {
				plantest.MemberNamed(t, s.Topo, "c2").Node.Status.Failover = &v1alpha1.MemberFailover{Kind: v1alpha1.FailoverForced, RequestedAt: metav1.NewMicroTime(plantest.T0.Add(-time.Second))}
			},
			want: "waiting for c2 to complete its takeover of shard 2",
		},
		{
			name: "the member back in sync for 4 s only",
			fms:  plantest.FailedOver(plantest.SpreadThreeByOne()),
			mod: func(s *scope) {
				a := plantest.MemberNamed(t, s.Topo, "a")
				a.Node.Status.Conditions[len(a.Node.Status.Conditions)-1].LastTransitionTime = metav1.NewTime(plantest.T0.Add(-4 * time.Second))
				s.Place = plan.NewPlacement(&s.Cluster, v1alpha1.DefaultPlacementTopologyKey, nil, nil)
				plantest.ServedLong(&s.Cluster)
			},
			want: "shard 0: a takes over once it has been in sync for 10s (4s so far)",
		},
		{
			name: "shard 0's primary took over 3 s ago: Valkey's voters wait 2 x cluster-node-timeout (5 s) + 2 s",
			fms:  plantest.FailedOver(plantest.SpreadThreeByOne()),
			mod:  func(s *scope) { s.Place.Shards[0].PrimaryFor = 3 * time.Second },
			want: "shard 0: a takes over once a2 has served for 12s, when the primaries vote on the shard again (3s so far)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := placedScope(t, tc.fms, nil)
			if tc.mod != nil {
				tc.mod(s)
			}
			f := plan.PlanFailback(s.Place.Shards, s.Place.Plan, s.failbackBusy(), plan.FailbackTiming{Hold: DefaultFailbackHold, Votes: s.VoteWindow()})
			got := f.Wait
			if f.Move != nil {
				got = f.Move.From.Name + ">" + f.Move.To.Name
				got = strings.Join([]string{"0", got}, ":")
				if f.Move.Shard != 0 {
					t.Fatalf("moves shard %d", f.Move.Shard)
				}
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestShardStatusesNameThePrimaryNodeAndZone(t *testing.T) {
	s := placedScope(t, plantest.FailedOver(plantest.SpreadThreeByOne()), plantest.ThreeZones)
	st := shardStatuses(s)
	got := []string{}
	for _, sh := range st {
		got = append(got, sh.Primary+"@"+sh.PrimaryNode+"/"+sh.PrimaryZone)
	}
	if want := "a2@n2/z2 b@n2/z2 c@n3/z3"; strings.Join(got, " ") != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

// placedScope is the scope of a pass over a 3x1 cluster whose members are fms, with the
// placement read from zones (plantest.PlacedCluster).
func placedScope(t *testing.T, fms []plantest.FakeMember, zones map[string]string) *scope {
	t.Helper()
	c := plantest.PlacedCluster(t, fms, zones)
	return &scope{Cluster: *c, guard: guard.Check(c.VC)}
}
