package plan

import (
	"fmt"
	"slices"
	"sort"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/membership"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// ScaleHeld reports whether scaling waits: the cluster is being created, or a primary is
// lost (healing comes first).
func (c *Cluster) ScaleHeld() bool {
	return Empty(c.Topo) || len(c.Topo.LostPrimaries()) > 0
}

// ScaleStep is what the scale phase does once no slot is left open.
type ScaleStep int

const (
	// scaleNothing: the shards hold their even shares and no member is beyond the spec.
	ScaleNothing ScaleStep = iota
	// scaleWaitForPrimaries: slots must move to shards whose primary has not joined yet.
	ScaleWaitForPrimaries
	// ScaleWaitForState: a primary that slots move from or to does not see the cluster
	// ok yet (a new primary learns the slot map by gossip); it would refuse the keys.
	ScaleWaitForState
	// scaleMoveSlots: move slots between primaries (moves).
	ScaleMoveSlots
	// scaleRetireRemovedShards: retire the members of shards beyond the spec, drained.
	ScaleRetireRemovedShards
	// scaleRetireSurplusReplicas: retire the replicas beyond replicasPerShard.
	ScaleRetireSurplusReplicas
)

// ScalePlan is the scale phase's next step, decided from its input alone.
type ScalePlan struct {
	Step ScaleStep
	// Moves are the slot moves, and slots the number of slots they carry.
	Moves []valkey.Move
	Slots int
	// Retire lists the members to retire, each with why.
	Retire []Retirement
	// Reason and message are Progressing'c.
	Reason, Message string
}

// Retirement is a member the scale phase retires, and why.
type Retirement struct {
	Member *Member
	Why    string
}

// PlanScale plans the fewest slot moves that leave each shard of the spec within one slot
// of an even share; with none to make, the members of removed shards whose primary holds
// no slots; with none, the surplus replicas of each shard.
func (c *Cluster) PlanScale() ScalePlan {
	if p := c.planRebalance(); p.Step != ScaleNothing {
		return p
	}
	if rs := c.removedShardMembers(); len(rs) > 0 {
		return ScalePlan{Step: ScaleRetireRemovedShards, Retire: rs, Reason: v1alpha1.ReasonScalingIn,
			Message: fmt.Sprintf("retiring %d members of removed shards", len(rs))}
	}
	if rs := c.surplusReplicas(); len(rs) > 0 {
		return ScalePlan{Step: ScaleRetireSurplusReplicas, Retire: rs, Reason: v1alpha1.ReasonRemovingReplicas,
			Message: fmt.Sprintf("retiring %d surplus replicas", len(rs))}
	}
	return ScalePlan{}
}

// Primaries returns the primary of every shard of the spec, or false while one has none
// (a new shard still forming).
func (c *Cluster) Primaries() ([]*Member, bool) {
	out := make([]*Member, c.Shards())
	for sh := range out {
		p := c.Candidate(int32(sh))
		if p == nil || !p.Reachable || p.Leaving() || p.Self.Replica || !c.Topo.FormedWith(p) || !c.ExternalKnown(p) {
			return nil, false
		}
		out[sh] = p
	}
	return out, true
}

// planRebalance plans the fewest slot moves that leave each shard of the spec within one
// slot of an even share.
func (c *Cluster) planRebalance() ScalePlan {
	targets, ok := c.Primaries()
	if !ok {
		if c.Topo.CoveredSlots() == SlotCount && c.needsRebalance() {
			return ScalePlan{Step: ScaleWaitForPrimaries, Reason: v1alpha1.ReasonScalingOut,
				Message: "waiting for the new shards' primaries to join"}
		}
		return ScalePlan{}
	}
	current := map[string][]valkey.SlotRange{}
	for id, rs := range c.Topo.OwnedSlots() {
		current[id] = rs
	}
	ids := make([]string, len(targets))
	for i, p := range targets {
		ids[i] = p.ID()
		if _, ok := current[p.ID()]; !ok {
			current[p.ID()] = nil
		}
	}
	reason := v1alpha1.ReasonScalingOut
	if len(c.Topo.Shards) > int(c.Shards()) {
		reason = v1alpha1.ReasonScalingIn
	}
	if msg := c.contestedSlots(current); msg != "" {
		// Not a scale yet: the slot map is not settled (awaitSlotMaps' reason).
		return ScalePlan{Step: ScaleWaitForState, Reason: v1alpha1.ReasonSlotsNotPropagated, Message: msg}
	}
	moves := valkey.PlanMoves(current, ids)
	if len(moves) == 0 {
		return ScalePlan{}
	}
	total := 0
	for _, mv := range moves {
		// A member that does not answer has no state: moveAll waits for it as before.
		for _, id := range []string{mv.From, mv.To} {
			if m := c.Topo.ByID(id); m != nil && m.Reachable && m.State != "ok" {
				return ScalePlan{Step: ScaleWaitForState, Reason: reason,
					Message: fmt.Sprintf("waiting for %s to see the cluster ok before slots move (cluster_state: %s)", m.Name(), m.State)}
			}
		}
		total += valkey.CountSlots(mv.Slots)
	}
	return ScalePlan{Step: ScaleMoveSlots, Moves: moves, Slots: total, Reason: reason,
		Message: fmt.Sprintf("moving %d slots in %d moves", total, len(moves))}
}

// contestedSlots says which two members both claim slots as theirs, or "": a failover
// whose two sides were observed a moment apart (the old primary, or the others' stale
// view of it, still naming it the owner while its successor serves). Slots move only
// once every slot has one owner: a move from one side to the other would send SETSLOT
// and MIGRATE to both sides of a failover.
func (c *Cluster) contestedSlots(owned map[string][]valkey.SlotRange) string {
	ids := make([]string, 0, len(owned))
	for id := range owned {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var claimed []valkey.SlotRange // the slots of the ids before, which claim none twice
	for i, id := range ids {
		mine := valkey.NormalizeRanges(owned[id])
		if both := intersectRanges(mine, claimed); len(both) > 0 {
			// The earlier owner of the lowest slot claimed twice, and all it shares with id.
			for _, other := range ids[:i] {
				if valkey.ContainsSlot(owned[other], both[0].Start) {
					return fmt.Sprintf("waiting for %s and %s to agree which of them serves slots %s (a failover settling)",
						c.nameOf(other), c.nameOf(id), valkey.FormatRanges(intersectRanges(mine, owned[other])))
				}
			}
		}
		claimed = valkey.MergeRanges(claimed, mine)
	}
	return ""
}

// intersectRanges returns the slots in both a and b, normalised.
func intersectRanges(a, b []valkey.SlotRange) []valkey.SlotRange {
	return valkey.SubtractRanges(a, valkey.SubtractRanges(a, b))
}

// nameOf is the name of the member with node ID id, or the ID when no member has it.
func (c *Cluster) nameOf(id string) string {
	if m := c.Topo.ByID(id); m != nil {
		return m.Name()
	}
	return id
}

// needsRebalance reports whether a shard of the spec has no slots or a removed shard
// still has some.
func (c *Cluster) needsRebalance() bool {
	for sh := range c.Topo.Shards {
		p := c.Topo.PrimaryOf(sh)
		has := p != nil && len(p.Slots()) > 0
		if (sh < c.Shards()) != has {
			return true
		}
	}
	return false
}

// removedShardMembers are the members of shards beyond the spec whose primary holds no
// slots: replicas and primary leave together; the leaving phase orders them.
func (c *Cluster) removedShardMembers() []Retirement {
	var indexes []int32
	for sh := range c.Topo.Shards {
		if sh >= c.Shards() {
			indexes = append(indexes, sh)
		}
	}
	slices.Sort(indexes)
	var out []Retirement
	for _, sh := range indexes {
		if p := c.Topo.PrimaryOf(sh); p != nil && len(p.Slots()) > 0 {
			continue // still draining
		}
		for _, m := range c.Topo.Shards[sh] {
			if !m.Leaving() {
				out = append(out, Retirement{m, fmt.Sprintf("shard %d is removed (spec.shards is %d)", sh, c.Shards())})
			}
		}
	}
	return out
}

// surplusReplicas are the replicas beyond replicasPerShard, never a primary: replicas
// not in sync first, then the newest.
func (c *Cluster) surplusReplicas() []Retirement {
	var out []Retirement
	for sh := int32(0); sh < c.Shards(); sh++ {
		members := c.Active(sh)
		surplus := len(members) - int(1+c.Replicas())
		if surplus <= 0 {
			continue
		}
		p := c.Topo.PrimaryOf(sh)
		var replicas []*Member
		for _, m := range members {
			if m != p && len(m.Slots()) == 0 {
				replicas = append(replicas, m)
			}
		}
		// Outdated ones first (a roll's successors are the surplus of their shard until
		// the old members are retired), then those not in sync, then the newest.
		sort.SliceStable(replicas, func(i, j int) bool {
			oi, _ := c.Outdated(replicas[i])
			oj, _ := c.Outdated(replicas[j])
			if oi != oj {
				return oi
			}
			si, sj := Synced(replicas[i], p), Synced(replicas[j], p)
			if si != sj {
				return !si
			}
			return membership.Older(replicas[j].Node, replicas[i].Node)
		})
		for i := 0; i < surplus && i < len(replicas); i++ {
			out = append(out, Retirement{replicas[i], fmt.Sprintf("shard %d has more than %d replicas", sh, c.Replicas())})
		}
	}
	return out
}
