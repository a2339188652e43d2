package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
)

// settled reports whether the topology allows a planned change: every shard of the spec
// has its primary, nobody is leaving and no primary is lost.
func (s *scope) settled() bool {
	if plan.Empty(s.Topo) || s.Topo.OpenSlots() || len(s.Topo.LostPrimaries()) > 0 {
		return false
	}
	for _, m := range s.Topo.Members {
		if m.Leaving() {
			return false
		}
	}
	for sh := int32(0); sh < s.Shards(); sh++ {
		if p := s.Topo.PrimaryOf(sh); p == nil || len(p.Slots()) == 0 {
			return false
		}
	}
	return true
}

// reconcileStaleMembers replaces at once a member that never became active and whose
// spec is outdated: it holds nothing. This is how a cluster whose members cannot start
// (a nodeSelector no node matches, an image that does not pull) recovers when the spec
// is fixed, during its creation as well as during a roll. It runs before the phases
// that wait for every member to answer.
func (r *Reconciler) reconcileStaleMembers(ctx context.Context, s *scope) (time.Duration, error) {
	for _, m := range s.Topo.Members {
		if m.Leaving() || m.Node.Status.Lifecycle == v1alpha1.LifecycleActive || len(m.Slots()) > 0 {
			continue
		}
		if out, why := s.Outdated(m); out {
			if err := r.retire(ctx, s.VC, m, "it never joined and its spec is outdated ("+why+")"); err != nil {
				return 0, err
			}
			return requeueFast, nil
		}
	}
	return 0, nil
}

// reconcileRoll brings members whose pod must change (image, resources, non-live config,
// containers, exporter, scheduling, grace period) in line with the spec, one shard at a
// time, with at most one client-visible failover per shard. planRoll decides the step.
func (r *Reconciler) reconcileRoll(ctx context.Context, s *scope) (time.Duration, error) {
	p := s.planRoll()
	switch p.step {
	case rollSettleFirst, rollWait:
		s.progress(v1alpha1.ReasonRolling, "%s", p.message)
	case rollBlocked:
		s.block(p.member.Name(), "%s", p.message)
	case rollAddSuccessor:
		if err := r.addSuccessors(ctx, s, p.shard, p.count); err != nil {
			return 0, err
		}
		s.progress(v1alpha1.ReasonRolling, "%s", p.message)
	case rollRetire:
		if err := r.retire(ctx, s.VC, p.member, "replaced by an up-to-date replica in sync"); err != nil {
			return 0, err
		}
		s.progress(v1alpha1.ReasonRolling, "%s", p.message)
	case rollRestart:
		if err := r.authorizeRoll(ctx, s, p.member); err != nil {
			return 0, err
		}
	case rollFailover:
		if err := r.failover(ctx, s, p.member, "rolling update of shard "+fmt.Sprint(p.shard)); err != nil {
			return 0, err
		}
	}
	if p.step != rollBlocked && p.step != rollSettleFirst && !s.inPlace() {
		// The next shards' successors start now, so that their sync overlaps this
		// shard's roll; their old members are retired in turn, one shard at a time.
		for _, ahead := range s.shardsAhead(p.shard, rollSurgeShards) {
			if err := r.addSuccessors(ctx, s, ahead.shard, ahead.count); err != nil {
				return 0, err
			}
		}
	}
	return p.after, nil
}

// rollSurgeShards is how many shards after the one rolling get their successors ahead
// of their turn: enough to hide the pod starts of a small cluster's roll, few enough that
// a large cluster does not double its pods at once.
const rollSurgeShards = 2

// successorsAhead is a shard that will roll later, with the successors it still needs.
type successorsAhead struct {
	shard int32
	count int
}

// shardsAhead lists, after shard, up to n shards with outdated members (by replacement)
// and how many successors each still lacks (none when a successor of theirs is stuck).
func (s *scope) shardsAhead(shard int32, n int) []successorsAhead {
	var out []successorsAhead
	for sh := shard + 1; sh < s.Shards() && n > 0; sh++ {
		members := s.Active(sh)
		outdated, stuck := 0, false
		for _, m := range members {
			if out, _ := s.Outdated(m); out {
				outdated++
			} else if m.CannotRun() != nil {
				stuck = true
			}
		}
		if outdated == 0 {
			continue
		}
		n--
		if missing := outdated - (len(members) - int(1+s.Replicas())); missing > 0 && !stuck {
			out = append(out, successorsAhead{shard: sh, count: missing})
		}
	}
	return out
}

