package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// reconcileLeaving walks every member being deleted through its exit: a primary with slots
// first fails over to a replica of its shard in sync (the one client-visible failover);
// then the member forgets the cluster and the cluster forgets it; then its finalizer goes
// and Kubernetes removes its pod. Replicas leave before primaries.
func (r *Reconciler) reconcileLeaving(ctx context.Context, s *scope) (time.Duration, error) {
	var leaving []*member
	for _, m := range s.topo.members {
		if m.leaving() && controllerutil.ContainsFinalizer(m.node, memberFinalizer) {
			leaving = append(leaving, m)
		}
	}
	sort.SliceStable(leaving, func(i, j int) bool { return !leaving[i].isPrimary() && leaving[j].isPrimary() })
	for _, m := range leaving {
		w, err := r.leave(ctx, s, m)
		if err != nil {
			return 0, err
		}
		// Other phases go on while a member waits for its handover (a successor may be
		// needed); the pass comes back when the member asked.
		s.lookAgainWithin(w)
	}
	return 0, nil
}

func (r *Reconciler) leave(ctx context.Context, s *scope, m *member) (time.Duration, error) {
	id := m.id()
	if id == "" {
		return 0, r.releaseFinalizer(ctx, m.node) // it never joined
	}
	if m.reachable {
		return r.leaveReachable(ctx, s, m)
	}
	if reason, msg := s.holdDeparture(m); reason != "" {
		s.progress(reason, "%s", msg)
		return requeueWait, nil
	}
	if err := r.forgetEverywhere(ctx, s, id); err != nil {
		return 0, err
	}
	r.event(s.vc, m.node, eventNormal, "MemberLeft", "Forget", "member %s (%s) is gone and was forgotten by every member", m.name(), shortID(id))
	return 0, r.releaseFinalizer(ctx, m.node)
}

// holdDeparture says why a leaving member that does not answer may not be forgotten yet,
// or "": a replica still follows it (the failover comes first: Valkey's, or the heal
// phase's), or it owns slots no other member has the data of and its server may come back
// (only a bare pod that is gone for good takes its data with it). Forgetting it would
// drop those slots, and the heal phase would give them out empty.
func (s *scope) holdDeparture(m *member) (reason, msg string) {
	id := m.id()
	if s.topo.followed(id) {
		return v1alpha1.ReasonFailingOver, fmt.Sprintf("waiting for the replicas of departed %s to take over", m.name())
	}
	if slots := s.topo.ownedSlots()[id]; len(slots) > 0 && !gone(m) {
		return v1alpha1.ReasonWaitingForMember, fmt.Sprintf(
			"%s is leaving but does not answer, and no other member has the data of its slots %s: "+
				"it stays in the cluster until its server is back and hands them over", m.name(), valkey.FormatRanges(slots))
	}
	return "", ""
}

func (r *Reconciler) leaveReachable(ctx context.Context, s *scope, m *member) (time.Duration, error) {
	if m.isPrimary() && len(m.slots()) > 0 {
		return r.handOver(ctx, s, m)
	}
	if s.topo.followed(m.id()) {
		// Its replicas move to the shard's new primary first (replicas phase).
		s.progress(v1alpha1.ReasonReplacingMember, "waiting for the replicas of %s to follow another primary", m.name())
		return requeueWait, nil
	}
	c, err := r.client(ctx, s, m)
	if err != nil {
		return 0, err
	}
	if wait := r.drain(ctx, s, m, c); wait > 0 {
		return wait, nil
	}
	// The member forgets the cluster first, so it cannot gossip itself back in.
	if _, err := c.Do(ctx, "CLUSTER", "RESET", "SOFT"); err != nil {
		log.FromContext(ctx).Info("reset of leaving member failed; forgetting it anyway", "member", m.name(), "error", err.Error())
	}
	if err := r.forgetEverywhere(ctx, s, m.id()); err != nil {
		return 0, err
	}
	r.event(s.vc, m.node, eventNormal, "MemberLeft", "Forget", "member %s left the cluster", m.name())
	return 0, r.releaseFinalizer(ctx, m.node)
}

