package plan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// Partitioned describes the members among ms whose server does not answer the operator,
// that some members flag as failing while others still reach it: a partition, not a dead
// server (a dead one is flagged by every member after the node timeout, and by none
// before; a member whose ValkeyNode reports ServerDown is dead whatever the others' views
// say yet). "" when there is none.
func (t *Topology) Partitioned(ms []*Member) string {
	var parts []string
	for _, m := range ms {
		if conditions.IsTrue(m.Node.Status.Conditions, v1alpha1.ConditionServerDown) {
			continue
		}
		if id := m.Node.Status.NodeID; id != "" && t.FlaggedByAny(id) {
			if by := t.SeenAliveBy(id); len(by) > 0 {
				parts = append(parts, fmt.Sprintf("%s is reached by %s", m.Name(), strings.Join(by, ", ")))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "the operator cannot reach some members that other members still reach (a network partition, not a " +
		"dead server: no failover is forced): " + strings.Join(parts, "; ")
}

// FlaggedByAny reports whether a member that answered flags node id as failing.
func (t *Topology) FlaggedByAny(id string) bool {
	for _, v := range t.Reachable() {
		if e, ok := v.Entry(id); ok && (e.Fail || e.PFail) {
			return true
		}
	}
	return false
}

// LostPrimary is a primary that owns slots and does not answer, with the replicas that
// still follow it.
type LostPrimary struct {
	ID       string
	Slots    []valkey.SlotRange
	Replicas []*Member
	// SilentFor is how long ago the replicas last heard from it.
	SilentFor time.Duration
	// ReachedBy names the members that answered the operator and do not flag the primary
	// as failing: they still reach it, so it is partitioned from the operator, not dead.
	ReachedBy []string
	// Dead, when set, is the proof that the primary's process is gone: another server
	// answers at its address, or its member reports the server down.
	Dead string
	// DeadSince is when Kubernetes first reported the server down (zero for the other
	// proof: a restarted server at the address means the old one died long enough ago).
	DeadSince time.Time
}

// LostPrimaries finds primaries with slots that reachable replicas follow but that the
// replicas see as failing, or without an address: a node answered at its address with
// another identity (a server that restarted empty in the same pod), and Valkey never
// flags such a node as failing, so its replicas would wait for it forever.
func (t *Topology) LostPrimaries() []LostPrimary {
	byID := map[string]*LostPrimary{}
	for _, m := range t.Reachable() {
		if !m.Self.Replica || m.Self.PrimaryID == "" {
			continue
		}
		if t.Answers(m.Self.PrimaryID) {
			continue
		}
		e, ok := m.Entry(m.Self.PrimaryID)
		if !ok || len(e.Slots) == 0 {
			continue
		}
		dead := t.AddressTakenFrom(e)
		var deadSince time.Time
		if dead == "" {
			dead, deadSince = t.ServerExited(e.ID)
		}
		if !(e.Fail || e.PFail || e.NoAddr) && dead == "" {
			continue
		}
		lp := byID[e.ID]
		if lp == nil {
			lp = &LostPrimary{ID: e.ID, Slots: e.Slots, Dead: dead, DeadSince: deadSince}
			byID[e.ID] = lp
		}
		lp.Replicas = append(lp.Replicas, m)
		silent := t.Now.Sub(time.UnixMilli(e.PongRecv))
		if e.PongRecv == 0 {
			silent = t.Now.Sub(time.UnixMilli(e.PingSent))
		}
		if lp.SilentFor == 0 || silent < lp.SilentFor {
			lp.SilentFor = silent
		}
	}
	out := make([]LostPrimary, 0, len(byID))
	for _, lp := range byID {
		lp.ReachedBy = t.SeenAliveBy(lp.ID)
		out = append(out, *lp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// SeenAliveBy names the members that answered the operator and whose view does not flag
// node id as failing (or without an address): they still reach it.
func (t *Topology) SeenAliveBy(id string) []string {
	var out []string
	for _, v := range t.Reachable() {
		if e, ok := v.Entry(id); ok && v.ID() != id && !(e.Fail || e.PFail || e.NoAddr) {
			out = append(out, v.Name())
		}
	}
	return out
}

// AddressTakenFrom returns the proof that node e's process is gone, or "": a member
// answering at e's address with another node ID (the pod's server restarted empty).
func (t *Topology) AddressTakenFrom(e valkey.ClusterNode) string {
	for _, m := range t.Reachable() {
		if e.IP != "" && m.IP() == e.IP && m.ID() != e.ID {
			return fmt.Sprintf("%s answers at its address %s as node %s", m.Name(), e.IP, ShortID(m.ID()))
		}
	}
	return ""
}

// ServerExited returns the proof that node id's process is gone from its member's
// ServerDown condition (the kubelet saw the server container exit, and the server has
// not answered since), with when it was first reported, or "".
func (t *Topology) ServerExited(id string) (string, time.Time) {
	if t.IgnoreServerDown {
		return "", time.Time{}
	}
	for _, m := range t.Members {
		if m.Node.Status.NodeID != id || m.Reachable {
			continue
		}
		if c := conditions.Get(m.Node.Status.Conditions, v1alpha1.ConditionServerDown); c != nil && c.Status == metav1.ConditionTrue {
			return "its member reports the server down: " + c.Message, c.LastTransitionTime.Time
		}
	}
	// A report its member no longer makes, because a new pod's server answers there with
	// another ID: the exit of the server that was id stands, unless id answers again.
	if e, ok := t.Exited[id]; ok && !t.Answers(id) {
		return "its member reported the server down before its new pod's server answered: " + e.Why, e.Since
	}
	return "", time.Time{}
}

// PrimaryMajorityReachable reports whether the operator reaches more than half of the
// primaries that serve slots: then a forced failover can win its election.
func (t *Topology) PrimaryMajorityReachable() bool {
	owners := t.OwnedSlots()
	reached := 0
	for id := range owners {
		if t.Answers(id) {
			reached++
		}
	}
	return reached*2 > len(owners)
}

// VotersKnowingReplica counts the primaries serving slots (the voters of an election, the
// lost one included) and, of them, the reachable ones that list m as a replica: a voter
// that sees m as a primary, or does not know it, refuses m its vote.
func (t *Topology) VotersKnowingReplica(m *Member) (willing, voters int) {
	owners := t.OwnedSlots()
	for id := range owners {
		v := t.ByID(id)
		if v == nil || !v.Reachable || v == m {
			continue
		}
		if e, ok := v.Entry(m.ID()); ok && e.Replica {
			willing++
		}
	}
	return willing, len(owners)
}

// StaleEpoch returns the config epoch replica m knows for node id, and the highest one
// a voter (a reachable primary with slots) knows for it.
func (t *Topology) StaleEpoch(m *Member, id string) (mine, known uint64) {
	if e, ok := m.Entry(id); ok {
		mine = e.ConfigEpoch
	}
	known = mine
	for _, v := range t.Reachable() {
		if !v.IsPrimary() || len(v.Slots()) == 0 {
			continue
		}
		if e, ok := v.Entry(id); ok && e.ConfigEpoch > known {
			known = e.ConfigEpoch
		}
	}
	return mine, known
}

// ToForget returns the strangers to forget now, unless a replica follows them: the old
// identities of members that came back with a new one, and the nodes the cluster flags as
// failed that cannot be a member that did not answer. soon reports a stranger that may be
// forgotten once Valkey flags it as failed.
func (t *Topology) ToForget() (forget []string, soon bool) {
	replaced := t.ReplacedIdentities()
	for _, id := range t.Strangers() {
		if t.Followed(id) {
			continue
		}
		if !replaced[id] {
			if t.MayBeMember(id) {
				continue
			}
			if !t.Failed(id) {
				soon = true
				continue
			}
		}
		forget = append(forget, id)
	}
	return forget, soon
}

// ReplacedIdentities are the node IDs members had until this pass: a member whose server
// now answers with another ID (its pod came back empty) left its old identity behind for
// good, so it is forgotten at once instead of after Valkey flags it as failed (about the
// node timeout later). Only this pass knows it: the member's status gets the new ID.
func (t *Topology) ReplacedIdentities() map[string]bool {
	out := map[string]bool{}
	for _, m := range t.Members {
		if old := m.Node.Status.NodeID; m.Reachable && m.Self.ID != "" && old != "" && old != m.Self.ID {
			out[old] = true
		}
	}
	return out
}

// Failed reports whether a member's view flags node id as failed (the cluster agreed it
// is unreachable) or without an address. A stranger that still talks may be a member
// whose new pod the operator has not seen yet (its ValkeyNode's status lags the pod): it
// is never forgotten, or it would be cut out of the cluster it just joined.
func (t *Topology) Failed(id string) bool {
	for _, m := range t.Reachable() {
		if e, ok := m.Entry(id); ok && (e.Fail || e.NoAddr) {
			return true
		}
	}
	return false
}

// Followed reports whether a reachable member replicates node id.
func (t *Topology) Followed(id string) bool {
	for _, m := range t.Reachable() {
		if m.Self.Replica && m.Self.PrimaryID == id {
			return true
		}
	}
	return false
}

// MayBeMember reports whether node id sits at the address of a member whose server did
// not answer this pass: it may be that member, so it is not forgotten.
func (t *Topology) MayBeMember(id string) bool {
	for _, m := range t.Members {
		if m.Reachable || m.IP() == "" {
			continue
		}
		for _, v := range t.Reachable() {
			if e, ok := v.Entry(id); ok && e.IP == m.IP() {
				return true
			}
		}
	}
	return false
}

// ShortID is the first 8 characters of a node ID, as messages give it.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
