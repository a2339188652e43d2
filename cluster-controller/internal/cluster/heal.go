package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// reconcileHeal handles what Valkey cannot handle alone: a failover that does not happen
// because a majority of primaries is gone (quorum lost), and slots whose data is gone.
func (r *Reconciler) reconcileHeal(ctx context.Context, s *scope) (time.Duration, error) {
	wait, err := r.breakReplicationCycles(ctx, s)
	if err != nil {
		return 0, err
	}
	for _, t := range s.PlanTakeovers() {
		lp, best := t.Lost, t.By
		switch {
		case len(lp.ReachedBy) > 0 && best == nil:
			s.progress(v1alpha1.ReasonPartitioned,
				"primary %s does not answer the operator, but %s still reach it: a partition, not a death, so no failover is forced",
				plan.ShortID(lp.ID), strings.Join(lp.ReachedBy, ", "))
			wait = plan.RequeueWait
			continue
		case t.Draining != "":
			s.progress(v1alpha1.ReasonFailingOver, "%s", t.Draining)
			wait = plan.RequeueFast
			continue
		case best == nil:
			s.progress(v1alpha1.ReasonFailingOver, "primary %s is not answering; waiting for Valkey's failover", plan.ShortID(lp.ID))
			wait = plan.RequeueWait
			continue
		}
		if pending := s.FailoverPending(best.Shard()); pending != nil && !(t.Escalates && pending == best) {
			s.progress(v1alpha1.ReasonFailingOver, "waiting for %s to complete its takeover of shard %d", pending.Name(), best.Shard())
			wait = plan.RequeueFast
			continue
		}
		if err := r.forceFailover(ctx, s, best, t.Mode, t.Why); err != nil {
			return 0, err
		}
		r.event(s.VC, best.Node, eventWarning, "Takeover", "Failover", "%s: %s takes over the slots %s (%s)",
			t.Why, best.Name(), valkey.FormatRanges(lp.Slots), t.Mode)
		s.progress(v1alpha1.ReasonFailingOver, "%s takes over the slots of a lost primary", best.Name())
		wait = plan.RequeueFast
	}
	if wait > 0 {
		return 0, nil
	}
	return 0, r.reassignLostSlots(ctx, s)
}

// breakReplicationCycles promotes, without a vote, one of two members of a shard that
// replicate each other (plan.Cluster.ReplicationCycles): no failover Valkey starts ends
// such a loop, and the shard has no primary while it lasts.
func (r *Reconciler) breakReplicationCycles(ctx context.Context, s *scope) (time.Duration, error) {
	var wait time.Duration
	for _, cb := range s.ReplicationCycles() {
		sh := cb.By.Shard()
		if pending := s.FailoverPending(sh); pending != nil {
			s.progress(v1alpha1.ReasonFailingOver, "waiting for %s to complete its takeover of shard %d", pending.Name(), sh)
			wait = plan.RequeueFast
			continue
		}
		why := fmt.Sprintf("%s and %s replicate each other", cb.By.Name(), cb.Other.Name())
		if err := r.forceFailover(ctx, s, cb.By, valkey.FailoverTakeover, why); err != nil {
			return 0, err
		}
		r.event(s.VC, cb.By.Node, eventWarning, "Takeover", "Failover",
			"%s, so shard %d has no primary: %s takes over without a vote (TAKEOVER)", why, sh, cb.By.Name())
		s.progress(v1alpha1.ReasonFailingOver, "%s takes over shard %d, whose members replicated each other", cb.By.Name(), sh)
		wait = plan.RequeueFast
	}
	return wait, nil
}

