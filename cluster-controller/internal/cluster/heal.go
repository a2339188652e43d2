package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

const (
	// takeoverMargin is added to twice the node timeout before the operator concludes that
	// Valkey's own failover will not happen (quorum lost) and forces one.
	takeoverMargin = 2 * time.Second
)

// nodeTimeout is the cluster's cluster-node-timeout.
func nodeTimeout(vc *v1alpha1.ValkeyCluster) time.Duration {
	return valkeyconf.NodeTimeout(vc.Spec.Config)
}

// lostPrimary is a primary that owns slots and does not answer, with the replicas that
// still follow it.
type lostPrimary struct {
	id       string
	slots    []valkey.SlotRange
	replicas []*member
	// silentFor is how long ago the replicas last heard from it.
	silentFor time.Duration
	// reachedBy names the members that answered the operator and do not flag the primary
	// as failing: they still reach it, so it is partitioned from the operator, not dead.
	reachedBy []string
	// dead, when set, is the proof that the primary's process is gone: another server
	// answers at its address.
	dead string
}

// lostPrimaries finds primaries with slots that reachable replicas follow but that the
// replicas see as failing, or without an address: a node answered at its address with
// another identity (a server that restarted empty in the same pod), and Valkey never
// flags such a node as failing, so its replicas would wait for it forever.
func (t *topology) lostPrimaries() []lostPrimary {
	byID := map[string]*lostPrimary{}
	for _, m := range t.reachable() {
		if !m.self.Replica || m.self.PrimaryID == "" {
			continue
		}
		if p := t.byID(m.self.PrimaryID); p != nil && p.reachable {
			continue
		}
		e, ok := m.entry(m.self.PrimaryID)
		if !ok || len(e.Slots) == 0 {
			continue
		}
		dead := t.addressTakenFrom(e)
		if dead == "" {
			dead = t.serverExited(e.ID)
		}
		if !(e.Fail || e.PFail || e.NoAddr) && dead == "" {
			continue
		}
		lp := byID[e.ID]
		if lp == nil {
			lp = &lostPrimary{id: e.ID, slots: e.Slots, dead: dead}
			byID[e.ID] = lp
		}
		lp.replicas = append(lp.replicas, m)
		silent := t.now.Sub(time.UnixMilli(e.PongRecv))
		if e.PongRecv == 0 {
			silent = t.now.Sub(time.UnixMilli(e.PingSent))
		}
		if lp.silentFor == 0 || silent < lp.silentFor {
			lp.silentFor = silent
		}
	}
	out := make([]lostPrimary, 0, len(byID))
	for _, lp := range byID {
		lp.reachedBy = t.seenAliveBy(lp.id)
		out = append(out, *lp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// seenAliveBy names the members that answered the operator and whose view does not flag
// node id as failing (or without an address): they still reach it.
func (t *topology) seenAliveBy(id string) []string {
	var out []string
	for _, v := range t.reachable() {
		if e, ok := v.entry(id); ok && v.id() != id && !(e.Fail || e.PFail || e.NoAddr) {
			out = append(out, v.name())
		}
	}
	return out
}

// addressTakenFrom returns the proof that node e's process is gone, or "": a member
// answering at e's address with another node ID (the pod's server restarted empty).
func (t *topology) addressTakenFrom(e valkey.ClusterNode) string {
	for _, m := range t.reachable() {
		if e.IP != "" && m.ip() == e.IP && m.id() != e.ID {
			return fmt.Sprintf("%s answers at its address %s as node %s", m.name(), e.IP, shortID(m.id()))
		}
	}
	return ""
}

// serverExited returns the proof that node id's process is gone from its member's
// ServerDown condition (the kubelet saw the server container exit, and the server has
// not answered since), or "".
func (t *topology) serverExited(id string) string {
	if t.ignoreServerDown {
		return ""
	}
	for _, m := range t.members {
		if m.node.Status.NodeID != id || m.reachable {
			continue
		}
		if c := conditions.Get(m.node.Status.Conditions, v1alpha1.ConditionServerDown); c != nil && c.Status == metav1.ConditionTrue {
			return "its member reports the server down: " + c.Message
		}
	}
	return ""
}

// primaryMajorityReachable reports whether the operator reaches more than half of the
// primaries that serve slots: then a forced failover can win its election.
func (t *topology) primaryMajorityReachable() bool {
	owners := t.ownedSlots()
	reached := 0
	for id := range owners {
		if m := t.byID(id); m != nil && m.reachable {
			reached++
		}
	}
	return reached*2 > len(owners)
}

// reconcileHeal handles what Valkey cannot handle alone: a failover that does not happen
// because a majority of primaries is gone (quorum lost), and slots whose data is gone.
func (r *Reconciler) reconcileHeal(ctx context.Context, s *scope) (time.Duration, error) {
	var wait time.Duration
	for _, t := range s.planTakeovers() {
		lp, best := t.lost, t.by
		switch {
		case len(lp.reachedBy) > 0 && best == nil:
			s.progress(v1alpha1.ReasonPartitioned,
				"primary %s does not answer the operator, but %s still reach it: a partition, not a death, so no failover is forced",
				shortID(lp.id), strings.Join(lp.reachedBy, ", "))
			wait = requeueWait
			continue
		case best == nil:
			s.progress(v1alpha1.ReasonFailingOver, "primary %s is not answering; waiting for Valkey's failover", shortID(lp.id))
			wait = requeueWait
			continue
		}
		if pending := s.failoverPending(best.shard()); pending != nil {
			s.progress(v1alpha1.ReasonFailingOver, "waiting for %s to complete its takeover of shard %d", pending.name(), best.shard())
			wait = requeueFast
			continue
		}
		if err := r.recordFailoverRequest(ctx, best, s.topo.now, v1alpha1.FailoverForced); err != nil {
			return 0, err
		}
		c, err := r.client(ctx, s, best)
		if err != nil {
			return 0, err
		}
		if err := c.Failover(ctx, t.mode); err != nil {
			return 0, fmt.Errorf("forced failover by %s: %w", best.name(), err)
		}
		log.FromContext(ctx).Info("forced a failover", "member", best.name(), "shard", best.shard(), "mode", t.mode.String(), "why", t.why)
		r.event(s.vc, best.node, eventWarning, "Takeover", "Failover", "%s: %s takes over the slots %s (%s)",
			t.why, best.name(), valkey.FormatRanges(lp.slots), t.mode)
		s.progress(v1alpha1.ReasonFailingOver, "%s takes over the slots of a lost primary", best.name())
		wait = requeueFast
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
	lost lostPrimary
	by   *member
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
	limit := 2*nodeTimeout(s.vc) + takeoverMargin
	mode := valkey.FailoverTakeover
	if s.topo.primaryMajorityReachable() {
		mode = valkey.FailoverForce
	}
	var out []takeover
	for _, lp := range s.topo.lostPrimaries() {
		t := takeover{lost: lp, mode: mode}
		switch {
		case lp.dead != "":
			by := s.spreadChoice(shardOfLost(lp), mostCaughtUpAll(promotable(lp.replicas, lp.silentFor+limit)))
			if by == nil {
				break
			}
			t.by, t.why = by, fmt.Sprintf("primary %s is gone (%s)", shortID(lp.id), lp.dead)
			if t.mode != valkey.FailoverForce {
				break
			}
			if mine, known := s.topo.staleEpoch(by, lp.id); mine < known {
				t.mode = valkey.FailoverTakeover
				t.why += fmt.Sprintf("; %s knows its config epoch as %d, the voters as %d, so they would refuse it their votes", by.name(), mine, known)
			} else if w := s.forcedWindow(); lp.silentFor >= w {
				t.mode = valkey.FailoverTakeover
				t.why += fmt.Sprintf("; silent for %s, longer than a forced failover is given (%s), and not taken over", lp.silentFor.Round(time.Second), w)
			}
		case len(lp.reachedBy) == 0 && lp.silentFor >= limit:
			t.by = s.spreadChoice(shardOfLost(lp), mostCaughtUpAll(lp.replicas))
			t.why = fmt.Sprintf("primary %s did not answer for %s, every member flags it as failing and no failover happened (quorum lost)",
				shortID(lp.id), lp.silentFor.Round(time.Second))
		}
		out = append(out, t)
	}
	return out
}

// staleEpoch returns the config epoch replica m knows for node id, and the highest one
// a voter (a reachable primary with slots) knows for it.
func (t *topology) staleEpoch(m *member, id string) (mine, known uint64) {
	if e, ok := m.entry(id); ok {
		mine = e.ConfigEpoch
	}
	known = mine
	for _, v := range t.reachable() {
		if !v.isPrimary() || len(v.slots()) == 0 {
			continue
		}
		if e, ok := v.entry(id); ok && e.ConfigEpoch > known {
			known = e.ConfigEpoch
		}
	}
	return mine, known
}

// promotable keeps the replicas fit to replace a primary proven dead: not in the middle
// of a full sync, and linked to it until at most within ago: the primary's silence plus
// the wait Valkey's own failover would take. A replica that lost its primary long
// before the primary died holds older data than the cluster's own failover would
// accept; one whose link went down with the primary holds all it replicated, however
// long ago that was.
func promotable(ms []*member, within time.Duration) []*member {
	var out []*member
	for _, m := range ms {
		if m.repl.SyncInProgress {
			continue
		}
		if m.repl.LinkUp || (m.repl.LinkDownSince >= 0 && time.Duration(m.repl.LinkDownSince)*time.Second <= within) {
			out = append(out, m)
		}
	}
	return out
}

// shardOfLost is the shard of a lost primary: its replicas'.
func shardOfLost(lp lostPrimary) int32 {
	if len(lp.replicas) == 0 {
		return -1
	}
	return lp.replicas[0].shard()
}

// mostCaughtUp returns the replica with the highest replication offset, nil for none.
func mostCaughtUp(ms []*member) *member {
	if len(ms) == 0 {
		return nil
	}
	best := ms[0]
	for _, m := range ms[1:] {
		if m.repl.Offset > best.repl.Offset {
			best = m
		}
	}
	return best
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
		return fmt.Errorf("give lost slots %s to %s: %w", valkey.FormatRanges(lost), target.name(), err)
	}
	r.event(s.vc, target.node, eventWarning, "SlotsReassigned", "AssignSlots",
		"slots %s had no server left and their data cannot come back: given, empty, to %s (shard %d)",
		valkey.FormatRanges(lost), target.name(), target.shard())
	s.progress(v1alpha1.ReasonDataLost, "slots %s were lost with their data and given to shard %d", valkey.FormatRanges(lost), target.shard())
	return nil
}

// lostSlots returns the slots nobody serves any more, and the primary to give them to:
// the lowest shard's primary holding no slots, else the least loaded one, else nil. Nothing
// is lost while the cluster is being created or a slot is open.
func (s *scope) lostSlots() ([]valkey.SlotRange, *member) {
	if clusterEmpty(s.topo) || s.topo.openSlots() {
		return nil, nil
	}
	var owned []valkey.SlotRange
	for _, rs := range s.topo.ownedSlots() {
		owned = append(owned, rs...)
	}
	lost := valkey.SubtractRanges([]valkey.SlotRange{{Start: 0, End: slotCount - 1}}, valkey.NormalizeRanges(owned))
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
func (s *scope) leastLoadedPrimary() *member {
	var best *member
	for sh := int32(0); sh < s.shards(); sh++ {
		p := s.topo.primaryOf(sh)
		if p == nil || !p.reachable || p.leaving() {
			continue
		}
		if best == nil || valkey.CountSlots(p.slots()) < valkey.CountSlots(best.slots()) {
			best = p
		}
	}
	return best
}

// slotlessPrimary is the primary of the lowest shard of the spec that holds no slots.
func (s *scope) slotlessPrimary() *member {
	for sh := int32(0); sh < s.shards(); sh++ {
		p := s.candidate(sh)
		if p != nil && p.reachable && !p.leaving() && len(p.slots()) == 0 && !p.self.Replica {
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
	forget, soon := s.topo.toForget()
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
		ids[i] = shortID(id)
	}
	r.event(s.vc, nil, eventWarning, "NodesForgotten", "Forget", "forgot nodes no member owns: %s", strings.Join(ids, ", "))
	s.progress(v1alpha1.ReasonForgettingNodes, "forgot %d nodes no member owns", len(forget))
	return 0, nil
}

// toForget returns the strangers to forget now, unless a replica follows them: the old
// identities of members that came back with a new one, and the nodes the cluster flags as
// failed that cannot be a member that did not answer. soon reports a stranger that may be
// forgotten once Valkey flags it as failed.
func (t *topology) toForget() (forget []string, soon bool) {
	replaced := t.replacedIdentities()
	for _, id := range t.strangers() {
		if t.followed(id) {
			continue
		}
		if !replaced[id] {
			if t.mayBeMember(id) {
				continue
			}
			if !t.failed(id) {
				soon = true
				continue
			}
		}
		forget = append(forget, id)
	}
	return forget, soon
}

// replacedIdentities are the node IDs members had until this pass: a member whose server
// now answers with another ID (its pod came back empty) left its old identity behind for
// good, so it is forgotten at once instead of after Valkey flags it as failed (about the
// node timeout later). Only this pass knows it: the member's status gets the new ID.
func (t *topology) replacedIdentities() map[string]bool {
	out := map[string]bool{}
	for _, m := range t.members {
		if old := m.node.Status.NodeID; m.reachable && m.self.ID != "" && old != "" && old != m.self.ID {
			out[old] = true
		}
	}
	return out
}

// failed reports whether a member's view flags node id as failed (the cluster agreed it
// is unreachable) or without an address. A stranger that still talks may be a member
// whose new pod the operator has not seen yet (its ValkeyNode's status lags the pod): it
// is never forgotten, or it would be cut out of the cluster it just joined.
func (t *topology) failed(id string) bool {
	for _, m := range t.reachable() {
		if e, ok := m.entry(id); ok && (e.Fail || e.NoAddr) {
			return true
		}
	}
	return false
}

// followed reports whether a reachable member replicates node id.
func (t *topology) followed(id string) bool {
	for _, m := range t.reachable() {
		if m.self.Replica && m.self.PrimaryID == id {
			return true
		}
	}
	return false
}

// mayBeMember reports whether node id sits at the address of a member whose server did
// not answer this pass: it may be that member, so it is not forgotten.
func (t *topology) mayBeMember(id string) bool {
	for _, m := range t.members {
		if m.reachable || m.ip() == "" {
			continue
		}
		for _, v := range t.reachable() {
			if e, ok := v.entry(id); ok && e.IP == m.ip() {
				return true
			}
		}
	}
	return false
}

// forgetEverywhere sends CLUSTER FORGET for each id to every reachable member but the
// node itself. Valkey bans a forgotten node for 60 s, so all members must forget it
// within that time; they are asked together.
func (r *Reconciler) forgetEverywhere(ctx context.Context, s *scope, ids ...string) error {
	var errs []string
	for _, m := range s.topo.reachable() {
		c, err := r.client(ctx, s, m)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for _, id := range ids {
			if id == m.id() {
				continue
			}
			if _, known := m.entry(id); !known {
				continue
			}
			if err := c.Forget(ctx, id); err != nil {
				msg, _ := valkey.ServerMessage(err)
				if strings.Contains(msg, "Unknown node") {
					continue
				}
				errs = append(errs, fmt.Sprintf("%s: %v", m.name(), err))
			}
		}
	}
	if len(errs) > 0 {
		log.FromContext(ctx).Info("some members did not forget", "errors", errs)
		return fmt.Errorf("forget %d nodes: %s", len(ids), strings.Join(errs, "; "))
	}
	return nil
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
