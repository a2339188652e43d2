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
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// reconcileLeaving walks every member being deleted through its exit: a primary with slots
// first fails over to a replica of its shard in sync (the one client-visible failover);
// then the member forgets the cluster and the cluster forgets it; then its finalizer goes
// and Kubernetes removes its pod. Replicas leave before primaries.
func (r *Reconciler) reconcileLeaving(ctx context.Context, s *scope) (time.Duration, error) {
	var leaving []*plan.Member
	for _, m := range s.Topo.Members {
		if m.Leaving() && controllerutil.ContainsFinalizer(m.Node, memberFinalizer) {
			leaving = append(leaving, m)
		}
	}
	sort.SliceStable(leaving, func(i, j int) bool { return !leaving[i].IsPrimary() && leaving[j].IsPrimary() })
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

func (r *Reconciler) leave(ctx context.Context, s *scope, m *plan.Member) (time.Duration, error) {
	id := m.ID()
	if id == "" {
		return 0, r.releaseFinalizer(ctx, m.Node) // it never joined
	}
	if m.Reachable {
		return r.leaveReachable(ctx, s, m)
	}
	if reason, msg := s.HoldDeparture(m); reason != "" {
		s.progress(reason, "%s", msg)
		return plan.RequeueWait, nil
	}
	if err := r.forgetEverywhere(ctx, s, id); err != nil {
		return 0, err
	}
	r.event(s.VC, m.Node, eventNormal, "MemberLeft", "Forget", "member %s (%s) is gone and was forgotten by every member", m.Name(), plan.ShortID(id))
	return 0, r.releaseFinalizer(ctx, m.Node)
}

func (r *Reconciler) leaveReachable(ctx context.Context, s *scope, m *plan.Member) (time.Duration, error) {
	if m.IsPrimary() && len(m.Slots()) > 0 {
		return r.handOver(ctx, s, m)
	}
	if s.Topo.Followed(m.ID()) {
		// Its replicas move to the shard's new primary first (replicas phase).
		s.progress(v1alpha1.ReasonReplacingMember, "waiting for the replicas of %s to follow another primary", m.Name())
		return plan.RequeueWait, nil
	}
	c, err := r.client(ctx, s, m)
	if err != nil {
		return 0, err
	}
	if wait := r.drain(ctx, s, m, c); wait > 0 {
		return wait, nil
	}
	// Every member forgets it; it cannot gossip itself back in, as a server adds an
	// unknown node only when it is met or named by a node it knows. (It is not reset:
	// _operator may not run CLUSTER RESET.)
	if err := r.forgetEverywhere(ctx, s, m.ID()); err != nil {
		return 0, err
	}
	r.event(s.VC, m.Node, eventNormal, "MemberLeft", "Forget", "member %s left the cluster", m.Name())
	return 0, r.releaseFinalizer(ctx, m.Node)
}

// handOver fails a leaving primary over to the replica of its shard in sync whose node
// keeps the primaries spread (the most caught up among equals). With none, the shard
// first gets a successor (the members phase creates it, since a leaving member does not
// count).
func (r *Reconciler) handOver(ctx context.Context, s *scope, p *plan.Member) (time.Duration, error) {
	var inSync []*plan.Member
	for _, m := range s.Topo.Shards[p.Shard()] {
		if m != p && !m.Leaving() && plan.Synced(m, p) {
			inSync = append(inSync, m)
		}
	}
	best := s.SpreadChoice(p.Shard(), plan.ByOffset(inSync))
	if best == nil {
		s.progress(v1alpha1.ReasonReplacingMember, "primary %s is leaving: waiting for a replica of shard %d in sync to take over", p.Name(), p.Shard())
		return plan.RequeueWait, nil
	}
	if err := r.failover(ctx, s, best, fmt.Sprintf("primary %s is leaving", p.Name())); err != nil {
		return 0, err
	}
	return plan.RequeueFast, nil
}

// The failover asked of a replica is recorded in its status.failover (MemberFailover)
// before the command, so a pass that comes before the failover completed does not ask
// again (and a failover is counted once), even across an operator restart.

// The kinds of failovers the operator counts (the kind label of the failovers metric).
const (
	kindPlanned = "planned"
	kindForced  = "forced"
	// kindPlacement is a planned failover that restores the primaries' spread
	// (failback.go): counted as planned, and as a primary move.
	kindPlacement = "placement"
)

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

// failover asks for the one planned, client-visible failover of a shard: CLUSTER FAILOVER
// on a replica in sync (no FORCE, no TAKEOVER), so no acknowledged write is lost. It is
// counted once the replica is seen serving the shard (settleFailovers).
func (r *Reconciler) failover(ctx context.Context, s *scope, replica *plan.Member, why string) error {
	return r.failoverAs(ctx, s, replica, why, v1alpha1.FailoverPlanned)
}

// failoverAs is failover, recorded as kind (FailoverPlanned or FailoverPlacement).
func (r *Reconciler) failoverAs(ctx context.Context, s *scope, replica *plan.Member, why string, kind v1alpha1.FailoverKind) error {
	// One failover per shard at a time: a pass that comes before it completed may rank
	// another replica of the shard first, and must not ask that one too.
	if pending := s.FailoverPending(replica.Shard()); pending != nil {
		s.progress(v1alpha1.ReasonFailingOver, "waiting for %s to complete its takeover of shard %d", pending.Name(), replica.Shard())
		return nil
	}
	if unreached := s.Topo.VotersNotReaching(replica); len(unreached) > 0 {
		// The primaries answer a vote request over their own link to the candidate. A
		// candidate whose pod just came back at a new address is reached only once they
		// learnt it; asked before, it waits for votes until the manual failover times
		// out, with its primary's clients paused all along.
		s.progress(v1alpha1.ReasonFailingOver, "waiting for %s to reach %s at %s before it takes over shard %d",
			strings.Join(unreached, ", "), replica.Name(), replica.IP(), replica.Shard())
		s.recheck = true
		return nil
	}
	if err := r.recordFailoverRequest(ctx, replica, s.Topo.Now, kind); err != nil {
		return err
	}
	c, err := r.client(ctx, s, replica)
	if err != nil {
		return err
	}
	if err := c.Failover(ctx, valkey.FailoverDefault); err != nil {
		return fmt.Errorf("failover to %s: %w", replica.Name(), err)
	}
	log.FromContext(ctx).Info("asked for a failover", "member", replica.Name(), "shard", replica.Shard(), "why", why)
	r.event(s.VC, replica.Node, eventNormal, "Failover", "Failover", "%s takes over shard %d: %s", replica.Name(), replica.Shard(), why)
	s.progress(v1alpha1.ReasonFailingOver, "%s takes over shard %d", replica.Name(), replica.Shard())
	return nil
}

// settleFailovers closes the failovers the operator asked for: a replica seen serving its
// shard's slots completed one (counted in the metric, once); one still a replica after the
// window timed out (reported; the phase that wanted it may ask again).
func (r *Reconciler) settleFailovers(ctx context.Context, s *scope) (time.Duration, error) {
	for _, m := range s.Topo.Members {
		at, ok := plan.FailoverRequestedAt(m)
		if !ok || !m.Reachable {
			continue
		}
		completed := m.IsPrimary() && len(m.Slots()) > 0
		if !completed && s.Topo.Now.Sub(at) < s.FailoverWindow(m) {
			continue
		}
		// The request is closed first, on the version of the member this pass read: a
		// pass that read it from a cache not yet updated by the previous close conflicts
		// and reports nothing, so each failover is counted once.
		f, _ := plan.FailoverRecord(m)
		kind := metricKind(f)
		window := s.FailoverWindow(m) // before closing the request drops its kind
		if closed, err := r.closeFailoverRequest(ctx, m); err != nil || !closed {
			return 0, err
		}
		if completed {
			if kind == kindPlacement {
				r.Metrics.primaryMoved(s.VC, m.Shard())
				kind = kindPlanned
			}
			r.Metrics.failover(s.VC, m.Shard(), kind)
			r.Metrics.promoted(client.ObjectKeyFromObject(s.VC), m.Name(), s.Topo.Now)
			log.FromContext(ctx).Info("failover completed", "member", m.Name(), "shard", m.Shard(), "after", s.Topo.Now.Sub(at).String())
			r.event(s.VC, m.Node, eventNormal, "FailoverCompleted", "Failover", "%s serves shard %d", m.Name(), m.Shard())
			continue
		}
		log.FromContext(ctx).Info("failover timed out", "member", m.Name(), "shard", m.Shard())
		r.event(s.VC, m.Node, eventWarning, "FailoverTimedOut", "Failover", "%s did not take over shard %d within %s", m.Name(), m.Shard(), window)
	}
	return 0, nil
}

// closeFailoverRequest removes the failover record of a member, on the condition that
// the member is still the version this pass read (a merge patch with an optimistic lock,
// not an apply: a pass that read an outdated member must fail, not report the failover a
// second time). It reports false when the member changed.
func (r *Reconciler) closeFailoverRequest(ctx context.Context, m *plan.Member) (bool, error) {
	patch := client.MergeFromWithOptions(m.Node.DeepCopy(), client.MergeFromWithOptimisticLock{})
	var err error
	if m.Node.Status.Failover != nil {
		m.Node.Status.Failover = nil
		err = r.Status().Patch(ctx, m.Node, patch, client.FieldOwner(FieldManager))
	} else {
		delete(m.Node.Annotations, plan.LegacyFailoverAt)
		delete(m.Node.Annotations, plan.LegacyFailoverKind)
		err = r.Patch(ctx, m.Node, patch, client.FieldOwner(FieldManager))
	}
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("failover request closed or changed since this pass read it", "member", m.Name())
			return false, nil
		}
		return false, fmt.Errorf("close the failover request of %s: %w", m.Name(), err)
	}
	return true, nil
}

