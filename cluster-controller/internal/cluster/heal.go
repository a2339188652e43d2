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
	var wait time.Duration
	for _, t := range s.planTakeovers() {
		lp, best := t.lost, t.by
		switch {
		case len(lp.ReachedBy) > 0 && best == nil:
			s.progress(v1alpha1.ReasonPartitioned,
				"primary %s does not answer the operator, but %s still reach it: a partition, not a death, so no failover is forced",
				plan.ShortID(lp.ID), strings.Join(lp.ReachedBy, ", "))
			wait = plan.RequeueWait
			continue
		case best == nil:
			s.progress(v1alpha1.ReasonFailingOver, "primary %s is not answering; waiting for Valkey's failover", plan.ShortID(lp.ID))
			wait = plan.RequeueWait
			continue
		}
		if pending := s.failoverPending(best.Shard()); pending != nil {
			s.progress(v1alpha1.ReasonFailingOver, "waiting for %s to complete its takeover of shard %d", pending.Name(), best.Shard())
			wait = plan.RequeueFast
			continue
		}
		if err := r.recordFailoverRequest(ctx, best, s.Topo.Now, v1alpha1.FailoverForced); err != nil {
			return 0, err
		}
		c, err := r.client(ctx, s, best)
		if err != nil {
			return 0, err
		}
		if err := c.Failover(ctx, t.mode); err != nil {
			return 0, fmt.Errorf("forced failover by %s: %w", best.Name(), err)
		}
		log.FromContext(ctx).Info("forced a failover", "member", best.Name(), "shard", best.Shard(), "mode", t.mode.String(), "why", t.why)
		r.event(s.VC, best.Node, eventWarning, "Takeover", "Failover", "%s: %s takes over the slots %s (%s)",
			t.why, best.Name(), valkey.FormatRanges(lp.Slots), t.mode)
		s.progress(v1alpha1.ReasonFailingOver, "%s takes over the slots of a lost primary", best.Name())
		wait = plan.RequeueFast
	}
	if wait > 0 {
		return 0, nil
	}
	return 0, r.reassignLostSlots(ctx, s)
}

// takeover is the heal phase's decision about a lost primary: by, the replica that forces
// a failover (with mode, and why), or nil while Valkey's own failover may still happen or
// the primary may be alive.
type takeover struct {
	lost plan.LostPrimary
	by   *plan.Member
	mode valkey.FailoverMode
	why  string
}

// planTakeovers decides for each lost primary. A forced failover makes a second primary
// for the same slots if the old one still runs, so it needs one of two proofs:
//   - the primary's process is gone (another server answers at its address): at once;
//   - every member the operator reaches flags the primary as failing, none reaches it,
//     and it has been silent for twice the node timeout plus takeoverMargin, in which
//     time Valkey's own failover would have happened had a majority of primaries voted.
//
// A member that still reaches the primary means a partition between it and the operator:
// Valkey decides. The most caught-up replica takes over, with a vote (FORCE) when the
// operator reaches a majority of primaries, else without (TAKEOVER).
//
// A proven death also escalates from FORCE to TAKEOVER, which needs no vote, when a
// vote cannot be won or was not: the replica claims the dead primary's slots with an
// older config epoch than a voter knows for them (each voter refuses it, and only the
// dead primary could have told the replica its newer epoch), or the primary has been
// silent for longer than a forced failover is given to complete (forcedWindow) and its
// replica still has not taken over. Without a proof of death the operator never takes
// over while a majority could vote.
func (s *scope) planTakeovers() []takeover {
	limit := 2*plan.NodeTimeout(s.VC) + plan.TakeoverMargin
	mode := valkey.FailoverTakeover
	if s.Topo.PrimaryMajorityReachable() {
		mode = valkey.FailoverForce
	}
	var out []takeover
	for _, lp := range s.Topo.LostPrimaries() {
		t := takeover{lost: lp, mode: mode}
		switch {
		case lp.Dead != "":
			by := s.SpreadChoice(shardOfLost(lp), plan.MostCaughtUpAll(promotable(lp.Replicas, lp.SilentFor+limit)))
			if by == nil {
				break
			}
			t.by, t.why = by, fmt.Sprintf("primary %s is gone (%s)", plan.ShortID(lp.ID), lp.Dead)
			if t.mode != valkey.FailoverForce {
				break
			}
			if mine, known := s.Topo.StaleEpoch(by, lp.ID); mine < known {
				t.mode = valkey.FailoverTakeover
				t.why += fmt.Sprintf("; %s knows its config epoch as %d, the voters as %d, so they would refuse it their votes", by.Name(), mine, known)
			} else if w := s.forcedWindow(); lp.SilentFor >= w {
				t.mode = valkey.FailoverTakeover
				t.why += fmt.Sprintf("; silent for %s, longer than a forced failover is given (%s), and not taken over", lp.SilentFor.Round(time.Second), w)
			}
		case len(lp.ReachedBy) == 0 && lp.SilentFor >= limit:
			t.by = s.SpreadChoice(shardOfLost(lp), plan.MostCaughtUpAll(lp.Replicas))
			t.why = fmt.Sprintf("primary %s did not answer for %s, every member flags it as failing and no failover happened (quorum lost)",
				plan.ShortID(lp.ID), lp.SilentFor.Round(time.Second))
		}
		out = append(out, t)
	}
	return out
}

