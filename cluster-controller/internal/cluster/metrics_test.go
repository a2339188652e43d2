package cluster

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
)

// TestClusterMetrics checks the gauges a pass exports, in the exposition format a
// scraper reads.
func TestClusterMetrics(t *testing.T) {
	vc := plantest.Cluster(nil) // 3 shards, 1 replica each by default
	cases := []struct {
		name string
		fms  []plantest.FakeMember
		// want are lines of the exposition; names limits the comparison to these metrics.
		want  string
		names []string
	}{
		{
			name: "a replica behind and one whose link is down: lag per replica, in-sync replicas per shard",
			fms:  plantest.ThreeByOne(),
			want: `
# HELP valkey_operator_replica_lag_bytes How far a replica's replication offset is behind its primary's, in bytes.
# TYPE valkey_operator_replica_lag_bytes gauge
valkey_operator_replica_lag_bytes{cluster="vk",member="a2",namespace="ns",shard="0"} 0
valkey_operator_replica_lag_bytes{cluster="vk",member="b2",namespace="ns",shard="1"} 10
valkey_operator_replica_lag_bytes{cluster="vk",member="c2",namespace="ns",shard="2"} 0
# HELP valkey_operator_shard_replicas_in_sync Replicas of the shard linked to its primary and caught up.
# TYPE valkey_operator_shard_replicas_in_sync gauge
valkey_operator_shard_replicas_in_sync{cluster="vk",namespace="ns",shard="0"} 1
valkey_operator_shard_replicas_in_sync{cluster="vk",namespace="ns",shard="1"} 1
valkey_operator_shard_replicas_in_sync{cluster="vk",namespace="ns",shard="2"} 0
# HELP valkey_operator_cluster_shards_ready Shards whose primary serves slots with all replicas the spec asks for in sync.
# TYPE valkey_operator_cluster_shards_ready gauge
valkey_operator_cluster_shards_ready{cluster="vk",namespace="ns"} 2
# HELP valkey_operator_cluster_ready 1 when the cluster's Ready condition is True (it serves every slot with the redundancy the spec asks for).
# TYPE valkey_operator_cluster_ready gauge
valkey_operator_cluster_ready{cluster="vk",namespace="ns"} 0
`,
			names: []string{"valkey_operator_replica_lag_bytes", "valkey_operator_shard_replicas_in_sync",
				"valkey_operator_cluster_shards_ready", "valkey_operator_cluster_ready"},
		},
		{
			name: "a healthy cluster: members by role and lifecycle, slots, state",
			fms:  plantest.HealthyThreeByOne(),
			want: `
# HELP valkey_operator_cluster_members Members (ValkeyNodes) by shard, role the server reports (primary, replica, unknown when it does not answer) and lifecycle (Joining, Active, Leaving).
# TYPE valkey_operator_cluster_members gauge
valkey_operator_cluster_members{cluster="vk",lifecycle="Active",namespace="ns",role="primary",shard="0"} 1
valkey_operator_cluster_members{cluster="vk",lifecycle="Active",namespace="ns",role="primary",shard="1"} 1
valkey_operator_cluster_members{cluster="vk",lifecycle="Active",namespace="ns",role="primary",shard="2"} 1
valkey_operator_cluster_members{cluster="vk",lifecycle="Active",namespace="ns",role="replica",shard="0"} 1
valkey_operator_cluster_members{cluster="vk",lifecycle="Active",namespace="ns",role="replica",shard="1"} 1
valkey_operator_cluster_members{cluster="vk",lifecycle="Active",namespace="ns",role="replica",shard="2"} 1
# HELP valkey_operator_cluster_slots_assigned Slots (of 16384) some primary serves, as the servers report it.
# TYPE valkey_operator_cluster_slots_assigned gauge
valkey_operator_cluster_slots_assigned{cluster="vk",namespace="ns"} 16384
# HELP valkey_operator_shard_slots Slots the shard's primary serves.
# TYPE valkey_operator_shard_slots gauge
valkey_operator_shard_slots{cluster="vk",namespace="ns",shard="0"} 5462
valkey_operator_shard_slots{cluster="vk",namespace="ns",shard="1"} 5461
valkey_operator_shard_slots{cluster="vk",namespace="ns",shard="2"} 5461
# HELP valkey_operator_cluster_state 1 for the cluster's current status.state, 0 for the others.
# TYPE valkey_operator_cluster_state gauge
valkey_operator_cluster_state{cluster="vk",namespace="ns",state="Creating"} 0
valkey_operator_cluster_state{cluster="vk",namespace="ns",state="Degraded"} 0
valkey_operator_cluster_state{cluster="vk",namespace="ns",state="Failed"} 0
valkey_operator_cluster_state{cluster="vk",namespace="ns",state="Invalid"} 0
valkey_operator_cluster_state{cluster="vk",namespace="ns",state="Ready"} 1
valkey_operator_cluster_state{cluster="vk",namespace="ns",state="Scaling"} 0
valkey_operator_cluster_state{cluster="vk",namespace="ns",state="Updating"} 0
# HELP valkey_operator_cluster_rolling 1 while members need a new pod to match the spec (a roll is in progress or waiting).
# TYPE valkey_operator_cluster_rolling gauge
valkey_operator_cluster_rolling{cluster="vk",namespace="ns"} 0
# HELP valkey_operator_cluster_last_successful_pass_timestamp_seconds When the last pass over the cluster without an error ended (Unix seconds).
# TYPE valkey_operator_cluster_last_successful_pass_timestamp_seconds gauge
valkey_operator_cluster_last_successful_pass_timestamp_seconds{cluster="vk",namespace="ns"} 1.7959536e+09
`,
			names: []string{"valkey_operator_cluster_members", "valkey_operator_cluster_slots_assigned",
				"valkey_operator_shard_slots", "valkey_operator_cluster_state", "valkey_operator_cluster_rolling",
				"valkey_operator_cluster_last_successful_pass_timestamp_seconds"},
		},
		{
			name: "a roll: outdated members pending, a dead member of unknown role, a leaving one",
			fms: plantest.With(plantest.With(plantest.With(plantest.HealthyThreeByOne(), "a2", func(f *plantest.FakeMember) { f.Outdated = true }),
				"b", func(f *plantest.FakeMember) { f.Restarting = true }),
				"c2", func(f *plantest.FakeMember) { f.Down, f.Leaving = true, true }),
			want: `
# HELP valkey_operator_cluster_members Members (ValkeyNodes) by shard, role the server reports (primary, replica, unknown when it does not answer) and lifecycle (Joining, Active, Leaving).
# TYPE valkey_operator_cluster_members gauge
valkey_operator_cluster_members{cluster="vk",lifecycle="Active",namespace="ns",role="primary",shard="0"} 1
valkey_operator_cluster_members{cluster="vk",lifecycle="Active",namespace="ns",role="primary",shard="1"} 1
valkey_operator_cluster_members{cluster="vk",lifecycle="Active",namespace="ns",role="primary",shard="2"} 1
valkey_operator_cluster_members{cluster="vk",lifecycle="Active",namespace="ns",role="replica",shard="0"} 1
valkey_operator_cluster_members{cluster="vk",lifecycle="Active",namespace="ns",role="replica",shard="1"} 1
valkey_operator_cluster_members{cluster="vk",lifecycle="Leaving",namespace="ns",role="unknown",shard="2"} 1
# HELP valkey_operator_cluster_rolling 1 while members need a new pod to match the spec (a roll is in progress or waiting).
# TYPE valkey_operator_cluster_rolling gauge
valkey_operator_cluster_rolling{cluster="vk",namespace="ns"} 1
# HELP valkey_operator_cluster_roll_members_pending Members that still need a new pod to match the spec.
# TYPE valkey_operator_cluster_roll_members_pending gauge
valkey_operator_cluster_roll_members_pending{cluster="vk",namespace="ns"} 2
`,
			names: []string{"valkey_operator_cluster_members", "valkey_operator_cluster_rolling", "valkey_operator_cluster_roll_members_pending"},
		},
		{
			name: "a roll's successor in sync next to the outdated replica it replaces: rolling, not scaling",
			fms: append(plantest.With(plantest.HealthyThreeByOne(), "a2", func(f *plantest.FakeMember) { f.Outdated = true }),
				plantest.FakeMember{Name: "a3", Shard: 0, IP: "10.0.0.9", ID: "A3", Primary: "A", Offset: 100, LinkUp: true}),
			want: `
# HELP valkey_operator_cluster_rolling 1 while members need a new pod to match the spec (a roll is in progress or waiting).
# TYPE valkey_operator_cluster_rolling gauge
valkey_operator_cluster_rolling{cluster="vk",namespace="ns"} 1
# HELP valkey_operator_cluster_scaling 1 while slots move between shards or members of removed shards or surplus replicas leave.
# TYPE valkey_operator_cluster_scaling gauge
valkey_operator_cluster_scaling{cluster="vk",namespace="ns"} 0
`,
			names: []string{"valkey_operator_cluster_rolling", "valkey_operator_cluster_scaling"},
		},
		{
			name: "a scale to 4 shards whose new primary has joined: slots to move",
			fms: append(plantest.HealthyThreeByOne(),
				plantest.FakeMember{Name: "d", Shard: 3, IP: "10.0.0.7", ID: "D", Offset: 100},
				plantest.FakeMember{Name: "d2", Shard: 3, IP: "10.0.0.8", ID: "D2", Primary: "D", Offset: 100, LinkUp: true}),
			want: `
# HELP valkey_operator_cluster_scaling 1 while slots move between shards or members of removed shards or surplus replicas leave.
# TYPE valkey_operator_cluster_scaling gauge
valkey_operator_cluster_scaling{cluster="vk",namespace="ns"} 1
# HELP valkey_operator_cluster_scale_slots_pending Slots a scale still has to move to reach an even split.
# TYPE valkey_operator_cluster_scale_slots_pending gauge
valkey_operator_cluster_scale_slots_pending{cluster="vk",namespace="ns"} 4096
# HELP valkey_operator_shard_slots Slots the shard's primary serves.
# TYPE valkey_operator_shard_slots gauge
valkey_operator_shard_slots{cluster="vk",namespace="ns",shard="0"} 5462
valkey_operator_shard_slots{cluster="vk",namespace="ns",shard="1"} 5461
valkey_operator_shard_slots{cluster="vk",namespace="ns",shard="2"} 5461
valkey_operator_shard_slots{cluster="vk",namespace="ns",shard="3"} 0
`,
			names: []string{"valkey_operator_cluster_scaling", "valkey_operator_cluster_scale_slots_pending", "valkey_operator_shard_slots"},
		},
		{
			name: "shard 0's primary failed over next to shard 1's: not spread, one primary to move back",
			fms:  plantest.FailedOver(plantest.SpreadThreeByOne()),
			want: `
# HELP valkey_operator_cluster_primaries_spread 1 when the cluster's PrimariesSpread condition is True (the primaries are spread over nodes and zones as spec.primaryPlacement asks, or as evenly as the members' nodes allow), 0 when False; absent with policy None or while a primary's node is not known.
# TYPE valkey_operator_cluster_primaries_spread gauge
valkey_operator_cluster_primaries_spread{cluster="vk",namespace="ns"} 0
# HELP valkey_operator_cluster_primaries_misplaced Shards whose primary failback plans to move to another member to restore the spread.
# TYPE valkey_operator_cluster_primaries_misplaced gauge
valkey_operator_cluster_primaries_misplaced{cluster="vk",namespace="ns"} 1
`,
			names: []string{"valkey_operator_cluster_primaries_spread", "valkey_operator_cluster_primaries_misplaced"},
		},
		{
			name: "one primary per node and zone: spread",
			fms:  plantest.SpreadThreeByOne(),
			want: `
# HELP valkey_operator_cluster_primaries_spread 1 when the cluster's PrimariesSpread condition is True (the primaries are spread over nodes and zones as spec.primaryPlacement asks, or as evenly as the members' nodes allow), 0 when False; absent with policy None or while a primary's node is not known.
# TYPE valkey_operator_cluster_primaries_spread gauge
valkey_operator_cluster_primaries_spread{cluster="vk",namespace="ns"} 1
# HELP valkey_operator_cluster_primaries_misplaced Shards whose primary failback plans to move to another member to restore the spread.
# TYPE valkey_operator_cluster_primaries_misplaced gauge
valkey_operator_cluster_primaries_misplaced{cluster="vk",namespace="ns"} 0
`,
			names: []string{"valkey_operator_cluster_primaries_spread", "valkey_operator_cluster_primaries_misplaced"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vc := vc.DeepCopy()
			if strings.Contains(c.name, "scale to 4") {
				vc.Spec.Shards = 4
			}
			s := scopeFor(t, vc, c.fms)
			if c.fms[0].Node != "" {
				s.Place = plan.NewPlacement(&s.Cluster, v1alpha1.DefaultPlacementTopologyKey, plantest.ThreeZones, nil)
			}
			m := NewMetrics(prometheus.NewRegistry())
			m.observe(s, computeClusterStatus(s, nil), true)
			if err := testutil.CollectAndCompare(m, strings.NewReader(c.want), c.names...); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestMetricsForget checks that a failed pass keeps the last success's time, and that a
// deleted cluster's series go, counters included, while another cluster's stay.
func TestMetricsForget(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	vc := plantest.Cluster(nil)
	other := vc.DeepCopy()
	other.Name = "other"
	s := scopeFor(t, vc, plantest.HealthyThreeByOne())
	m.observe(s, computeClusterStatus(s, nil), true)
	m.observe(scopeFor(t, other, plantest.HealthyThreeByOne()), computeClusterStatus(s, nil), true)
	m.failover(vc, 1, kindPlanned)
	m.failover(other, 1, kindPlanned)
	m.reconcileError(types.NamespacedName{Namespace: "ns", Name: "vk"}, "roll")

	later := scopeFor(t, vc, plantest.HealthyThreeByOne())
	later.Topo.Now = plantest.T0.Add(time.Minute)
	m.observe(later, computeClusterStatus(later, nil), false)
	if got := testutil.ToFloat64(lastSuccessOf(t, m, "vk")); got != float64(plantest.T0.Unix()) {
		t.Errorf("last success after a failed pass = %v, want the earlier pass's %v", got, plantest.T0.Unix())
	}

	m.forget(types.NamespacedName{Namespace: "ns", Name: "vk"})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var clusters []string
	for _, mf := range mfs {
		for _, metric := range mf.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == "cluster" && !slices.Contains(clusters, l.GetValue()) {
					clusters = append(clusters, l.GetValue())
				}
			}
		}
	}
	if !slices.Equal(clusters, []string{"other"}) {
		t.Errorf("clusters with series after vk was forgotten: %v, want [other]", clusters)
	}
}

// TestZeroCounters checks that a cluster's counters exist at 0 from its first pass, one
// per shard and kind and one per phase, keep what was counted, and go with forget.
func TestZeroCounters(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	r := &Reconciler{}
	key := types.NamespacedName{Namespace: "ns", Name: "vk"}
	m.failover(plantest.Cluster(nil), 1, kindPlanned)
	m.zeroCounters(key, 3, r.errorPhases())
	if got := testutil.CollectAndCount(m.failovers); got != 9 {
		t.Errorf("%d failover series after a pass over 3 shards, want 9 (3 shards x planned, forced, elected)", got)
	}
	if got := testutil.ToFloat64(m.failovers.WithLabelValues("ns", "vk", "1", kindPlanned)); got != 1 {
		t.Errorf("planned failovers of shard 1 = %v after zeroCounters, want the 1 counted before", got)
	}
	phases := r.errorPhases()
	if got := testutil.CollectAndCount(m.reconcileErrors); got != len(phases) {
		t.Errorf("%d reconcile error series, want one per phase (%d: %v)", got, len(phases), phases)
	}
	for _, p := range []string{"observe", "roll", "scale", "status"} {
		if !slices.Contains(phases, p) {
			t.Errorf("phase %q is not a value of the phase label (%v)", p, phases)
		}
	}
	m.forget(key)
	if n := testutil.CollectAndCount(m.failovers) + testutil.CollectAndCount(m.reconcileErrors); n != 0 {
		t.Errorf("%d counter series left after forget", n)
	}
}

// lastSuccessOf is the last-successful-pass gauge of a cluster, as a collector.
func lastSuccessOf(t *testing.T, m *Metrics, name string) prometheus.Collector {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.clusters[types.NamespacedName{Namespace: "ns", Name: name}]
	if v == nil {
		t.Fatalf("no view of %s", name)
	}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "x"}, func() float64 { return float64(v.lastSuccess.Unix()) })
}