// handOver fails a leaving primary over to the replica of its shard in sync whose node
// keeps the primaries spread (the most caught up among equals). With none, the shard
// first gets a successor (the members phase creates it, since a leaving member does not
// count).
func (r *Reconciler) handOver(ctx context.Context, s *scope, p *member) (time.Duration, error) {
	var inSync []*member
	for _, m := range s.topo.shards[p.shard()] {
		if m != p && !m.leaving() && synced(m, p) {
			inSync = append(inSync, m)
		}
	}
	best := s.spreadChoice(p.shard(), byOffset(inSync))
	if best == nil {
		s.progress(v1alpha1.ReasonReplacingMember, "primary %s is leaving: waiting for a replica of shard %d in sync to take over", p.name(), p.shard())
		return requeueWait, nil
	}
	if err := r.failover(ctx, s, best, fmt.Sprintf("primary %s is leaving", p.name())); err != nil {
		return 0, err
	}
	return requeueFast, nil
}

// The failover asked of a replica is recorded in its status.failover (MemberFailover)
// before the command, so a pass that comes before the failover completed does not ask
// again (and a failover is counted once), even across an operator restart.

// legacyFailoverAt and legacyFailoverKind are the annotations in which earlier versions of
// the controller recorded a failover. A member that still carries them (a failover in
// flight while the operator was upgraded) is read as if its status held them, and they
// are removed when that failover is closed; they are never written.
const (
	legacyFailoverAt   = "valkey.io/failover-requested-at"
	legacyFailoverKind = "valkey.io/failover-kind"
)

// The kinds of failovers the operator counts (the kind label of the failovers metric).
const (
	kindPlanned = "planned"
	kindForced  = "forced"
	// kindPlacement is a planned failover that restores the primaries' spread
	// (failback.go): counted as planned, and as a primary move.
	kindPlacement = "placement"
)

// failoverRecord returns the failover asked of m, if any.
func failoverRecord(m *member) (v1alpha1.MemberFailover, bool) {
	if f := m.node.Status.Failover; f != nil {
		return *f, true
	}
	at, err := time.Parse(time.RFC3339Nano, m.node.Annotations[legacyFailoverAt])
	if err != nil {
		return v1alpha1.MemberFailover{}, false
	}
	kind := v1alpha1.FailoverPlanned
	if m.node.Annotations[legacyFailoverKind] == kindForced {
		kind = v1alpha1.FailoverForced
	}
	return v1alpha1.MemberFailover{Kind: kind, RequestedAt: metav1.NewMicroTime(at)}, true
}

// metricKind is the failovers metric's kind label of a recorded failover.
func metricKind(f v1alpha1.MemberFailover) string {
	switch f.Kind {
	case v1alpha1.FailoverForced:
		return kindForced
	case v1alpha1.FailoverPlacement:
		return kindPlacement
	}
	return kindPlanned
}

// failoverPending returns the member of shard sh asked to take over less than its
// failover window ago, if any.
func (s *scope) failoverPending(sh int32) *member {
	for _, m := range s.topo.shards[sh] {
		if at, ok := failoverRequestedAt(m); ok && s.topo.now.Sub(at) < s.failoverWindow(m) && !m.isPrimary() {
			return m // still a replica: the failover has not completed
		}
	}
	return nil
}

// failoverWindow is how long a failover asked of m is awaited before it is reported as
// timed out and may be asked again: the manual failover timeout plus a margin; for a
// forced one at least Valkey's election retry time (twice the election timeout of twice
// the node timeout, at least 2 s), because a replica whose election failed starts no
// new one sooner, whatever it is asked: asking again would only repeat the request (and
// its Takeover event) on a node slow to gather the votes.
func (s *scope) failoverWindow(m *member) time.Duration {
	if f, _ := failoverRecord(m); f.Kind == v1alpha1.FailoverForced {
		return s.forcedWindow()
	}
	return s.plannedWindow()
}

// plannedWindow is how long a planned failover is awaited: the manual failover timeout
// plus a margin.
func (s *scope) plannedWindow() time.Duration {
	return valkeyconf.ManualFailoverTimeout(s.vc.Spec.Config) + 2*time.Second
}

