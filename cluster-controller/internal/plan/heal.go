package plan

import (
	"fmt"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

const (
	// TakeoverMargin is added to twice the node timeout before the operator concludes that
	// Valkey's own failover will not happen (quorum lost) and forces one.
	TakeoverMargin = 2 * time.Second
	// ForceGrace is how long a forced failover asked on a proof of death is given before
	// the operator takes over without a vote: an election among reachable primaries
	// completes in milliseconds, and one that failed (a voter's view of the replica
	// behind the cluster's) is not retried by Valkey before its election retry time.
	ForceGrace = 1500 * time.Millisecond
	// DrainWait bounds how long, after Kubernetes reported a primary's server down, the
	// operator waits for the replica it promotes to see its link to that primary close:
	// until then the replica may not have read all the dead primary sent (a replica
	// starved of CPU reads its stream late), and a promotion discards what it has not read.
	DrainWait = 2 * time.Second
)

// NodeTimeout is the cluster's cluster-node-timeout.
func NodeTimeout(vc *v1alpha1.ValkeyCluster) time.Duration {
	return valkeyconf.NodeTimeout(vc.Spec.Config)
}

// Takeover is the heal phase's decision about a lost primary: by, the replica that forces
// a failover (with mode, and why), or nil while Valkey's own failover may still happen or
// the primary may be alive.
type Takeover struct {
	Lost LostPrimary
	By   *Member
	Mode valkey.FailoverMode
	Why  string
	// Escalates is set when By was asked for a FORCE that did not take effect within
	// ForceGrace: the TAKEOVER replaces that pending request.
	Escalates bool
	// Draining, when set (By nil), says which replica is about to take over once it has
	// read the last of its dead primary's stream.
	Draining string
}

// PlanTakeovers decides for each lost primary. A forced failover makes a second primary
// for the same slots if the old one still runs, so it needs one of two proofs:
//   - the primary's process is gone (another server answers at its address): at once;
//   - every member the operator reaches flags the primary as failing, none reaches it,
//     and it has been silent for twice the node timeout plus TakeoverMargin, in which
//     time Valkey's own failover would have happened had a majority of primaries voted.
//
// On a proof of death the replica is promoted once its replication link to the dead
// primary has closed (it has then read everything the primary sent before it died), or
// DrainWait after Kubernetes' report, whichever comes first.
//
// A member that still reaches the primary means a partition between it and the operator:
// Valkey decides. The most caught-up replica takes over, with a vote (FORCE) when the
// operator reaches a majority of primaries, else without (TAKEOVER).
//
// A proven death also escalates from FORCE to TAKEOVER, which needs no vote, when a
// vote cannot be won or was not: the replica claims the dead primary's slots with an
// older config epoch than a voter knows for them (each voter refuses it, and only the
// dead primary could have told the replica its newer epoch), fewer than a majority of
// the primaries know the replica as one (a voter that sees it as a primary, or does not
// know it, refuses: right after a failover the news takes a gossip round to reach every
// primary), the replica was asked for a FORCE at least ForceGrace ago and is still a
// replica, or the primary has been silent for longer than a forced failover is given to
// complete (ForcedWindow). Without a proof of death the operator never takes over while
// a majority could vote.
func (c *Cluster) PlanTakeovers() []Takeover {
	limit := 2*NodeTimeout(c.VC) + TakeoverMargin
	mode := valkey.FailoverTakeover
	if c.Topo.PrimaryMajorityReachable() {
		mode = valkey.FailoverForce
	}
	var out []Takeover
	for _, lp := range c.Topo.LostPrimaries() {
		t := Takeover{Lost: lp, Mode: mode}
		switch {
		case lp.Dead != "":
			by := c.SpreadChoice(shardOfLost(lp), MostCaughtUpAll(promotable(lp.Replicas, lp.SilentFor+limit)))
			if by == nil {
				break
			}
			if since := c.Topo.Now.Sub(lp.DeadSince); by.Repl.LinkUp && !lp.DeadSince.IsZero() && since < DrainWait {
				t.Draining = fmt.Sprintf("%s takes over from primary %s, gone (%s), once its link to it closes (it may not have read all it was sent yet; at most %s)",
					by.Name(), ShortID(lp.ID), lp.Dead, DrainWait)
				break
			}
			t.By, t.Why = by, fmt.Sprintf("primary %s is gone (%s)", ShortID(lp.ID), lp.Dead)
			if t.Mode != valkey.FailoverForce {
				break
			}
			if mine, known := c.Topo.StaleEpoch(by, lp.ID); mine < known {
				t.Mode = valkey.FailoverTakeover
				t.Why += fmt.Sprintf("; %s knows its config epoch as %d, the voters as %d, so they would refuse it their votes", by.Name(), mine, known)
			} else if willing, voters := c.Topo.VotersKnowingReplica(by); willing*2 <= voters {
				t.Mode = valkey.FailoverTakeover
				t.Why += fmt.Sprintf("; only %d of the %d primaries know %s as a replica, the others would refuse it their votes", willing, voters, by.Name())
			} else if f, ok := FailoverRecord(by); ok && f.Kind == v1alpha1.FailoverForced && c.Topo.Now.Sub(f.RequestedAt.Time) >= ForceGrace {
				t.Mode, t.Escalates = valkey.FailoverTakeover, true
				t.Why += fmt.Sprintf("; its forced failover asked %s ago has not taken effect", c.Topo.Now.Sub(f.RequestedAt.Time).Round(100*time.Millisecond))
			} else if w := c.ForcedWindow(); lp.SilentFor >= w {
				t.Mode = valkey.FailoverTakeover
				t.Why += fmt.Sprintf("; silent for %s, longer than a forced failover is given (%s), and not taken over", lp.SilentFor.Round(time.Second), w)
			}
		case len(lp.ReachedBy) == 0 && lp.SilentFor >= limit:
			t.By = c.SpreadChoice(shardOfLost(lp), MostCaughtUpAll(lp.Replicas))
			t.Why = fmt.Sprintf("primary %s did not answer for %s, every member flags it as failing and no failover happened (quorum lost)",
				ShortID(lp.ID), lp.SilentFor.Round(time.Second))
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
func promotable(ms []*Member, within time.Duration) []*Member {
	var out []*Member
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
func shardOfLost(lp LostPrimary) int32 {
	if len(lp.Replicas) == 0 {
		return -1
	}
	return lp.Replicas[0].Shard()
}

// LostSlots returns the slots nobody serves any more, and the primary to give them to:
// the lowest shard's primary holding no slots, else the least loaded one, else nil. Nothing
// is lost while the cluster is being created or a slot is open.
func (c *Cluster) LostSlots() ([]valkey.SlotRange, *Member) {
	if Empty(c.Topo) || c.Topo.OpenSlots() {
		return nil, nil
	}
	var owned []valkey.SlotRange
	for _, rs := range c.Topo.OwnedSlots() {
		owned = append(owned, rs...)
	}
	lost := valkey.SubtractRanges([]valkey.SlotRange{{Start: 0, End: SlotCount - 1}}, valkey.NormalizeRanges(owned))
	if len(lost) == 0 {
		return nil, nil
	}
	target := c.slotlessPrimary()
	if target == nil {
		target = c.leastLoadedPrimary()
	}
	return lost, target
}

// leastLoadedPrimary is the primary of a shard of the spec serving the fewest slots (the
// lowest shard on a tie): where lost slots go when no primary is empty, since the shards
// are then all in use and a later rebalance evens them out.
func (c *Cluster) leastLoadedPrimary() *Member {
	var best *Member
	for sh := int32(0); sh < c.Shards(); sh++ {
		p := c.Topo.PrimaryOf(sh)
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
func (c *Cluster) slotlessPrimary() *Member {
	for sh := int32(0); sh < c.Shards(); sh++ {
		p := c.Candidate(sh)
		if p != nil && p.Reachable && !p.Leaving() && len(p.Slots()) == 0 && !p.Self.Replica {
			return p
		}
	}
	return nil
}

// HoldDeparture says why a leaving member that does not answer may not be forgotten yet,
// or "": a replica still follows it (the failover comes first: Valkey's, or the heal
// phase's), or it owns slots no other member has the data of and its server may come back
// (only a bare pod that is gone for good takes its data with it). Forgetting it would
// drop those slots, and the heal phase would give them out empty.
func (c *Cluster) HoldDeparture(m *Member) (reason, msg string) {
	id := m.ID()
	if c.Topo.Followed(id) {
		return v1alpha1.ReasonFailingOver, fmt.Sprintf("waiting for the replicas of departed %s to take over", m.Name())
	}
	if slots := c.Topo.OwnedSlots()[id]; len(slots) > 0 && !Gone(m) {
		return v1alpha1.ReasonWaitingForMember, fmt.Sprintf(
			"%s is leaving but does not answer, and no other member has the data of its slots %s: "+
				"it stays in the cluster until its server is back and hands them over", m.Name(), valkey.FormatRanges(slots))
	}
	return "", ""
}

// CycleBreak is a replication loop in a shard and the member to promote to end it.
type CycleBreak struct {
	// By is promoted without a vote (CLUSTER FAILOVER TAKEOVER).
	By *Member
	// Other replicates By, which replicates it.
	Other *Member
}

// ReplicationCycles finds the shards where two members replicate each other. Valkey 8.0
// makes such a loop while a shard forms: a member told to replicate the shard's chosen
// primary had just won a config epoch collision, and the chosen primary, once it learnt
// that both are in one shard, took an older message of the member (a primary with a
// greater config epoch) for a failover in its shard ("Configuration change detected.
// Reconfiguring myself as a replica of ..."). Neither ever serves: each asks the other
// for a stream it cannot give (NOMASTERLINK), and Valkey's own failover never starts, as
// neither's primary is failing. The member promoted is the one holding the shard's slots,
// else the shard's candidate primary, else the first of the two by name.
func (c *Cluster) ReplicationCycles() []CycleBreak {
	var out []CycleBreak
	for sh := int32(0); sh < c.Shards(); sh++ {
		for _, a := range c.Active(sh) {
			if !a.Reachable || !a.Self.Replica {
				continue
			}
			b := c.Topo.ByID(a.Self.PrimaryID)
			if b == nil || b.Shard() != sh || !b.Reachable || !b.Self.Replica || b.Self.PrimaryID != a.ID() || b.Name() < a.Name() {
				continue // not a loop, or found from its other end
			}
			by, other := a, b
			switch cand := c.Candidate(sh); {
			case len(b.Slots()) > 0 && len(a.Slots()) == 0:
				by, other = b, a
			case len(a.Slots()) == 0 && cand == b:
				by, other = b, a
			}
			out = append(out, CycleBreak{By: by, Other: other})
		}
	}
	return out
}