// recordFailoverRequest records in a replica's status when it was asked to take over,
// and how (closed by closeFailoverRequest). The record is a field of its own, written
// with a merge patch: the member's status apply (writeMemberStatus) does not send it, so
// it neither keeps nor drops it.
func (r *Reconciler) recordFailoverRequest(ctx context.Context, m *plan.Member, at time.Time, kind v1alpha1.FailoverKind) error {
	patch := client.MergeFrom(m.Node.DeepCopy())
	m.Node.Status.Failover = &v1alpha1.MemberFailover{Kind: kind, RequestedAt: metav1.NewMicroTime(at)}
	if err := r.Status().Patch(ctx, m.Node, patch, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("record failover on %s: %w", m.Name(), err)
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
func (r *Reconciler) drain(ctx context.Context, s *scope, m *plan.Member, c *valkey.Client) time.Duration {
	conns, err := c.ClientList(ctx)
	if err != nil {
		log.FromContext(ctx).Info("cannot list the clients of a leaving member; letting it go", "member", m.Name(), "error", err.Error())
		if e := valkey.AsReplyTooLarge(err); e != nil {
			r.event(s.VC, m.Node, eventWarning, v1alpha1.ReasonReplyTooLarge, "Drain",
				"%s; it leaves without waiting for its clients to move", e.Describe(m.Name()))
		}
		r.draining.Delete(m.Node.UID)
		return 0
	}
	busy := valkey.InUse(conns, drainIdle)
	if busy == 0 {
		r.draining.Delete(m.Node.UID)
		return 0
	}
	first, _ := r.draining.LoadOrStore(m.Node.UID, s.Topo.Now)
	if s.Topo.Now.Sub(first.(time.Time)) >= drainBudget {
		log.FromContext(ctx).Info("leaving member still has clients in use; letting it go", "member", m.Name(), "connections", busy)
		r.draining.Delete(m.Node.UID)
		return 0
	}
	s.progress(v1alpha1.ReasonReplacingMember, "waiting for %d client connections of leaving %s to move to the shard's primary", busy, m.Name())
	return 250 * time.Millisecond
}
