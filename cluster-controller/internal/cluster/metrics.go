package cluster

import (
	"maps"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// Metrics are the operator's own metrics, served on the manager's metrics endpoint.
//
// The per-cluster gauges are a snapshot of what the last pass over each cluster saw (no
// call to Valkey is made for them): each pass replaces its cluster's snapshot whole, so
// a retired member's series disappear with the pass that no longer sees it, and a
// deleted cluster's series (counters included) go with forget. Label values are bounded
// by the spec: namespace, cluster, shard index, enums (role, lifecycle, state, kind,
// phase) and, for replication lag only, the member's name.
type Metrics struct {
	failovers       *prometheus.CounterVec
	reconcileErrors *prometheus.CounterVec
	primaryMoves    *prometheus.CounterVec

	mu       sync.Mutex
	clusters map[types.NamespacedName]*clusterView
	// promotions: when each member last took its shard over on the operator's request
	// (counted as planned or forced), per cluster.
	promotions map[types.NamespacedName]map[string]time.Time
	// shards: the shards as this process's last pass over each cluster reported them.
	shards map[types.NamespacedName][]v1alpha1.ShardStatus
}

// promotionMemory is how long a promotion on request is remembered: a pass that reads
// a status written before the promotion (the cache lags) must not count it as elected.
const promotionMemory = time.Minute

// Failover kinds of valkey_operator_failovers_total.
const (
	// kindElected: a failover the operator did not ask for, seen as a replica of the shard
	// (in the previous pass's status) now serving it: Valkey's own election after its
	// primary failed, or a CLUSTER FAILOVER asked by someone else.
	kindElected = "elected"
)

// clusterView is what one pass saw of a cluster, the source of its gauges.
type clusterView struct {
	shards, replicasPerShard, readyShards int32
	ready, degraded                       bool
	state                                 v1alpha1.ClusterState
	slotsAssigned                         int
	// members counts the members by shard, role and lifecycle.
	members map[memberKey]int
	// shardSlots and inSync are per shard: the slots its primary serves, its replicas in sync.
	shardSlots map[int32]int
	inSync     map[int32]int
	lag        []replicaLag
	// rollPending counts members that need a new pod; slotsToMove the slots a scale moves.
	rolling, scaling         bool
	rollPending, slotsToMove int
	// lastSuccess is the end of the last pass without an error (zero: none yet).
	lastSuccess time.Time
	// placed: policy Spread and PrimariesSpread known; spread: it is True; misplaced
	// counts the shards the plan moves.
	placed, spread bool
	misplaced      int
}

type memberKey struct {
	shard           int32
	role, lifecycle string
}

type replicaLag struct {
	shard  int32
	member string
	bytes  int64
}

var (
	labelsCluster = []string{"namespace", "cluster"}
	labelsShard   = []string{"namespace", "cluster", "shard"}

	descShards           = desc("cluster_shards", "Shards the cluster's spec asks for.", labelsCluster)
	descReplicasPerShard = desc("cluster_replicas_per_shard", "Replicas per shard the cluster's spec asks for.", labelsCluster)
	descReadyShards      = desc("cluster_shards_ready", "Shards whose primary serves slots with all replicas the spec asks for in sync.", labelsCluster)
	descReady            = desc("cluster_ready", "1 when the cluster's Ready condition is True (it serves every slot with the redundancy the spec asks for).", labelsCluster)
	descDegraded         = desc("cluster_degraded", "1 when the cluster's Degraded condition is True (serving without full redundancy, or slots without a primary).", labelsCluster)
	descState            = desc("cluster_state", "1 for the cluster's current status.state, 0 for the others.", []string{"namespace", "cluster", "state"})
	descSlotsAssigned    = desc("cluster_slots_assigned", "Slots (of 16384) some primary serves, as the servers report it.", labelsCluster)
	descMembers          = desc("cluster_members", "Members (ValkeyNodes) by shard, role the server reports (primary, replica, unknown when it does not answer) and lifecycle (Joining, Active, Leaving).", []string{"namespace", "cluster", "shard", "role", "lifecycle"})
	descShardSlots       = desc("shard_slots", "Slots the shard's primary serves.", labelsShard)
	descInSync           = desc("shard_replicas_in_sync", "Replicas of the shard linked to its primary and caught up.", labelsShard)
	descLag              = desc("replica_lag_bytes", "How far a replica's replication offset is behind its primary's, in bytes.", []string{"namespace", "cluster", "shard", "member"})
	descRolling          = desc("cluster_rolling", "1 while members need a new pod to match the spec (a roll is in progress or waiting).", labelsCluster)
	descRollPending      = desc("cluster_roll_members_pending", "Members that still need a new pod to match the spec.", labelsCluster)
	descScaling          = desc("cluster_scaling", "1 while slots move between shards or members of removed shards or surplus replicas leave.", labelsCluster)
	descSlotsToMove      = desc("cluster_scale_slots_pending", "Slots a scale still has to move to reach an even split.", labelsCluster)
	descLastSuccess      = desc("cluster_last_successful_pass_timestamp_seconds", "When the last pass over the cluster without an error ended (Unix seconds).", labelsCluster)
	descPrimariesSpread  = desc("cluster_primaries_spread", "1 when the cluster's PrimariesSpread condition is True (the primaries are spread over nodes and zones as spec.primaryPlacement asks, or as evenly as the members' nodes allow), 0 when False; absent with policy None or while a primary's node is not known.", labelsCluster)
	descPrimariesToMove  = desc("cluster_primaries_misplaced", "Shards whose primary failback plans to move to another member to restore the spread.", labelsCluster)

	allStates = []v1alpha1.ClusterState{v1alpha1.StateCreating, v1alpha1.StateReady, v1alpha1.StateUpdating,
		v1alpha1.StateScaling, v1alpha1.StateDegraded, v1alpha1.StateFailed, v1alpha1.StateInvalid}
)

func desc(name, help string, labels []string) *prometheus.Desc {
	return prometheus.NewDesc("valkey_operator_"+name, help, labels, nil)
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "valkey_operator_failovers_total",
			Help: "Failovers by cluster, shard and kind: planned (CLUSTER FAILOVER the operator asked of a replica in sync, counted once the replica serves the shard), forced (FORCE or TAKEOVER the operator asked after the primary's death was proven) or elected (a replica serves the shard without the operator having asked: Valkey's own election).",
		}, []string{"namespace", "cluster", "shard", "kind"}),
		reconcileErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "valkey_operator_cluster_reconcile_errors_total",
			Help: "Passes over a cluster that failed, by the phase that failed (observe, a phase of the pass, or status).",
		}, []string{"namespace", "cluster", "phase"}),
		primaryMoves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "valkey_operator_primary_moves_total",
			Help: "Planned failovers the operator made to restore the primaries' spread (failback), by cluster and shard, counted once the replica serves the shard; each is also counted as planned in valkey_operator_failovers_total.",
		}, []string{"namespace", "cluster", "shard"}),
		clusters:   map[types.NamespacedName]*clusterView{},
		promotions: map[types.NamespacedName]map[string]time.Time{},
		shards:     map[types.NamespacedName][]v1alpha1.ShardStatus{},
	}
	reg.MustRegister(m.failovers, m.reconcileErrors, m.primaryMoves, m)
	return m
}

