package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// Settled reports whether the topology allows a planned change: every shard of the spec
// has its primary, nobody is leaving and no primary is lost.
func (c *Cluster) Settled() bool {
	if Empty(c.Topo) || c.Topo.OpenSlots() || len(c.Topo.LostPrimaries()) > 0 {
		return false
	}
	for _, m := range c.Topo.Members {
		if m.Leaving() {
			return false
		}
	}
	for sh := int32(0); sh < c.Shards(); sh++ {
		if p := c.Topo.PrimaryOf(sh); p == nil || len(p.Slots()) == 0 {
			return false
		}
	}
	return true
}

// RollSurgeShards is how many shards after the one rolling get their successors ahead
// of their turn: enough to hide the pod starts of a small cluster's roll, few enough that
// a large cluster does not double its pods at once.
const RollSurgeShards = 2

// SuccessorsAhead is a shard that will roll later, with the successors it still needs.
type SuccessorsAhead struct {
	Shard int32
	Count int
}

// ShardsAhead lists, after shard, up to n shards with outdated members (by replacement)
// and how many successors each still lacks (none when a successor of theirs is stuck).
func (c *Cluster) ShardsAhead(shard int32, n int) []SuccessorsAhead {
	var out []SuccessorsAhead
	for sh := shard + 1; sh < c.Shards() && n > 0; sh++ {
		members := c.Active(sh)
		outdated, stuck := 0, false
		for _, m := range members {
			if out, _ := c.Outdated(m); out {
				outdated++
			} else if m.CannotRun() != nil {
				stuck = true
			}
		}
		if outdated == 0 {
			continue
		}
		n--
		if missing := outdated - (len(members) - int(1+c.Replicas())); missing > 0 && !stuck {
			out = append(out, SuccessorsAhead{Shard: sh, Count: missing})
		}
	}
	return out
}

// RollStep is what the roll does next.
type RollStep int

const (
	// rollNothing: no member needs a new pod.
	RollNothing RollStep = iota
	// rollSettleFirst: a shard needs a roll, but scaling or healing comes first; the pass
	// goes on.
	RollSettleFirst
	// rollWait: the roll waits for the shard (a successor or a restarted member to sync).
	RollWait
	// rollBlocked: member's pod cannot run; the user must act.
	RollBlocked
	// rollAddSuccessor: create an up-to-date member in the shard (by replacement).
	RollAddSuccessor
	// rollRetire: retire member, an outdated replica (by replacement).
	RollRetire
	// rollRestart: authorise a new pod for member on its volume (in place).
	RollRestart
	// rollFailover: member, an up-to-date replica in sync, takes over the shard.
	RollFailover
)

// RollPlan is the roll's next step, decided from its input alone.
type RollPlan struct {
	Step  RollStep
	Shard int32
	// Member is the member the step acts on or waits for.
	Member *Member
	// Message is Progressing's message for the step (reason Rolling, or RollBlocked);
	// authorizeRoll and failover write their own.
	Message string
	// After is how soon the next pass should come once the step is taken (0: the pass
	// goes on).
	After time.Duration
	// Count is how many successors rollAddSuccessor creates.
	Count int
}

// PlanRoll picks the shard to roll and its next step: by replacement, or in place when
// the members keep their volumes and the shard has a replica to fail over to.
func (c *Cluster) PlanRoll() RollPlan {
	shard, ok := c.NextShardToRoll()
	if !ok {
		return RollPlan{}
	}
	if !c.Settled() {
		// Scaling or healing first; the roll starts once every shard serves its slots.
		return RollPlan{Step: RollSettleFirst, Shard: shard,
			Message: fmt.Sprintf("shard %d needs a roll; waiting for the cluster to settle first", shard)}
	}
	if c.InPlace() {
		return c.planRollInPlace(shard)
	}
	return c.planRollByReplacement(shard)
}

// NextShardToRoll is the lowest shard with an outdated member, or with a member still
// restarting for a roll authorised on it: the shard's roll ends when that member is back
// in sync, not when its spec was written.
func (c *Cluster) NextShardToRoll() (int32, bool) {
	for sh := int32(0); sh < c.Shards(); sh++ {
		for _, m := range c.Active(sh) {
			if out, _ := c.Outdated(m); out || m.Restarting() {
				return sh, true
			}
		}
	}
	return 0, false
}

// InPlace: members with volumes in StatefulSets are rolled in place, keeping their
// volume, when the shard has a replica to fail over to. Without replicas a replacement
// keeps the shard's slots served during the roll.
func (c *Cluster) InPlace() bool {
	return c.VC.Spec.Persistence != nil && c.VC.Spec.Workload() == v1alpha1.WorkloadStatefulSet && c.Replicas() > 0
}