// addSuccessors creates count up-to-date members in shard, counting the members on the
// API server first: a successor created by the previous pass may not be in the cache yet.
func (r *Reconciler) addSuccessors(ctx context.Context, s *scope, shard int32, count int) error {
	live, err := r.countMembers(ctx, s.VC)
	if err != nil {
		return err
	}
	for have := live[shard]; have < len(s.Active(shard))+count; have++ {
		if _, err := r.createMember(ctx, s.VC, shard, "successor for a rolling update"); err != nil {
			return err
		}
	}
	return nil
}

// rollStep is what the roll does next.
type rollStep int

const (
	// rollNothing: no member needs a new pod.
	rollNothing rollStep = iota
	// rollSettleFirst: a shard needs a roll, but scaling or healing comes first; the pass
	// goes on.
	rollSettleFirst
	// rollWait: the roll waits for the shard (a successor or a restarted member to sync).
	rollWait
	// rollBlocked: member's pod cannot run; the user must act.
	rollBlocked
	// rollAddSuccessor: create an up-to-date member in the shard (by replacement).
	rollAddSuccessor
	// rollRetire: retire member, an outdated replica (by replacement).
	rollRetire
	// rollRestart: authorise a new pod for member on its volume (in place).
	rollRestart
	// rollFailover: member, an up-to-date replica in sync, takes over the shard.
	rollFailover
)

// rollPlan is the roll's next step, decided from the scope alone.
type rollPlan struct {
	step  rollStep
	shard int32
	// member is the member the step acts on or waits for.
	member *plan.Member
	// message is Progressing's message for the step (reason Rolling, or RollBlocked);
	// authorizeRoll and failover write their own.
	message string
	// after is how soon the next pass should come once the step is taken (0: the pass
	// goes on).
	after time.Duration
	// count is how many successors rollAddSuccessor creates.
	count int
}

// planRoll picks the shard to roll and its next step: by replacement, or in place when
// the members keep their volumes and the shard has a replica to fail over to.
func (s *scope) planRoll() rollPlan {
	shard, ok := s.nextShardToRoll()
	if !ok {
		return rollPlan{}
	}
	if !s.settled() {
		// Scaling or healing first; the roll starts once every shard serves its slots.
		return rollPlan{step: rollSettleFirst, shard: shard,
			message: fmt.Sprintf("shard %d needs a roll; waiting for the cluster to settle first", shard)}
	}
	if s.inPlace() {
		return s.planRollInPlace(shard)
	}
	return s.planRollByReplacement(shard)
}

// nextShardToRoll is the lowest shard with an outdated member, or with a member still
// restarting for a roll authorised on it: the shard's roll ends when that member is back
// in sync, not when its spec was written.
func (s *scope) nextShardToRoll() (int32, bool) {
	for sh := int32(0); sh < s.Shards(); sh++ {
		for _, m := range s.Active(sh) {
			if out, _ := s.Outdated(m); out || m.Restarting() {
				return sh, true
			}
		}
	}
	return 0, false
}

// inPlace: members with volumes in StatefulSets are rolled in place, keeping their
// volume, when the shard has a replica to fail over to. Without replicas a replacement
// keeps the shard's slots served during the roll.
func (s *scope) inPlace() bool {
	return s.VC.Spec.Persistence != nil && s.VC.Spec.Workload() == v1alpha1.WorkloadStatefulSet && s.Replicas() > 0
}

// planRollByReplacement: add an up-to-date successor, wait until it is in sync, retire an
// outdated replica; when only the primary is outdated, fail over to an up-to-date replica
// in sync (the shard's one failover), and the old primary, now a replica, is retired.
func (s *scope) planRollByReplacement(sh int32) rollPlan {
	members := s.Active(sh)
	p := s.Topo.PrimaryOf(sh)
	var outdatedReplicas []*plan.Member
	var freshSynced []*plan.Member
	var freshWaiting []*plan.Member
	primaryOutdated := false
	for _, m := range members {
		out, _ := s.Outdated(m)
		switch {
		case out && m == p:
			primaryOutdated = true
		case out:
			outdatedReplicas = append(outdatedReplicas, m)
		case m != p && plan.Synced(m, p) && s.ExternalKnown(m):
			// With external access, a successor takes over only once every member
			// redirects clients to its external address.
			freshSynced = append(freshSynced, m)
		case m != p:
			freshWaiting = append(freshWaiting, m)
		}
	}
	outdated := len(outdatedReplicas)
	if primaryOutdated {
		outdated++
	}
	// Every successor the shard needs starts at once (one per outdated member), so their
	// pods start and sync together.
	if missing := outdated - (len(members) - int(1+s.Replicas())); missing > 0 {
		what := "a successor"
		if missing > 1 {
			what = fmt.Sprintf("%d successors", missing)
		}
		return rollPlan{step: rollAddSuccessor, shard: sh, count: missing, after: requeueWait,
			message: fmt.Sprintf("shard %d: creating %s with the new spec", sh, what)}
	}
	if len(freshWaiting) > 0 {
		m := freshWaiting[0]
		if plan.Synced(m, p) {
			return rollPlan{step: rollWait, shard: sh, member: m, after: requeueSync,
				message: fmt.Sprintf("shard %d: waiting for every member to learn successor %s's external address (not known to %s yet)",
					sh, m.Name(), strings.Join(m.UnseenBy, ", "))}
		}
		return waitForSuccessor(sh, m)
	}
	if len(outdatedReplicas) > 0 {
		m := outdatedReplicas[0]
		return rollPlan{step: rollRetire, shard: sh, member: m, after: requeueFast,
			message: fmt.Sprintf("shard %d: retiring outdated replica %s", sh, m.Name())}
	}
	if primaryOutdated && len(freshSynced) > 0 {
		return rollPlan{step: rollFailover, shard: sh, member: s.SpreadChoice(sh, plan.ByOffset(freshSynced)), after: requeueFast}
	}
	return rollPlan{step: rollWait, shard: sh, after: requeueWait,
		message: fmt.Sprintf("shard %d: waiting for an up-to-date replica in sync", sh)}
}