func (m *Metrics) failover(vc *v1alpha1.ValkeyCluster, shard int32, kind string) {
	if m == nil {
		return
	}
	m.failovers.WithLabelValues(vc.Namespace, vc.Name, strconv.Itoa(int(shard)), kind).Inc()
}

// primaryMoved counts a failback move of shard's primary that completed.
func (m *Metrics) primaryMoved(vc *v1alpha1.ValkeyCluster, shard int32) {
	if m == nil {
		return
	}
	m.primaryMoves.WithLabelValues(vc.Namespace, vc.Name, strconv.Itoa(int(shard))).Inc()
}

// promoted notes that member took its shard over on the operator's request at time at.
func (m *Metrics) promoted(key types.NamespacedName, member string, at time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.promotions[key] == nil {
		m.promotions[key] = map[string]time.Time{}
	}
	m.promotions[key][member] = at
}

// withPromotions returns requested (the members with a failover request when the pass
// began) and the members promoted on request within promotionMemory before now.
func (m *Metrics) withPromotions(key types.NamespacedName, requested map[string]bool, now time.Time) map[string]bool {
	if m == nil {
		return requested
	}
	out := maps.Clone(requested)
	if out == nil {
		out = map[string]bool{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for member, at := range m.promotions[key] {
		if now.Sub(at) > promotionMemory {
			delete(m.promotions[key], member)
			continue
		}
		out[member] = true
	}
	return out
}

// previousShards returns the shards as the last pass of this process reported them, or
// fromStatus (the cluster's status as read) when no pass of this process reported any.
// The status read may lag behind the last pass's write (the cache), and a failover it
// does not show yet would be counted a second time.
func (m *Metrics) previousShards(key types.NamespacedName, fromStatus []v1alpha1.ShardStatus) []v1alpha1.ShardStatus {
	if m == nil {
		return fromStatus
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.shards[key]; ok {
		return prev
	}
	return fromStatus
}

// reconcileError counts a failed pass of a cluster in the phase that failed.
func (m *Metrics) reconcileError(key types.NamespacedName, phase string) {
	if m == nil {
		return
	}
	m.reconcileErrors.WithLabelValues(key.Namespace, key.Name, phase).Inc()
}

// observe replaces the cluster's snapshot with what pass s saw; ok says the pass ended
// without an error (at now).
func (m *Metrics) observe(s *scope, st clusterStatus, ok bool) {
	if m == nil {
		return
	}
	v := viewOf(s, st)
	key := types.NamespacedName{Namespace: s.VC.Namespace, Name: s.VC.Name}
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev := m.clusters[key]; prev != nil {
		v.lastSuccess = prev.lastSuccess
	}
	if ok {
		v.lastSuccess = s.Topo.Now
	}
	m.clusters[key] = v
	shards := make([]v1alpha1.ShardStatus, len(st.Shards))
	for i := range st.Shards {
		st.Shards[i].DeepCopyInto(&shards[i])
	}
	m.shards[key] = shards
}

// restChecked records a check at rest (rest.go) at now: the cluster is as the last
// pass left it, which counts as a pass without an error.
func (m *Metrics) restChecked(key types.NamespacedName, now time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v := m.clusters[key]; v != nil {
		v.lastSuccess = now
	}
}

// failoverKinds are the values of valkey_operator_failovers_total's kind label.
var failoverKinds = []string{kindPlanned, kindForced, kindElected}

// zeroCounters makes sure the cluster's counters exist, at 0 until something is counted:
// one per shard and failover kind, one per phase that can fail. A series that is born
// at 1 shows no increase() or rate() for its first failover or error, and a panel or an
// alert reads an absent series as no data rather than none happened.
func (m *Metrics) zeroCounters(key types.NamespacedName, shards int32, phases []string) {
	if m == nil {
		return
	}
	for sh := range shards {
		for _, kind := range failoverKinds {
			m.failovers.WithLabelValues(key.Namespace, key.Name, strconv.Itoa(int(sh)), kind)
		}
		m.primaryMoves.WithLabelValues(key.Namespace, key.Name, strconv.Itoa(int(sh)))
	}
	for _, p := range phases {
		m.reconcileErrors.WithLabelValues(key.Namespace, key.Name, p)
	}
}

// forget removes every series of a cluster that is gone.
func (m *Metrics) forget(key types.NamespacedName) {
	if m == nil {
		return
	}
	m.mu.Lock()
	delete(m.clusters, key)
	delete(m.promotions, key)
	delete(m.shards, key)
	m.mu.Unlock()
	l := prometheus.Labels{"namespace": key.Namespace, "cluster": key.Name}
	m.failovers.DeletePartialMatch(l)
	m.reconcileErrors.DeletePartialMatch(l)
	m.primaryMoves.DeletePartialMatch(l)
}

// viewOf derives a cluster's gauges from the pass's scope and the status it computed.
func viewOf(s *scope, st clusterStatus) *clusterView {
	v := &clusterView{
		shards: s.Shards(), replicasPerShard: s.Replicas(), readyShards: st.ReadyShards, state: st.State,
		ready:         conditions.IsTrue(st.Conditions, v1alpha1.ConditionReady),
		degraded:      conditions.IsTrue(st.Conditions, v1alpha1.ConditionDegraded),
		slotsAssigned: s.Topo.CoveredSlots(),
		members:       map[memberKey]int{}, shardSlots: map[int32]int{}, inSync: map[int32]int{},
	}
	for _, mb := range s.Topo.Members {
		role := "unknown"
		switch {
		case mb.IsPrimary():
			role = "primary"
		case mb.Reachable && mb.Self.Replica:
			role = "replica"
		}
		v.members[memberKey{shard: mb.Shard(), role: role, lifecycle: string(computeMemberStatus(s, mb).Lifecycle)}]++
		if !mb.Leaving() && (needsNewPod(s, mb) || mb.Restarting()) {
			v.rollPending++
		}
	}
	v.rolling = v.rollPending > 0
	for sh := range s.Topo.Shards {
		p := s.Topo.PrimaryOf(sh)
		if p == nil {
			v.shardSlots[sh] = 0
			v.inSync[sh] = 0
			continue
		}
		v.shardSlots[sh] = valkey.CountSlots(p.Slots())
		v.inSync[sh] = 0
		for _, mb := range s.Topo.Shards[sh] {
			if mb == p || !mb.Reachable || !mb.Self.Replica || mb.Self.PrimaryID != p.ID() || !p.Reachable {
				continue
			}
			if plan.Synced(mb, p) && !mb.Leaving() {
				v.inSync[sh]++
			}
			lag := p.Repl.Offset - mb.Repl.Offset
			if lag < 0 {
				lag = 0
			}
			v.lag = append(v.lag, replicaLag{shard: sh, member: mb.Name(), bytes: lag})
		}
	}
	for sh := int32(0); sh < s.Shards(); sh++ {
		if _, ok := v.inSync[sh]; !ok {
			v.inSync[sh], v.shardSlots[sh] = 0, 0
		}
	}
	if s.mayAct() && !s.ScaleHeld() {
		p := s.PlanScale()
		v.slotsToMove = p.Slots
		// A roll's successors are surplus replicas of their shard until the old members
		// leave: that is the roll, not a scale.
		surplusOfRoll := p.Step == plan.ScaleRetireSurplusReplicas && v.rolling
		v.scaling = (p.Step != plan.ScaleNothing && !surplusOfRoll) || s.Topo.OpenSlots()
	}
	sort.Slice(v.lag, func(i, j int) bool { return v.lag[i].member < v.lag[j].member })
	if c := conditions.Get(st.Conditions, v1alpha1.ConditionPrimariesSpread); c != nil && c.Status != metav1.ConditionUnknown && s.Place != nil {
		v.placed, v.spread, v.misplaced = true, c.Status == metav1.ConditionTrue, len(s.Place.Plan.Moves)
	}
	return v
}

// needsNewPod reports whether a member needs a new pod for the spec.
func needsNewPod(s *scope, m *plan.Member) bool {
	o, _ := s.Outdated(m)
	return o
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descShards, descReplicasPerShard, descReadyShards, descReady, descDegraded,
		descState, descSlotsAssigned, descMembers, descShardSlots, descInSync, descLag, descRolling, descRollPending,
		descScaling, descSlotsToMove, descLastSuccess, descPrimariesSpread, descPrimariesToMove} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the gauges of every cluster's last pass.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, v := range m.clusters {
		ns, name := key.Namespace, key.Name
		gauge := func(d *prometheus.Desc, val float64, extra ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, val, append([]string{ns, name}, extra...)...)
		}
		gauge(descShards, float64(v.shards))
		gauge(descReplicasPerShard, float64(v.replicasPerShard))
		gauge(descReadyShards, float64(v.readyShards))
		gauge(descReady, b2f(v.ready))
		gauge(descDegraded, b2f(v.degraded))
		if v.state != "" {
			for _, st := range allStates {
				gauge(descState, b2f(st == v.state), string(st))
			}
		}
		gauge(descSlotsAssigned, float64(v.slotsAssigned))
		for k, n := range v.members {
			gauge(descMembers, float64(n), shardLabel(k.shard), k.role, k.lifecycle)
		}
		for sh, n := range v.shardSlots {
			gauge(descShardSlots, float64(n), shardLabel(sh))
		}
		for sh, n := range v.inSync {
			gauge(descInSync, float64(n), shardLabel(sh))
		}
		for _, l := range v.lag {
			gauge(descLag, float64(l.bytes), shardLabel(l.shard), l.member)
		}
		gauge(descRolling, b2f(v.rolling))
		gauge(descRollPending, float64(v.rollPending))
		gauge(descScaling, b2f(v.scaling))
		gauge(descSlotsToMove, float64(v.slotsToMove))
		if !v.lastSuccess.IsZero() {
			gauge(descLastSuccess, float64(v.lastSuccess.UnixMilli())/1000)
		}
		if v.placed {
			gauge(descPrimariesSpread, b2f(v.spread))
			gauge(descPrimariesToMove, float64(v.misplaced))
		}
	}
}

func shardLabel(sh int32) string { return strconv.Itoa(int(sh)) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// electedFailovers lists the shards whose primary changed since the previous pass's
// report to a member that was its replica then, without the operator having asked that
// member to take over (no failover request on it when this pass began).
func electedFailovers(prev []v1alpha1.ShardStatus, s *scope, requested map[string]bool) []int32 {
	var out []int32
	for _, st := range prev {
		if st.Primary == "" {
			continue
		}
		p := s.Topo.PrimaryOf(st.Index)
		if p == nil || p.Name() == st.Primary || len(p.Slots()) == 0 || requested[p.Name()] {
			continue
		}
		for _, r := range st.Replicas {
			if r == p.Name() {
				out = append(out, st.Index)
				break
			}
		}
	}
	return out
}

// failoverRequests names the members that carried a failover request when read.
func failoverRequests(nodes []*v1alpha1.ValkeyNode) map[string]bool {
	out := map[string]bool{}
	for _, vn := range nodes {
		if _, ok := plan.FailoverRecord(&plan.Member{Node: vn}); ok {
			out[vn.Name] = true
		}
	}
	return out
}