// promotable keeps the replicas fit to replace a primary proven dead: not in the middle
// of a full sync, and linked to it until at most within ago: the primary's silence plus
// the wait Valkey's own failover would take. A replica that lost its primary long
// before the primary died holds older data than the cluster's own failover would
// accept; one whose link went down with the primary holds all it replicated, however
// long ago that was.
func promotable(ms []*plan.Member, within time.Duration) []*plan.Member {
	var out []*plan.Member
	for _, m := range ms {
		if m.Repl.SyncInProgress {
			continue
		}
		if m.Repl.LinkUp || (m.Repl.LinkDownSince >= 0 && time.Duration(m.Repl.LinkDownSince)*time.Second <= within) {
			out = append(out, m)
		}
	}
	return out
}

// shardOfLost is the shard of a lost primary: its replicas'.
func shardOfLost(lp plan.LostPrimary) int32 {
	if len(lp.Replicas) == 0 {
		return -1
	}
	return lp.Replicas[0].Shard()
}

// reassignLostSlots gives slots nobody serves any more (their only holder died without a
// replica and its data cannot come back) to a shard of the spec, empty: the data is lost,
// and serving the slots again beats a cluster that refuses every request.
func (r *Reconciler) reassignLostSlots(ctx context.Context, s *scope) error {
	lost, target := s.lostSlots()
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

// lostSlots returns the slots nobody serves any more, and the primary to give them to:
// the lowest shard's primary holding no slots, else the least loaded one, else nil. Nothing
// is lost while the cluster is being created or a slot is open.
func (s *scope) lostSlots() ([]valkey.SlotRange, *plan.Member) {
	if plan.Empty(s.Topo) || s.Topo.OpenSlots() {
		return nil, nil
	}
	var owned []valkey.SlotRange
	for _, rs := range s.Topo.OwnedSlots() {
		owned = append(owned, rs...)
	}
	lost := valkey.SubtractRanges([]valkey.SlotRange{{Start: 0, End: plan.SlotCount - 1}}, valkey.NormalizeRanges(owned))
	if len(lost) == 0 {
		return nil, nil
	}
	target := s.slotlessPrimary()
	if target == nil {
		target = s.leastLoadedPrimary()
	}
	return lost, target
}

// leastLoadedPrimary is the primary of a shard of the spec serving the fewest slots (the
// lowest shard on a tie): where lost slots go when no primary is empty, since the shards
// are then all in use and a later rebalance evens them out.
func (s *scope) leastLoadedPrimary() *plan.Member {
	var best *plan.Member
	for sh := int32(0); sh < s.Shards(); sh++ {
		p := s.Topo.PrimaryOf(sh)
		if p == nil || !p.Reachable || p.Leaving() {
			continue
		}
		if best == nil || valkey.CountSlots(p.Slots()) < valkey.CountSlots(best.Slots()) {
			best = p
		}
	}
	return best
}

// slotlessPrimary is the primary of the lowest shard of the spec that holds no slots.
func (s *scope) slotlessPrimary() *plan.Member {
	for sh := int32(0); sh < s.Shards(); sh++ {
		p := s.Candidate(sh)
		if p != nil && p.Reachable && !p.Leaving() && len(p.Slots()) == 0 && !p.Self.Replica {
			return p
		}
	}
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
