package plan

import (
	"fmt"
	"strings"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// StuckCause names what keeps members from starting, from their own conditions: the
// reason most of them share, how many, and the first one's message. ok is false when
// none is blocked.
func StuckCause(members []*Member) (reason, message string, ok bool) {
	byReason := map[string][]*Member{}
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
	return best, fmt.Sprintf("%s: %d %s cannot run (%s): %s", best, len(ms), what, strings.Join(names, ", "), Truncate(MemberMessage(first), 400)), true
}

// Meetings returns the (from, to) pairs that must meet: one per pair of members that do
// not both know each other, from the first when neither knows the other, else from the
// side that lacks the other.
func Meetings(reach []*Member) [][2]*Member {
	var out [][2]*Member
	for i, a := range reach {
		for _, b := range reach[i+1:] {
			if a.Leaving() || b.Leaving() {
				continue
			}
			switch aKnows, bKnows := meetPending(a, b), meetPending(b, a); {
			case aKnows && bKnows:
			case aKnows:
				out = append(out, [2]*Member{b, a})
			default:
				out = append(out, [2]*Member{a, b})
			}
		}
	}
	return out
}

// meetPending reports whether a already knows m at its current address, or is in the
// middle of a handshake with that address.
func meetPending(a, m *Member) bool {
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

// Candidate is the member that is (or is to become) the primary of shard sh. A shard in
// failover has none: its replica holds the data and must become the primary (by Valkey's
// vote or the operator's takeover); no other member may be chosen over it, least of all
// an empty one that came back in place of the lost primary. A shard that has no primary
// yet (a new cluster, a new shard) gets the member that answers whose node keeps the
// primaries spread (NewPrimaries; the oldest with policy None): the replicas phase makes
// the others follow it in the same pass, which settles the choice.
func (c *Cluster) Candidate(sh int32) *Member {
	if p := c.Topo.PrimaryOf(sh); p != nil {
		return p
	}
	if c.Topo.InFailover(sh) {
		return nil
	}
	if c.Place != nil {
		return c.newPrimary(sh)
	}
	for _, m := range c.Active(sh) {
		if m.Reachable {
			return m
		}
	}
	return nil
}

// newPrimary is the member to become the first primary of shard sh, chosen once per
// pass for every shard without a primary (NewPrimaries).
func (c *Cluster) newPrimary(sh int32) *Member {
	if c.Place.First == nil {
		candidates := map[int32][]string{}
		for i := int32(0); i < c.Shards(); i++ {
			if c.Topo.PrimaryOf(i) != nil || c.Topo.InFailover(i) {
				continue
			}
			for _, m := range c.Active(i) {
				if m.Reachable {
					candidates[i] = append(candidates[i], m.Name())
				}
			}
		}
		c.Place.First = NewPrimaries(c.Place.Shards, candidates)
	}
	for _, m := range c.Active(sh) {
		if m.Name() == c.Place.First[sh] && m.Reachable {
			return m
		}
	}
	return nil
}

// EmptyPlan is the slots phase's decision for a cluster no answering server serves a
// slot of: primaries, one per shard of the spec, to give the slots to; lost, when the
// cluster served them before (its data is gone); or wait, why not yet, with reason.
type EmptyPlan struct {
	Primaries    []*Member
	Lost         bool
	Reason, Wait string
}

// PlanEmpty decides on a cluster whose answering servers serve no slot. Giving out all
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
func (c *Cluster) PlanEmpty() EmptyPlan {
	var silent, holding []string
	for _, m := range c.Topo.Members {
		switch {
		case m.Leaving():
		case !m.Reachable:
			silent = append(silent, m.Name())
		case !m.KeysKnown || m.Keys > 0:
			holding = append(holding, fmt.Sprintf("%s (%d keys)", m.Name(), m.Keys))
		}
	}
	servedBefore := c.VC.Status.FirstReadyTime != nil
	switch {
	case len(silent) > 0 && servedBefore:
		return EmptyPlan{Reason: v1alpha1.ReasonSlotsUncovered, Wait: fmt.Sprintf(
			"no server that answers serves a slot; waiting for %s to answer before concluding that the data is lost", strings.Join(silent, ", "))}
	case len(silent) > 0:
		return EmptyPlan{Reason: v1alpha1.ReasonWaitingForPods, Wait: "waiting for the servers of " + strings.Join(silent, ", ") + " before assigning slots"}
	case len(holding) > 0:
		return EmptyPlan{Reason: v1alpha1.ReasonSlotsUncovered, Wait: fmt.Sprintf(
			"no server serves a slot, but %s hold data: the slots are not assigned again while a member holds keys no slot map places", strings.Join(holding, ", "))}
	}
	primaries := make([]*Member, c.Shards())
	for sh := range primaries {
		if primaries[sh] = c.Candidate(int32(sh)); primaries[sh] == nil {
			return EmptyPlan{Reason: v1alpha1.ReasonWaitingForPods, Wait: "waiting for a server in every shard before assigning slots"}
		}
	}
	return EmptyPlan{Primaries: primaries, Lost: servedBefore}
}

// Truncate shortens s to n bytes, marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// EvenSlotsFor returns the slots shard s gets in a fresh cluster of n shards.
func EvenSlotsFor(n, s int32) []valkey.SlotRange {
	return valkey.EvenRanges(int(n))[s]
}