// forcedWindow is how long a forced failover is awaited (see failoverWindow).
func (s *scope) forcedWindow() time.Duration {
	return max(s.plannedWindow(), 2*max(2*nodeTimeout(s.vc), 2*time.Second))
}

func failoverRequestedAt(m *member) (time.Time, bool) {
	f, ok := failoverRecord(m)
	return f.RequestedAt.Time, ok
}

// failover asks for the one planned, client-visible failover of a shard: CLUSTER FAILOVER
// on a replica in sync (no FORCE, no TAKEOVER), so no acknowledged write is lost. It is
// counted once the replica is seen serving the shard (settleFailovers).
func (r *Reconciler) failover(ctx context.Context, s *scope, replica *member, why string) error {
	return r.failoverAs(ctx, s, replica, why, v1alpha1.FailoverPlanned)
}

// failoverAs is failover, recorded as kind (FailoverPlanned or FailoverPlacement).
func (r *Reconciler) failoverAs(ctx context.Context, s *scope, replica *member, why string, kind v1alpha1.FailoverKind) error {
	// One failover per shard at a time: a pass that comes before it completed may rank
	// another replica of the shard first, and must not ask that one too.
	if pending := s.failoverPending(replica.shard()); pending != nil {
		s.progress(v1alpha1.ReasonFailingOver, "waiting for %s to complete its takeover of shard %d", pending.name(), replica.shard())
		return nil
	}
	if unreached := s.topo.votersNotReaching(replica); len(unreached) > 0 {
		// The primaries answer a vote request over their own link to the candidate. A
		// candidate whose pod just came back at a new address is reached only once they
		// learnt it; asked before, it waits for votes until the manual failover times
		// out, with its primary's clients paused all along.
		s.progress(v1alpha1.ReasonFailingOver, "waiting for %s to reach %s at %s before it takes over shard %d",
			strings.Join(unreached, ", "), replica.name(), replica.ip(), replica.shard())
		s.recheck = true
		return nil
	}
	if err := r.recordFailoverRequest(ctx, replica, s.topo.now, kind); err != nil {
		return err
	}
	c, err := r.client(ctx, s, replica)
	if err != nil {
		return err
	}
	if err := c.Failover(ctx, valkey.FailoverDefault); err != nil {
		return fmt.Errorf("failover to %s: %w", replica.name(), err)
	}
	log.FromContext(ctx).Info("asked for a failover", "member", replica.name(), "shard", replica.shard(), "why", why)
	r.event(s.vc, replica.node, eventNormal, "Failover", "Failover", "%s takes over shard %d: %s", replica.name(), replica.shard(), why)
	s.progress(v1alpha1.ReasonFailingOver, "%s takes over shard %d", replica.name(), replica.shard())
	return nil
}

// settleFailovers closes the failovers the operator asked for: a replica seen serving its
// shard's slots completed one (counted in the metric, once); one still a replica after the
// window timed out (reported; the phase that wanted it may ask again).
func (r *Reconciler) settleFailovers(ctx context.Context, s *scope) (time.Duration, error) {
	for _, m := range s.topo.members {
		at, ok := failoverRequestedAt(m)
		if !ok || !m.reachable {
			continue
		}
		completed := m.isPrimary() && len(m.slots()) > 0
		if !completed && s.topo.now.Sub(at) < s.failoverWindow(m) {
			continue
		}
		// The request is closed first, on the version of the member this pass read: a
		// pass that read it from a cache not yet updated by the previous close conflicts
		// and reports nothing, so each failover is counted once.
		f, _ := failoverRecord(m)
		kind := metricKind(f)
		window := s.failoverWindow(m) // before closing the request drops its kind
		if closed, err := r.closeFailoverRequest(ctx, m); err != nil || !closed {
			return 0, err
		}
		if completed {
			if kind == kindPlacement {
				r.Metrics.primaryMoved(s.vc, m.shard())
				kind = kindPlanned
			}
			r.Metrics.failover(s.vc, m.shard(), kind)
			r.Metrics.promoted(client.ObjectKeyFromObject(s.vc), m.name(), s.topo.now)
			log.FromContext(ctx).Info("failover completed", "member", m.name(), "shard", m.shard(), "after", s.topo.now.Sub(at).String())
			r.event(s.vc, m.node, eventNormal, "FailoverCompleted", "Failover", "%s serves shard %d", m.name(), m.shard())
			continue
		}
		log.FromContext(ctx).Info("failover timed out", "member", m.name(), "shard", m.shard())
		r.event(s.vc, m.node, eventWarning, "FailoverTimedOut", "Failover", "%s did not take over shard %d within %s", m.name(), m.shard(), window)
	}
	return 0, nil
}

