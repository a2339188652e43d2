package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/status"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
	"github.com/valkey-operator/valkey-operator/valkeyconf/redact"
)

// clusterStatus holds the ValkeyCluster status fields this controller owns.
type clusterStatus struct {
	ObservedGeneration int64                  `json:"observedGeneration,omitempty"`
	State              v1alpha1.ClusterState  `json:"state,omitempty"`
	ReadyShards        int32                  `json:"readyShards"`
	FirstReadyTime     *metav1.Time           `json:"firstReadyTime,omitempty"`
	Shards             []v1alpha1.ShardStatus `json:"shards,omitempty"`
	SeedEndpoints      []string               `json:"seedEndpoints,omitempty"`
	// AppliedSpec is the spec of the last pass that acted on a valid spec.
	AppliedSpec *v1alpha1.ValkeyClusterSpec `json:"appliedSpec,omitempty"`
	// Failover answers the valkey.io/failover annotation.
	Failover   *v1alpha1.FailoverRequestStatus `json:"failover,omitempty"`
	Conditions []metav1.Condition              `json:"conditions"`
}

// clusterConditionTypes are the ValkeyCluster conditions this controller owns.
var clusterConditionTypes = []string{
	v1alpha1.ConditionReady, v1alpha1.ConditionProgressing, v1alpha1.ConditionDegraded,
	v1alpha1.ConditionClusterFormed, v1alpha1.ConditionSlotsAssigned,
	v1alpha1.ConditionConfigurationWarning, v1alpha1.ConditionPodUnschedulable, v1alpha1.ConditionInvalidSpec,
	v1alpha1.ConditionPaused, v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled,
	v1alpha1.ConditionExternalAddressPending, v1alpha1.ConditionPrimariesSpread,
}

// memberStatus holds the ValkeyNode status fields this controller owns.
type memberStatus struct {
	NodeID          string             `json:"nodeID,omitempty"`
	Lifecycle       v1alpha1.Lifecycle `json:"lifecycle,omitempty"`
	ExternalAddress string             `json:"externalAddress,omitempty"`
	Conditions      []metav1.Condition `json:"conditions"`
}

var memberConditionTypes = []string{v1alpha1.ConditionJoined, v1alpha1.ConditionSynced}