// forceFailover asks m to take over its shard in mode (FORCE or TAKEOVER), recorded on m
// as a forced failover first, so the passes that follow wait for it (FailoverPending).
func (r *Reconciler) forceFailover(ctx context.Context, s *scope, m *plan.Member, mode valkey.FailoverMode, why string) error {
	if err := r.recordFailoverRequest(ctx, m, s.Topo.Now, v1alpha1.FailoverForced); err != nil {
		return err
	}
	c, err := r.client(ctx, s, m)
	if err != nil {
		return err
	}
	if err := c.Failover(ctx, mode); err != nil {
		return fmt.Errorf("forced failover by %s: %w", m.Name(), err)
	}
	log.FromContext(ctx).Info("forced a failover", "member", m.Name(), "shard", m.Shard(), "mode", mode.String(), "why", why)
	return nil
}

// reassignLostSlots gives slots nobody serves any more (their only holder died without a
// replica and its data cannot come back) to a shard of the spec, empty: the data is lost,
// and serving the slots again beats a cluster that refuses every request.
func (r *Reconciler) reassignLostSlots(ctx context.Context, s *scope) error {
	lost, target := s.LostSlots()
	if len(lost) == 0 {
		return nil
	}
	if target == nil {
		s.progress(v1alpha1.ReasonSlotsUncovered, "slots %s are not served; waiting for a primary to give them to", valkey.FormatRanges(lost))
		return nil
	}
	c, err := r.client(ctx, s, target)
	if err != nil {
		return err
	}
	if err := c.AddSlotsRange(ctx, lost); err != nil {
		return fmt.Errorf("give lost slots %s to %s: %w", valkey.FormatRanges(lost), target.Name(), err)
	}
	r.event(s.VC, target.Node, eventWarning, "SlotsReassigned", "AssignSlots",
		"slots %s had no server left and their data cannot come back: given, empty, to %s (shard %d)",
		valkey.FormatRanges(lost), target.Name(), target.Shard())
	s.progress(v1alpha1.ReasonDataLost, "slots %s were lost with their data and given to shard %d", valkey.FormatRanges(lost), target.Shard())
	return nil
}

// reconcileStrangers makes every member forget the nodes Valkey knows, no member is, and
// the cluster flags as failed: the old identity of a member whose pod came back empty, or
// a dead node that was never ours. A node that a replica still follows is kept: its
// replicas need it known to fail over.
func (r *Reconciler) reconcileStrangers(ctx context.Context, s *scope) (time.Duration, error) {
	forget, soon := s.Topo.ToForget()
	if soon {
		s.recheck = true // Valkey flags it within about the node timeout
	}
	if len(forget) == 0 {
		return 0, nil
	}
	if err := r.forgetEverywhere(ctx, s, forget...); err != nil {
		return 0, err
	}
	ids := make([]string, len(forget))
	for i, id := range forget {
		ids[i] = plan.ShortID(id)
	}
	r.event(s.VC, nil, eventWarning, "NodesForgotten", "Forget", "forgot nodes no member owns: %s", strings.Join(ids, ", "))
	s.progress(v1alpha1.ReasonForgettingNodes, "forgot %d nodes no member owns", len(forget))
	return 0, nil
}

// forgetEverywhere sends CLUSTER FORGET for each id to every reachable member but the
// node itself. Valkey bans a forgotten node for 60 s, so all members must forget it
// within that time; they are asked together.
func (r *Reconciler) forgetEverywhere(ctx context.Context, s *scope, ids ...string) error {
	var errs []string
	for _, m := range s.Topo.Reachable() {
		c, err := r.client(ctx, s, m)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for _, id := range ids {
			if id == m.ID() {
				continue
			}
			if _, known := m.Entry(id); !known {
				continue
			}
			if err := c.Forget(ctx, id); err != nil {
				msg, _ := valkey.ServerMessage(err)
				if strings.Contains(msg, "Unknown node") {
					continue
				}
				errs = append(errs, fmt.Sprintf("%s: %v", m.Name(), err))
			}
		}
	}
	if len(errs) > 0 {
		log.FromContext(ctx).Info("some members did not forget", "errors", errs)
		return fmt.Errorf("forget %d nodes: %s", len(ids), strings.Join(errs, "; "))
	}
	return nil
}