// closeFailoverRequest removes the failover record of a member, on the condition that
// the member is still the version this pass read (a merge patch with an optimistic lock,
// not an apply: a pass that read an outdated member must fail, not report the failover a
// second time). It reports false when the member changed.
func (r *Reconciler) closeFailoverRequest(ctx context.Context, m *member) (bool, error) {
	patch := client.MergeFromWithOptions(m.node.DeepCopy(), client.MergeFromWithOptimisticLock{})
	var err error
	if m.node.Status.Failover != nil {
		m.node.Status.Failover = nil
		err = r.Status().Patch(ctx, m.node, patch, client.FieldOwner(FieldManager))
	} else {
		delete(m.node.Annotations, legacyFailoverAt)
		delete(m.node.Annotations, legacyFailoverKind)
		err = r.Patch(ctx, m.node, patch, client.FieldOwner(FieldManager))
	}
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("failover request closed or changed since this pass read it", "member", m.name())
			return false, nil
		}
		return false, fmt.Errorf("close the failover request of %s: %w", m.name(), err)
	}
	return true, nil
}

// recordFailoverRequest records in a replica's status when it was asked to take over,
// and how (closed by closeFailoverRequest). The record is a field of its own, written
// with a merge patch: the member's status apply (writeMemberStatus) does not send it, so
// it neither keeps nor drops it.
func (r *Reconciler) recordFailoverRequest(ctx context.Context, m *member, at time.Time, kind v1alpha1.FailoverKind) error {
	patch := client.MergeFrom(m.node.DeepCopy())
	m.node.Status.Failover = &v1alpha1.MemberFailover{Kind: kind, RequestedAt: metav1.NewMicroTime(at)}
	if err := r.Status().Patch(ctx, m.node, patch, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("record failover on %s: %w", m.name(), err)
	}
	return nil
}

// drainBudget bounds how long a leaving member waits for its clients to move away.
const drainBudget = 5 * time.Second

// drainIdle: a client connection whose CLIENT LIST idle is at most this is in use.
const drainIdle = time.Second

// drain holds a leaving member (a replica by now: a primary hands over first) until no
// application connection sent it a data command within drainIdle, at most drainBudget
// from the first pass that asked: clients that were still routed to it (a primary a
// moment ago) get MOVED from it and follow the shard's new primary, instead of a reset
// connection when its server stops. It returns how soon to look again, or 0 to go on.
func (r *Reconciler) drain(ctx context.Context, s *scope, m *member, c *valkey.Client) time.Duration {
	conns, err := c.ClientList(ctx)
	if err != nil {
		log.FromContext(ctx).Info("cannot list the clients of a leaving member; letting it go", "member", m.name(), "error", err.Error())
		if e := valkey.AsReplyTooLarge(err); e != nil {
			r.event(s.vc, m.node, eventWarning, v1alpha1.ReasonReplyTooLarge, "Drain",
				"%s; it leaves without waiting for its clients to move", e.Describe(m.name()))
		}
		r.draining.Delete(m.node.UID)
		return 0
	}
	busy := valkey.InUse(conns, drainIdle)
	if busy == 0 {
		r.draining.Delete(m.node.UID)
		return 0
	}
	first, _ := r.draining.LoadOrStore(m.node.UID, s.topo.now)
	if s.topo.now.Sub(first.(time.Time)) >= drainBudget {
		log.FromContext(ctx).Info("leaving member still has clients in use; letting it go", "member", m.name(), "connections", busy)
		r.draining.Delete(m.node.UID)
		return 0
	}
	s.progress(v1alpha1.ReasonReplacingMember, "waiting for %d client connections of leaving %s to move to the shard's primary", busy, m.name())
	return 250 * time.Millisecond
}
