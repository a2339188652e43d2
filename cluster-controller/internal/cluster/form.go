package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// stuckCause names what keeps members from starting, from their own conditions: the
// reason most of them share, how many, and the first one's message. ok is false when
// none is blocked.
func stuckCause(members []*plan.Member) (reason, message string, ok bool) {
	byReason := map[string][]*plan.Member{}
	var order []string
	for _, m := range members {
		c := m.CannotRun()
		if c == nil {
			continue
		}
		if byReason[c.Reason] == nil {
			order = append(order, c.Reason)
		}
		byReason[c.Reason] = append(byReason[c.Reason], m)
	}
	if len(order) == 0 {
		return "", "", false
	}
	best := order[0]
	for _, r := range order[1:] {
		if len(byReason[r]) > len(byReason[best]) {
			best = r
		}
	}
	ms := byReason[best]
	names := make([]string, 0, len(ms))
	for _, m := range ms {
		names = append(names, m.Name())
	}
	what := "member"
	if len(ms) > 1 {
		what = "members"
	}
	first := ms[0].CannotRun()
	return best, fmt.Sprintf("%s: %d %s cannot run (%s): %s", best, len(ms), what, strings.Join(names, ", "), truncate(plan.MemberMessage(first), 400)), true
}

// reconcileMembers keeps 1+replicasPerShard members in every shard of the spec: it retires
// members whose pod is gone for good and creates the missing ones. Shards beyond the
// spec are left to scaling, surplus members to scaling and rolling.
func (r *Reconciler) reconcileMembers(ctx context.Context, s *scope) (time.Duration, error) {
	for _, m := range s.Topo.Members {
		if !m.Leaving() && plan.Gone(m) {
			c := conditions.Get(m.Node.Status.Conditions, v1alpha1.ConditionPodReady)
			if err := r.retire(ctx, s.VC, m, "its pod is gone: "+plan.MemberMessage(c)); err != nil {
				return 0, err
			}
			now := metav1.NewTime(s.Topo.Now)
			m.Node.DeletionTimestamp = &now // counted as leaving for the rest of the pass
		}
	}
	created, later := 0, 0 // members created in this pass, and left for the next ones
	var live map[int32]int // counted by the API server, only when the cache says members are missing
	for sh := int32(0); sh < s.Shards(); sh++ {
		want := int(1 + s.Replicas())
		n := len(s.Active(sh))
		if n >= want {
			continue
		}
		if live == nil {
			var err error
			if live, err = r.countMembers(ctx, s.VC); err != nil {
				return 0, err
			}
		}
		for n = max(n, live[sh]); n < want; n++ {
			if created == r.createBatch() {
				later++
				continue
			}
			if _, err := r.createMember(ctx, s.VC, sh, fmt.Sprintf("shard %d has %d of %d members", sh, n, want)); err != nil {
				return 0, err
			}
			created++
		}
	}
	if created > 0 && later > 0 {
		s.progress(v1alpha1.ReasonCreatingMembers, "created %d members, %d more in the next passes", created, later)
		return 0, nil
	}
	if created > 0 {
		s.progress(v1alpha1.ReasonCreatingMembers, "created %d members", created)
		// The new members have no pods yet: nothing else can use them this pass, and the
		// watch on their status brings the next pass.
		return 0, nil
	}
	var unreachable []*plan.Member
	for _, m := range s.Topo.Members {
		if !m.Leaving() && !m.Reachable {
			unreachable = append(unreachable, m)
		}
	}
	if msg := tooLargeCause(unreachable); msg != "" {
		s.progress(v1alpha1.ReasonReplyTooLarge, "%s", msg)
	} else if reason, msg, ok := stuckCause(unreachable); ok {
		s.progress(reason, "%s", msg)
	} else if msg := s.Topo.Partitioned(unreachable); msg != "" {
		s.progress(v1alpha1.ReasonPartitioned, "%s", msg)
	} else if len(unreachable) > 0 {
		names := make([]string, len(unreachable))
		for i, m := range unreachable {
			names[i] = m.Name()
		}
		s.progress(v1alpha1.ReasonWaitingForPods, "waiting for the servers of %s", strings.Join(names, ", "))
	}
	return 0, nil
}