// waitForSuccessor waits for a successor that is not in sync yet, and blocks the roll
// when the successor's pod cannot run.
func waitForSuccessor(sh int32, m *plan.Member) rollPlan {
	if c := m.CannotRun(); c != nil {
		return rollPlan{step: rollBlocked, shard: sh, member: m, after: requeueSteady,
			message: fmt.Sprintf("shard %d: the roll is blocked: successor %s cannot run (%s: %s); the old members keep serving",
				sh, m.Name(), c.Reason, plan.MemberMessage(c))}
	}
	after := requeueWait // its pod starting: its status brings the next pass
	if m.Reachable {
		after = requeueSync // syncing: only the servers can tell when it is done
	}
	return rollPlan{step: rollWait, shard: sh, member: m, after: after,
		message: fmt.Sprintf("shard %d: waiting for successor %s to sync", sh, m.Name())}
}

// planRollInPlace restarts one member of the shard at a time on its own volume: replicas
// first, then (after the shard's one failover) the old primary.
func (s *scope) planRollInPlace(sh int32) rollPlan {
	p := s.Topo.PrimaryOf(sh)
	var outdatedReplica *plan.Member
	var freshSynced []*plan.Member
	for _, m := range s.Active(sh) {
		if !m.PodCurrent() || (m != p && !plan.Synced(m, p)) {
			if c := m.CannotRun(); c != nil {
				return rollPlan{step: rollBlocked, shard: sh, member: m, after: requeueWait,
					message: fmt.Sprintf("shard %d: the roll is blocked: %s cannot run (%s: %s)", sh, m.Name(), c.Reason, plan.MemberMessage(c))}
			}
			return rollPlan{step: rollWait, shard: sh, member: m, after: requeueWait,
				message: fmt.Sprintf("shard %d: waiting for %s to come back in sync", sh, m.Name())}
		}
		out, _ := s.Outdated(m)
		switch {
		case out && m != p && outdatedReplica == nil:
			outdatedReplica = m
		case !out && m != p:
			freshSynced = append(freshSynced, m)
		}
	}
	if outdatedReplica != nil {
		return rollPlan{step: rollRestart, shard: sh, member: outdatedReplica, after: requeueWait}
	}
	if len(freshSynced) > 0 {
		return rollPlan{step: rollFailover, shard: sh, member: s.SpreadChoice(sh, plan.ByOffset(freshSynced)), after: requeueFast}
	}
	return rollPlan{step: rollWait, shard: sh, after: requeueWait,
		message: fmt.Sprintf("shard %d: waiting for an up-to-date replica in sync", sh)}
}

// authorizeRoll writes the new spec into a member and raises its revision: the
// node-controller then replaces its pod, keeping its volume.
func (r *Reconciler) authorizeRoll(ctx context.Context, s *scope, m *plan.Member) error {
	_, why := s.Outdated(m)
	patch := client.MergeFrom(m.Node.DeepCopy())
	want := plan.DesiredSpec(s.VC, m.Shard())
	want.Revision = m.Node.Spec.Revision + 1
	m.Node.Spec = want
	if err := r.Patch(ctx, m.Node, patch); err != nil {
		return fmt.Errorf("authorise the roll of %s: %w", m.Name(), err)
	}
	r.event(s.VC, m.Node, eventNormal, "MemberRolling", "Roll", "restarting %s on its volume with the new spec (%s)", m.Name(), why)
	s.progress(v1alpha1.ReasonRolling, "shard %d: restarting %s with the new spec", m.Shard(), m.Name())
	return nil
}