// writeStatus applies the cluster's and every member's status, skipping unchanged ones.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope, runErr error) error {
	var errs []error
	for _, m := range s.Topo.Members {
		// A member retired during this pass may be gone already: nothing to report on.
		if err := r.writeMemberStatus(ctx, s, m); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	vc := s.VC
	want := computeClusterStatus(s, runErr)
	r.reportStall(s, want.Conditions)
	want.Conditions = conditions.Resolve(vc.Status.Conditions, s.Topo.Now, want.Conditions...)
	s.reported = want
	r.warnOnTransitions(s, want.Conditions)
	have := clusterStatus{
		ObservedGeneration: vc.Status.ObservedGeneration, State: vc.Status.State, ReadyShards: vc.Status.ReadyShards,
		FirstReadyTime: vc.Status.FirstReadyTime, Shards: vc.Status.Shards, SeedEndpoints: vc.Status.SeedEndpoints, AppliedSpec: vc.Status.AppliedSpec,
		Failover: vc.Status.Failover, Conditions: conditions.Owned(vc.Status.Conditions, clusterConditionTypes...),
	}
	if !status.Equal(have, want) {
		err := status.Apply(ctx, r.Client, FieldManager, vc, v1alpha1.GroupVersion.WithKind("ValkeyCluster"), want)
		if err == nil {
			r.known.Store(vc.UID, vc.ResourceVersion) // the write's version, from its answer
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// warnOnTransitions emits the events users expect when a condition turns bad.
func (r *Reconciler) warnOnTransitions(s *scope, next []metav1.Condition) {
	for _, c := range next {
		old := conditions.Get(s.VC.Status.Conditions, c.Type)
		if old != nil && old.Status == c.Status && old.Reason == c.Reason {
			continue
		}
		switch {
		case c.Type == v1alpha1.ConditionConfigurationWarning && c.Status == metav1.ConditionTrue:
			r.event(s.VC, nil, eventWarning, c.Reason, "Validate", "%s", c.Message)
		case c.Type == v1alpha1.ConditionDegraded && c.Status == metav1.ConditionTrue:
			r.event(s.VC, nil, eventWarning, c.Reason, "Observe", "%s", c.Message)
		case c.Type == v1alpha1.ConditionInvalidSpec && c.Status == metav1.ConditionTrue:
			r.event(s.VC, nil, eventWarning, "InvalidSpec", "Validate", "%s", c.Message)
		case c.Type == v1alpha1.ConditionProgressing && c.Reason == v1alpha1.ReasonImmutableField:
			r.event(s.VC, nil, eventWarning, c.Reason, "Validate", "%s", c.Message)
		case c.Type == v1alpha1.ConditionProgressing && c.Reason == v1alpha1.ReasonReplyTooLarge:
			r.event(s.VC, nil, eventWarning, c.Reason, "Observe", "%s", c.Message)
		case c.Type == v1alpha1.ConditionProgressing && c.Reason == v1alpha1.ReasonRollBlocked:
			// Said once, when the roll stops; the members' own causes are told by
			// reportMemberCauses (a member that cannot run, under its reason).
			r.event(s.VC, nil, eventWarning, c.Reason, "Roll", "%s", c.Message)
		case c.Type == v1alpha1.ConditionReady && c.Status == metav1.ConditionTrue:
			r.event(s.VC, nil, eventNormal, "Ready", "Observe", "%s", c.Message)
		case c.Type == v1alpha1.ConditionPaused && c.Status == metav1.ConditionTrue:
			r.event(s.VC, nil, eventNormal, "Paused", "Pause", "%s", c.Message)
		case c.Type == v1alpha1.ConditionPaused && old != nil && old.Status == metav1.ConditionTrue:
			r.event(s.VC, nil, eventNormal, "Resumed", "Pause", "the cluster is resumed: planned changes start again")
		}
	}
}

func computeClusterStatus(s *scope, runErr error) clusterStatus {
	vc := s.VC
	gen := vc.Generation
	st := clusterStatus{ObservedGeneration: vc.Status.ObservedGeneration, AppliedSpec: vc.Status.AppliedSpec}
	if runErr == nil && s.mayAct() && !s.pending {
		// A paused cluster whose spec changed has not acted on it: its generation waits.
		st.ObservedGeneration = gen
		st.AppliedSpec = vc.Spec.DeepCopy()
	}
	st.Shards = shardStatuses(s)
	st.SeedEndpoints = seedEndpoints(s)
	st.Failover = failoverRequestStatus(s)
	st.ReadyShards = s.ShardsReady()
	ready := s.credErr == nil && s.Ready()
	applied := ready && s.mayAct() && runErr == nil && s.applied() && !s.pending
	degraded := degradedCondition(s, gen)

	progressing := conditions.New(v1alpha1.ConditionProgressing, false, v1alpha1.ReasonReconciled, "the cluster is as the spec asks", gen)
	readyCond := conditions.New(v1alpha1.ConditionReady, true, v1alpha1.ReasonClusterReady,
		fmt.Sprintf("%d shards with %d replicas each serve all %d slots", s.Shards(), s.Replicas(), plan.SlotCount), gen)
	if !applied {
		reason, msg := s.step.reason, s.step.message
		switch {
		case !s.guard.Valid():
			reason, msg = v1alpha1.ReasonInvalid, s.heldMessage()
		case len(s.immutable) > 0:
			reason, msg = v1alpha1.ReasonImmutableField, s.heldMessage()
		case s.credErr != nil:
			reason, msg = waitingForCredentials(s.credErr)
		case runErr != nil:
			reason, msg = v1alpha1.ReasonReconcileError, runErr.Error()
		case reason == "" && s.paused && ready:
			reason, msg = v1alpha1.ReasonPaused, "the cluster is paused ("+v1alpha1.AnnotationPaused+"): planned changes wait until it is resumed"
		case reason == "" && len(s.ExternalPending()) > 0:
			reason, msg = v1alpha1.ReasonAddressPending, "waiting for external addresses: "+strings.Join(s.ExternalPending(), "; ")
		case reason == "" && len(s.ExternalUnseen()) > 0:
			reason, msg = v1alpha1.ReasonAddressNotPropagated, "waiting for the members to learn each other's external addresses: "+strings.Join(s.ExternalUnseen(), "; ")
		case reason == "":
			reason, msg = v1alpha1.ReasonWaitingForSync, fmt.Sprintf("%d of %d shards ready", st.ReadyShards, s.Shards())
		}
		if !ready {
			readyCond = conditions.New(v1alpha1.ConditionReady, false, reason, msg, gen)
		}
		if s.mayAct() {
			progressing = conditions.New(v1alpha1.ConditionProgressing, true, reason, msg, gen)
		} else {
			progressing = conditions.New(v1alpha1.ConditionProgressing, false, reason, msg, gen)
		}
	}
	st.Conditions = []metav1.Condition{
		readyCond, progressing, degraded, formedCondition(s, gen), slotsCondition(s, gen),
		warningCondition(s.guard.ConfigWarnings, vc, gen), unschedulableCondition(s, gen), s.guard.Condition,
		pausedCondition(s, gen), externalCondition(s, gen), placementCondition(s, gen),
	}
	st.State = clusterState(s, applied, degraded)
	holdForRestore(vc, &st)
	st.FirstReadyTime = vc.Status.FirstReadyTime
	if st.FirstReadyTime == nil && conditions.IsTrue(st.Conditions, v1alpha1.ConditionReady) {
		now := metav1.NewTime(s.Topo.Now)
		st.FirstReadyTime = &now
	}
	st.Conditions = append(st.Conditions, kstatusConditions(*conditions.Get(st.Conditions, v1alpha1.ConditionProgressing),
		*conditions.Get(st.Conditions, v1alpha1.ConditionReady), st.State, gen)...)
	return st
}

// waitingForCredentials is the reason and message of a pass without the operator's
// credentials: the status field its producer has not written yet and what the
// producer's condition says, or the acl-controller's Secret that cannot be read.
func waitingForCredentials(err error) (string, string) {
	if np := (*v1alpha1.NotPublishedError)(nil); errors.As(err, &np) {
		return np.Reason, np.Error()
	}
	return v1alpha1.ReasonWaitingForACL, "waiting for the acl-controller to publish the operator's credentials"
}

// pausedCondition reports the valkey.io/paused annotation: what holds and what goes on.
func pausedCondition(s *scope, gen int64) metav1.Condition {
	if !s.paused {
		return conditions.New(v1alpha1.ConditionPaused, false, v1alpha1.ReasonNotPaused, "planned changes are applied", gen)
	}
	return conditions.New(v1alpha1.ConditionPaused, true, v1alpha1.ReasonPaused,
		"paused by the "+v1alpha1.AnnotationPaused+" annotation: no roll, scale or live config change starts; lost members are still replaced", gen)
}

// kstatusConditions are the conditions kstatus (Flux, kpt, cli-utils) reads: Reconciling,
// the same as Progressing unless stalled, and Stalled, True when nothing moves until a user acts (the
// spec is invalid or changes a field that cannot change, a roll is blocked, or members
// cannot run and the cluster is not Ready).
func kstatusConditions(progressing, ready metav1.Condition, state v1alpha1.ClusterState, gen int64) []metav1.Condition {
	reconciling := progressing
	reconciling.Type = v1alpha1.ConditionReconciling
	stalled := conditions.New(v1alpha1.ConditionStalled, false, v1alpha1.ReasonNotStalled, "the operator can apply the spec", gen)
	switch {
	case state == v1alpha1.StateInvalid, progressing.Reason == v1alpha1.ReasonRollBlocked:
		stalled = conditions.New(v1alpha1.ConditionStalled, true, progressing.Reason, progressing.Message, gen)
	case state == v1alpha1.StateFailed:
		stalled = conditions.New(v1alpha1.ConditionStalled, true, ready.Reason, ready.Message, gen)
	}
	if stalled.Status == metav1.ConditionTrue {
		// Nothing moves: kstatus reads the first of Reconciling and Stalled that is True.
		reconciling = conditions.New(v1alpha1.ConditionReconciling, false, stalled.Reason, stalled.Message, gen)
	}
	return []metav1.Condition{reconciling, stalled}
}

func clusterState(s *scope, ready bool, degraded metav1.Condition) v1alpha1.ClusterState {
	switch {
	case !s.mayAct():
		return v1alpha1.StateInvalid
	case ready:
		return v1alpha1.StateReady
	case plan.BlockingReasons[s.step.reason] && !s.Ready():
		// Members cannot run and will not until something is fixed (Ready says what).
		return v1alpha1.StateFailed
	case plan.Empty(s.Topo):
		return v1alpha1.StateCreating
	case degraded.Status == metav1.ConditionTrue:
		return v1alpha1.StateDegraded
	}
	switch s.step.reason {
	case v1alpha1.ReasonScalingOut, v1alpha1.ReasonScalingIn, v1alpha1.ReasonMigratingSlots,
		v1alpha1.ReasonAddingReplicas, v1alpha1.ReasonRemovingReplicas:
		return v1alpha1.StateScaling
	}
	return v1alpha1.StateUpdating
}

func degradedCondition(s *scope, gen int64) metav1.Condition {
	if s.credErr == nil && plan.Empty(s.Topo) && s.VC.Status.FirstReadyTime != nil {
		why := "no member answers"
		if len(s.Topo.Reachable()) > 0 {
			why = "no member that answers serves one"
		}
		return conditions.New(v1alpha1.ConditionDegraded, true, v1alpha1.ReasonSlotsUncovered, "no server serves any slot (0-16383): "+why, gen)
	}
	if s.credErr != nil || plan.Empty(s.Topo) {
		return conditions.New(v1alpha1.ConditionDegraded, false, v1alpha1.ReasonWaiting, "the cluster is being created", gen)
	}
	if lost := s.Topo.LostPrimaries(); len(lost) > 0 {
		ids := make([]string, len(lost))
		for i, lp := range lost {
			ids[i] = fmt.Sprintf("%s (slots %s)", plan.ShortID(lp.ID), valkey.FormatRanges(lp.Slots))
		}
		return conditions.New(v1alpha1.ConditionDegraded, true, v1alpha1.ReasonPrimaryLost,
			"primaries not answering: "+strings.Join(ids, ", "), gen)
	}
	if covered := s.Topo.CoveredSlots(); covered < plan.SlotCount {
		return conditions.New(v1alpha1.ConditionDegraded, true, v1alpha1.ReasonSlotsUncovered,
			fmt.Sprintf("%d of %d slots have no primary: requests to them fail", plan.SlotCount-covered, plan.SlotCount), gen)
	}
	var missing []string
	for sh := int32(0); sh < s.Shards(); sh++ {
		p := s.Topo.PrimaryOf(sh)
		var n int32
		var behind []string
		for _, m := range s.Active(sh) {
			switch {
			case m == p:
			case p == nil:
				behind = append(behind, m.Name())
			default:
				if why := plan.SyncFault(m, p); why != "" {
					behind = append(behind, m.Name()+": "+why)
				} else {
					n++
				}
			}
		}
		switch {
		case p == nil:
			missing = append(missing, fmt.Sprintf("shard %d has no primary", sh))
		case n < s.Replicas():
			msg := fmt.Sprintf("shard %d has %d of %d replicas in sync", sh, n, s.Replicas())
			if len(behind) > 0 {
				msg += " (not in sync: " + strings.Join(behind, ", ") + ")"
			}
			missing = append(missing, msg)
		}
	}
	if len(missing) > 0 {
		return conditions.New(v1alpha1.ConditionDegraded, true, v1alpha1.ReasonMissingReplicas, strings.Join(missing, "; "), gen)
	}
	return conditions.New(v1alpha1.ConditionDegraded, false, v1alpha1.ReasonClusterReady,
		"every shard has its primary and all its replicas in sync", gen)
}

func formedCondition(s *scope, gen int64) metav1.Condition {
	var missing []string
	for _, m := range s.Topo.Members {
		if !m.Leaving() && !m.Reachable {
			missing = append(missing, m.Name())
		}
	}
	switch {
	case len(missing) > 0:
		return conditions.New(v1alpha1.ConditionClusterFormed, false, v1alpha1.ReasonMembersMissing,
			"members not answering yet: "+strings.Join(missing, ", "), gen)
	case !s.Topo.Formed():
		return conditions.New(v1alpha1.ConditionClusterFormed, false, v1alpha1.ReasonMeetingMembers,
			"the members do not all know each other yet", gen)
	}
	return conditions.New(v1alpha1.ConditionClusterFormed, true, v1alpha1.ReasonAllMembersKnown,
		fmt.Sprintf("all %d members know each other", len(s.Topo.Reachable())), gen)
}

func slotsCondition(s *scope, gen int64) metav1.Condition {
	covered := s.Topo.CoveredSlots()
	switch {
	case covered < plan.SlotCount:
		return conditions.New(v1alpha1.ConditionSlotsAssigned, false, v1alpha1.ReasonSlotsUncovered,
			fmt.Sprintf("%d of %d slots assigned", covered, plan.SlotCount), gen)
	case s.Topo.OpenSlots():
		return conditions.New(v1alpha1.ConditionSlotsAssigned, false, v1alpha1.ReasonOpenSlots,
			"slots are being migrated", gen)
	}
	return conditions.New(v1alpha1.ConditionSlotsAssigned, true, v1alpha1.ReasonAllSlotsAssigned,
		fmt.Sprintf("all %d slots are assigned", plan.SlotCount), gen)
}

// maxConfigWarnings bounds the config entries the ConfigurationWarning message names.
const maxConfigWarnings = 5

// warningCondition is ConfigurationWarning: the config entries the key table refuses
// (configWarnings, from the guard: a server may refuse them at a member's restart, so
// they come first), then graceCondition's finding.
func warningCondition(configWarnings []string, vc *v1alpha1.ValkeyCluster, gen int64) metav1.Condition {
	grace := graceCondition(vc, gen)
	if len(configWarnings) == 0 {
		return grace
	}
	msgs := configWarnings
	if len(msgs) > maxConfigWarnings {
		msgs = append(slices.Clone(msgs[:maxConfigWarnings]), fmt.Sprintf("and %d more config entries", len(configWarnings)-maxConfigWarnings))
	}
	if grace.Status == metav1.ConditionTrue {
		msgs = append(msgs, grace.Message)
	}
	return conditions.New(v1alpha1.ConditionConfigurationWarning, true, v1alpha1.ReasonUnsupportedConfig, strings.Join(msgs, "; "), gen)
}

// graceCondition warns when the user's grace period is too short for a primary to hand
// its slots over on SIGTERM; the value is honoured anyway.
func graceCondition(vc *v1alpha1.ValkeyCluster, gen int64) metav1.Condition {
	minimum := valkeyconf.MinimumGracePeriodSeconds(vc.Spec.Config)
	if g := vc.Spec.TerminationGracePeriodSeconds; g != nil && *g < minimum {
		return conditions.New(v1alpha1.ConditionConfigurationWarning, true, v1alpha1.ReasonGracePeriodTooShort,
			fmt.Sprintf("terminationGracePeriodSeconds %d is below %d s (cluster-manual-failover-timeout %d ms + %d s): a primary may be killed before its replica takes over",
				*g, minimum, valkeyconf.ManualFailoverTimeout(vc.Spec.Config).Milliseconds(), valkeyconf.GracePeriodHeadroomSeconds), gen)
	}
	return conditions.New(v1alpha1.ConditionConfigurationWarning, false, v1alpha1.ReasonNoWarnings, "no configuration warnings", gen)
}

func unschedulableCondition(s *scope, gen int64) metav1.Condition {
	var msgs []string
	for _, m := range s.Topo.Members {
		if c := conditions.Get(m.Node.Status.Conditions, v1alpha1.ConditionPodReady); c != nil &&
			c.Status != metav1.ConditionTrue && c.Reason == v1alpha1.ReasonPodUnschedulable && !m.Leaving() {
			msgs = append(msgs, fmt.Sprintf("%s: %s", m.Name(), plan.MemberMessage(c)))
		}
	}
	if len(msgs) > 0 {
		return conditions.New(v1alpha1.ConditionPodUnschedulable, true, v1alpha1.ReasonUnschedulable, strings.Join(msgs, "; "), gen)
	}
	return conditions.New(v1alpha1.ConditionPodUnschedulable, false, v1alpha1.ReasonScheduled, "every member's pod is scheduled", gen)
}

// shardStatuses lists each shard as the servers report it.
func shardStatuses(s *scope) []v1alpha1.ShardStatus {
	var indexes []int32
	for sh := range s.Topo.Shards {
		indexes = append(indexes, sh)
	}
	sort.Slice(indexes, func(i, j int) bool { return indexes[i] < indexes[j] })
	var out []v1alpha1.ShardStatus
	for _, sh := range indexes {
		st := v1alpha1.ShardStatus{Index: sh}
		p := s.Topo.PrimaryOf(sh)
		if p != nil {
			st.Primary = p.Name()
			for _, r := range p.Slots() {
				st.Slots = append(st.Slots, r.String())
			}
			st.PrimaryNode = p.Node.Status.NodeName
			if s.Place != nil {
				st.PrimaryZone = s.Place.Zones[st.PrimaryNode]
			}
		}
		for _, m := range s.Topo.Shards[sh] {
			if m != p && p != nil && m.Reachable && m.Self.Replica && m.Self.PrimaryID == p.ID() {
				st.Replicas = append(st.Replicas, m.Name())
			}
			if a := memberExternalAddress(s, m); a != "" && (m == p || slices.Contains(st.Replicas, m.Name())) {
				if st.ExternalAddresses == nil {
					st.ExternalAddresses = map[string]string{}
				}
				st.ExternalAddresses[m.Name()] = a
			}
		}
		out = append(out, st)
	}
	return out
}

// writeMemberStatus applies the member's node ID, lifecycle, Joined and Synced.
func (r *Reconciler) writeMemberStatus(ctx context.Context, s *scope, m *plan.Member) error {
	want := computeMemberStatus(s, m)
	want.Conditions = conditions.Resolve(m.Node.Status.Conditions, s.Topo.Now, want.Conditions...)
	have := memberStatus{NodeID: m.Node.Status.NodeID, Lifecycle: m.Node.Status.Lifecycle, ExternalAddress: m.Node.Status.ExternalAddress,
		Conditions: conditions.Owned(m.Node.Status.Conditions, memberConditionTypes...)}
	if status.Equal(have, want) {
		return nil
	}
	return status.Apply(ctx, r.Client, FieldManager, m.Node, v1alpha1.GroupVersion.WithKind("ValkeyNode"), want)
}

func computeMemberStatus(s *scope, m *plan.Member) memberStatus {
	gen := m.Node.Generation
	st := memberStatus{NodeID: m.ID(), Lifecycle: m.Node.Status.Lifecycle, ExternalAddress: memberExternalAddress(s, m)}
	p := s.Topo.PrimaryOf(m.Shard())
	known := m.Reachable && s.Topo.FormedWith(m)
	isPrimary := p == m
	follows := m.Reachable && p != nil && m.Self.Replica && m.Self.PrimaryID == p.ID()
	joined := conditions.New(v1alpha1.ConditionJoined, false, v1alpha1.ReasonNotJoined, "", gen)
	switch {
	case !m.Reachable:
		joined.Message = "the server is not reachable"
		if m.Err != nil {
			joined.Message = "the server is not reachable: " + redact.Text(m.Err.Error())
		}
	case known && (isPrimary || follows):
		joined = conditions.New(v1alpha1.ConditionJoined, true, v1alpha1.ReasonJoined, "part of the cluster in shard "+fmt.Sprint(m.Shard()), gen)
	default:
		joined.Message = "not yet part of the cluster in its shard"
	}
	syncedCond := conditions.New(v1alpha1.ConditionSynced, false, v1alpha1.ReasonSyncing, "replication has not caught up", gen)
	switch {
	case isPrimary:
		syncedCond = conditions.New(v1alpha1.ConditionSynced, true, v1alpha1.ReasonIsPrimary, "the member is the shard's primary", gen)
	case plan.Synced(m, p):
		syncedCond = conditions.New(v1alpha1.ConditionSynced, true, v1alpha1.ReasonSynced, "linked to its primary and caught up", gen)
	case follows && !m.Repl.LinkUp:
		syncedCond.Reason, syncedCond.Message = v1alpha1.ReasonLinkDown, "the replication link to the primary is down"
	case !follows:
		syncedCond.Reason, syncedCond.Message = v1alpha1.ReasonNotJoined, "not replicating the shard's primary"
	}
	switch {
	case m.Leaving():
		st.Lifecycle = v1alpha1.LifecycleLeaving
	case joined.Status == metav1.ConditionTrue && syncedCond.Status == metav1.ConditionTrue:
		st.Lifecycle = v1alpha1.LifecycleActive
	case st.Lifecycle != v1alpha1.LifecycleActive:
		st.Lifecycle = v1alpha1.LifecycleJoining
	}
	st.Conditions = []metav1.Condition{joined, syncedCond}
	return st
}