// reconcileMeet makes every member that does not know another (or knows it at an old
// address: a pod recreated with its volume keeps its node ID and changes its IP) meet it.
// Meeting from the side that lacks the other always converges, whatever each side's view:
// a member forgotten by the others while it still knows them is met again.
func (r *Reconciler) reconcileMeet(ctx context.Context, s *scope) (time.Duration, error) {
	var met []string
	var joinable []*plan.Member
	for _, m := range s.Topo.Reachable() {
		// With external access a member joins once it announces its external address:
		// clients never learn its pod address.
		if s.ExternalReady(m) {
			joinable = append(joinable, m)
		}
	}
	for _, pair := range meetings(joinable) {
		from, to := pair[0], pair[1]
		c, err := r.client(ctx, s, from)
		if err != nil {
			return 0, err
		}
		host, port, err := to.HostPort()
		if err != nil {
			return 0, err
		}
		if err := c.Meet(ctx, host, port, port+busPortOffset); err != nil {
			return 0, fmt.Errorf("meet %s from %s: %w", to.Name(), from.Name(), err)
		}
		met = append(met, from.Name()+"->"+to.Name())
	}
	if len(met) > 0 {
		log.FromContext(ctx).Info("met members", "meetings", met)
		s.progress(v1alpha1.ReasonMeetingMembers, "introducing members to each other: %s", strings.Join(met, ", "))
	} else if p := s.ExternalPending(); len(p) > 0 {
		s.progress(v1alpha1.ReasonWaitingForMember, "waiting for external addresses: %s", strings.Join(p, "; "))
	} else if !s.Topo.Formed() {
		s.progress(v1alpha1.ReasonMeetingMembers, "waiting for the members to learn of each other")
	} else if u := s.ExternalUnseen(); len(u) > 0 {
		// Gossip spreads an announced address; no event says when it has.
		return plan.RequeueSync, nil
	}
	return 0, nil
}

// meetings returns the (from, to) pairs that must meet: one per pair of members that do
// not both know each other, from the first when neither knows the other, else from the
// side that lacks the other.
func meetings(reach []*plan.Member) [][2]*plan.Member {
	var out [][2]*plan.Member
	for i, a := range reach {
		for _, b := range reach[i+1:] {
			if a.Leaving() || b.Leaving() {
				continue
			}
			switch aKnows, bKnows := meetPending(a, b), meetPending(b, a); {
			case aKnows && bKnows:
			case aKnows:
				out = append(out, [2]*plan.Member{b, a})
			default:
				out = append(out, [2]*plan.Member{a, b})
			}
		}
	}
	return out
}

// meetPending reports whether a already knows m at its current address, or is in the
// middle of a handshake with that address.
func meetPending(a, m *plan.Member) bool {
	for _, n := range a.View {
		if n.IP != m.IP() {
			continue
		}
		if n.Handshake || n.ID == m.ID() {
			return true
		}
	}
	return false
}

// candidate is the member that is (or is to become) the primary of shard sh. A shard in
// failover has none: its replica holds the data and must become the primary (by Valkey's
// vote or the operator's takeover); no other member may be chosen over it, least of all
// an empty one that came back in place of the lost primary. A shard that has no primary
// yet (a new cluster, a new shard) gets the member that answers whose node keeps the
// primaries spread (newPrimaries; the oldest with policy None): the replicas phase makes
// the others follow it in the same pass, which settles the choice.
func (s *scope) candidate(sh int32) *plan.Member {
	if p := s.Topo.PrimaryOf(sh); p != nil {
		return p
	}
	if s.Topo.InFailover(sh) {
		return nil
	}
	if s.Place != nil {
		return s.newPrimary(sh)
	}
	for _, m := range s.Active(sh) {
		if m.Reachable {
			return m
		}
	}
	return nil
}

// newPrimary is the member to become the first primary of shard sh, chosen once per
// pass for every shard without a primary (newPrimaries).
func (s *scope) newPrimary(sh int32) *plan.Member {
	if s.Place.First == nil {
		candidates := map[int32][]string{}
		for i := int32(0); i < s.Shards(); i++ {
			if s.Topo.PrimaryOf(i) != nil || s.Topo.InFailover(i) {
				continue
			}
			for _, m := range s.Active(i) {
				if m.Reachable {
					candidates[i] = append(candidates[i], m.Name())
				}
			}
		}
		s.Place.First = plan.NewPrimaries(s.Place.Shards, candidates)
	}
	for _, m := range s.Active(sh) {
		if m.Name() == s.Place.First[sh] && m.Reachable {
			return m
		}
	}
	return nil
}

// reconcileSlots gives a cluster whose servers serve no slot at all its slots: each
// shard's primary gets its contiguous even share, all in one pass, when planEmpty says
// so (a new cluster, or one whose every server came back empty).
func (r *Reconciler) reconcileSlots(ctx context.Context, s *scope) (time.Duration, error) {
	if !plan.Empty(s.Topo) {
		return 0, nil
	}
	plan := s.planEmpty()
	if plan.wait != "" {
		s.progress(plan.reason, "%s", plan.wait)
		return 0, nil
	}
	var given []string
	for sh, p := range plan.primaries {
		c, err := r.client(ctx, s, p)
		if err != nil {
			return 0, err
		}
		ranges := evenSlotsFor(s.Shards(), int32(sh))
		if err := c.AddSlotsRange(ctx, ranges); err != nil {
			return 0, fmt.Errorf("assign slots %s to %s: %w", valkey.FormatRanges(ranges), p.Name(), err)
		}
		p.Self.Slots = ranges // the rest of the pass sees the primary it just made
		p.Self.Primary = true
		given = append(given, fmt.Sprintf("slots %s to %s (shard %d)", valkey.FormatRanges(ranges), p.Name(), sh))
	}
	if plan.lost {
		r.event(s.VC, nil, eventWarning, "SlotsReassigned", "AssignSlots",
			"every server of the cluster restarted without its data, so the data of all 16384 slots is lost; given, empty: %s", strings.Join(given, "; "))
		s.progress(v1alpha1.ReasonDataLost, "every server restarted without its data; the slots were assigned again, empty")
		return 0, nil
	}
	r.event(s.VC, nil, eventNormal, "SlotsAssigned", "AssignSlots", "assigned the 16384 slots to %d shards", s.Shards())
	s.progress(v1alpha1.ReasonAssigningSlots, "assigned the slots; waiting for the cluster to agree")
	return 0, nil
}