func TestElectedFailovers(t *testing.T) {
	vc := plantest.Cluster(nil)
	prev := []v1alpha1.ShardStatus{
		{Index: 0, Primary: "a2", Replicas: []string{"a"}}, // a was a2's replica and serves now
		{Index: 1, Primary: "b", Replicas: []string{"b2"}}, // unchanged
		{Index: 2, Primary: "x", Replicas: []string{"c2"}}, // c was no replica of shard 2's primary
	}
	s := scopeFor(t, vc, plantest.HealthyThreeByOne())
	if got := electedFailovers(prev, s, nil); !slices.Equal(got, []int32{0}) {
		t.Errorf("elected failovers = %v, want [0]", got)
	}
	if got := electedFailovers(prev, s, map[string]bool{"a": true}); len(got) != 0 {
		t.Errorf("elected failovers with the operator's request on a = %v, want none", got)
	}

	// The request is closed once the promotion is counted; a pass that still reads the
	// status of before it (a lagging cache) must not count it again as elected.
	m := NewMetrics(prometheus.NewRegistry())
	key := client.ObjectKeyFromObject(vc)
	m.promoted(key, "a", plantest.T0)
	if got := electedFailovers(prev, s, m.withPromotions(key, nil, plantest.T0.Add(10*time.Second))); len(got) != 0 {
		t.Errorf("elected failovers right after a planned promotion of a = %v, want none", got)
	}
	if got := electedFailovers(prev, s, m.withPromotions(key, nil, plantest.T0.Add(2*promotionMemory))); !slices.Equal(got, []int32{0}) {
		t.Errorf("elected failovers long after the planned promotion = %v, want [0]", got)
	}
}