// planRollByReplacement: add an up-to-date successor, wait until it is in sync, retire an
// outdated replica; when only the primary is outdated, fail over to an up-to-date replica
// in sync (the shard's one failover), and the old primary, now a replica, is retired.
func (c *Cluster) planRollByReplacement(sh int32) RollPlan {
	members := c.Active(sh)
	p := c.Topo.PrimaryOf(sh)
	var outdatedReplicas []*Member
	var freshSynced []*Member
	var freshWaiting []*Member
	primaryOutdated := false
	for _, m := range members {
		out, _ := c.Outdated(m)
		switch {
		case out && m == p:
			primaryOutdated = true
		case out:
			outdatedReplicas = append(outdatedReplicas, m)
		case m != p && Synced(m, p) && c.ExternalKnown(m):
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
	if missing := outdated - (len(members) - int(1+c.Replicas())); missing > 0 {
		what := "a successor"
		if missing > 1 {
			what = fmt.Sprintf("%d successors", missing)
		}
		return RollPlan{Step: RollAddSuccessor, Shard: sh, Count: missing, After: RequeueWait,
			Message: fmt.Sprintf("shard %d: creating %s with the new spec", sh, what)}
	}
	if len(freshWaiting) > 0 {
		m := freshWaiting[0]
		if Synced(m, p) {
			return RollPlan{Step: RollWait, Shard: sh, Member: m, After: RequeueSync,
				Message: fmt.Sprintf("shard %d: waiting for every member to learn successor %s's external address (not known to %s yet)",
					sh, m.Name(), strings.Join(m.UnseenBy, ", "))}
		}
		return waitForSuccessor(sh, m)
	}
	if len(outdatedReplicas) > 0 {
		m := outdatedReplicas[0]
		return RollPlan{Step: RollRetire, Shard: sh, Member: m, After: RequeueFast,
			Message: fmt.Sprintf("shard %d: retiring outdated replica %s", sh, m.Name())}
	}
	if primaryOutdated && len(freshSynced) > 0 {
		return RollPlan{Step: RollFailover, Shard: sh, Member: c.SpreadChoice(sh, ByOffset(freshSynced)), After: RequeueFast}
	}
	return RollPlan{Step: RollWait, Shard: sh, After: RequeueWait,
		Message: fmt.Sprintf("shard %d: waiting for an up-to-date replica in sync", sh)}
}

// waitForSuccessor waits for a successor that is not in sync yet, and blocks the roll
// when the successor's pod cannot run.
func waitForSuccessor(sh int32, m *Member) RollPlan {
	if c := m.CannotRun(); c != nil {
		return RollPlan{Step: RollBlocked, Shard: sh, Member: m, After: RequeueSteady,
			Message: fmt.Sprintf("shard %d: the roll is blocked: successor %s cannot run (%s: %s); the old members keep serving",
				sh, m.Name(), c.Reason, MemberMessage(c))}
	}
	after := RequeueWait // its pod starting: its status brings the next pass
	if m.Reachable {
		after = RequeueSync // syncing: only the servers can tell when it is done
	}
	return RollPlan{Step: RollWait, Shard: sh, Member: m, After: after,
		Message: fmt.Sprintf("shard %d: waiting for successor %s to sync", sh, m.Name())}
}

// planRollInPlace restarts one member of the shard at a time on its own volume: replicas
// first, then (after the shard's one failover) the old primary.
func (c *Cluster) planRollInPlace(sh int32) RollPlan {
	p := c.Topo.PrimaryOf(sh)
	var outdatedReplica *Member
	var freshSynced []*Member
	for _, m := range c.Active(sh) {
		if !m.PodCurrent() || (m != p && !Synced(m, p)) {
			if cond := m.CannotRun(); cond != nil {
				return RollPlan{Step: RollBlocked, Shard: sh, Member: m, After: RequeueWait,
					Message: fmt.Sprintf("shard %d: the roll is blocked: %s cannot run (%s: %s)", sh, m.Name(), cond.Reason, MemberMessage(cond))}
			}
			return RollPlan{Step: RollWait, Shard: sh, Member: m, After: RequeueWait,
				Message: fmt.Sprintf("shard %d: waiting for %s to come back in sync", sh, m.Name())}
		}
		out, _ := c.Outdated(m)
		switch {
		case out && m != p && outdatedReplica == nil:
			outdatedReplica = m
		case !out && m != p:
			freshSynced = append(freshSynced, m)
		}
	}
	if outdatedReplica != nil {
		return RollPlan{Step: RollRestart, Shard: sh, Member: outdatedReplica, After: RequeueWait}
	}
	if len(freshSynced) > 0 {
		return RollPlan{Step: RollFailover, Shard: sh, Member: c.SpreadChoice(sh, ByOffset(freshSynced)), After: RequeueFast}
	}
	return RollPlan{Step: RollWait, Shard: sh, After: RequeueWait,
		Message: fmt.Sprintf("shard %d: waiting for an up-to-date replica in sync", sh)}
}