// emptyPlan is the slots phase's decision for a cluster no answering server serves a
// slot of: primaries, one per shard of the spec, to give the slots to; lost, when the
// cluster served them before (its data is gone); or wait, why not yet, with reason.
type emptyPlan struct {
	primaries    []*plan.Member
	lost         bool
	reason, wait string
}

// planEmpty decides on a cluster whose answering servers serve no slot. Giving out all
// 16384 slots is the most destructive thing the operator does to a cluster that held
// data, so it needs positive evidence that nothing is there to lose, never the silence
// of a member:
//   - every member that is not leaving answers: one that does not may be serving the
//     slots (given to it by an earlier pass, or holding them since before it went
//     silent), and the answering ones may not have heard of it yet;
//   - every answering member's dataset is empty: keys on a server that serves no slot
//     are data the operator cannot place;
//   - each shard of the spec has a member to be its primary.
//
// A cluster that has never been Ready (status.firstReadyTime unset) is being created: its
// slots are assigned as new. One that has been Ready lost its data with its servers,
// which the plan says (lost).
func (s *scope) planEmpty() emptyPlan {
	var silent, holding []string
	for _, m := range s.Topo.Members {
		switch {
		case m.Leaving():
		case !m.Reachable:
			silent = append(silent, m.Name())
		case !m.KeysKnown || m.Keys > 0:
			holding = append(holding, fmt.Sprintf("%s (%d keys)", m.Name(), m.Keys))
		}
	}
	servedBefore := s.VC.Status.FirstReadyTime != nil
	switch {
	case len(silent) > 0 && servedBefore:
		return emptyPlan{reason: v1alpha1.ReasonSlotsUncovered, wait: fmt.Sprintf(
			"no server that answers serves a slot; waiting for %s to answer before concluding that the data is lost", strings.Join(silent, ", "))}
	case len(silent) > 0:
		return emptyPlan{reason: v1alpha1.ReasonWaitingForPods, wait: "waiting for the servers of " + strings.Join(silent, ", ") + " before assigning slots"}
	case len(holding) > 0:
		return emptyPlan{reason: v1alpha1.ReasonSlotsUncovered, wait: fmt.Sprintf(
			"no server serves a slot, but %s hold data: the slots are not assigned again while a member holds keys no slot map places", strings.Join(holding, ", "))}
	}
	primaries := make([]*plan.Member, s.Shards())
	for sh := range primaries {
		if primaries[sh] = s.candidate(int32(sh)); primaries[sh] == nil {
			return emptyPlan{reason: v1alpha1.ReasonWaitingForPods, wait: "waiting for a server in every shard before assigning slots"}
		}
	}
	return emptyPlan{primaries: primaries, lost: servedBefore}
}

// reconcileReplicas makes every other member of a shard replicate the shard's primary.
func (r *Reconciler) reconcileReplicas(ctx context.Context, s *scope) (time.Duration, error) {
	var pending []string
	var after time.Duration
	for sh := int32(0); sh < s.Shards(); sh++ {
		p := s.candidate(sh)
		if p == nil {
			continue
		}
		for _, m := range s.Active(sh) {
			if m == p || !m.Reachable || (m.Self.Replica && m.Self.PrimaryID == p.ID()) {
				continue
			}
			if len(m.Slots()) > 0 {
				continue // a second primary with slots in one shard: never turn it into a replica here
			}
			if !m.Knows(p.ID()) {
				pending = append(pending, m.Name())
				continue
			}
			if !s.ExternalKnown(m) {
				// A replica is in every slot map: it is made one only once every member
				// names it by its external address (gossip spreads it, no event says when).
				pending = append(pending, m.Name()+" (its external address not known to every member yet)")
				after = plan.RequeueSync
				continue
			}
			c, err := r.client(ctx, s, m)
			if err != nil {
				return 0, err
			}
			if err := c.Replicate(ctx, p.ID()); err != nil {
				if valkey.IsServerError(err) {
					pending = append(pending, m.Name())
					log.FromContext(ctx).Info("replicate refused for now", "member", m.Name(), "error", err.Error())
					continue
				}
				return 0, fmt.Errorf("replicate %s to %s: %w", m.Name(), p.Name(), err)
			}
			log.FromContext(ctx).Info("replica follows its primary", "member", m.Name(), "primary", p.Name())
			pending = append(pending, m.Name())
		}
	}
	if len(pending) > 0 {
		s.progress(v1alpha1.ReasonReplicating, "setting up replication of %s", strings.Join(pending, ", "))
	}
	return after, nil
}

// truncate shortens s to n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