// A pass that reads the status of before the previous pass's write (the cache lags) sees
// the failover that pass counted: it is compared with what that pass reported instead.
func TestElectedFailoverCountedOnceWhenTheStatusLags(t *testing.T) {
	vc := plantest.Cluster(nil)
	key := client.ObjectKeyFromObject(vc)
	stale := []v1alpha1.ShardStatus{
		{Index: 0, Primary: "a2", Replicas: []string{"a"}},
		{Index: 1, Primary: "b", Replicas: []string{"b2"}},
		{Index: 2, Primary: "c", Replicas: []string{"c2"}},
	}
	m := NewMetrics(prometheus.NewRegistry())
	if got := m.previousShards(key, stale); !equality.Semantic.DeepEqual(got, stale) {
		t.Fatalf("previous shards before any pass = %v, want the status's", got)
	}
	s := scopeFor(t, vc, plantest.HealthyThreeByOne())
	if got := electedFailovers(m.previousShards(key, stale), s, nil); !slices.Equal(got, []int32{0}) {
		t.Fatalf("first pass after the failover: elected = %v, want [0]", got)
	}
	m.observe(s, computeClusterStatus(s, nil), true)

	again := scopeFor(t, vc, plantest.HealthyThreeByOne())
	if got := electedFailovers(m.previousShards(key, stale), again, nil); len(got) != 0 {
		t.Errorf("next pass reading the stale status: elected = %v, want none", got)
	}
	m.forget(key)
	if got := m.previousShards(key, stale); !equality.Semantic.DeepEqual(got, stale) {
		t.Errorf("previous shards of a forgotten cluster = %v, want the status's", got)
	}
}
