package plan

import "github.com/valkey-operator/valkey-operator/valkey"

// Serving says whether a member serves its shard's slots.
type Serving int

// ServesSlots reports whether m serves slots: its own word when it answers the operator;
// else, when another member serves its shard, no; else the views of the members that
// answer (any one showing it a primary with slots is enough). A member whose node ID was
// never recorded was never given slots by the operator.
func (t *Topology) ServesSlots(m *Member) Serving {
	if m.Reachable {
		if m.IsPrimary() && len(m.Slots()) > 0 {
			return ServingYes
		}
		return ServingNo
	}
	if p := t.PrimaryOf(m.Shard()); p != nil && p != m {
		return ServingNo
	}
	if m.ID() == "" {
		return ServingNo
	}
	known := false
	for _, v := range t.Reachable() {
		if e, ok := v.Entry(m.ID()); ok {
			known = true
			if e.Primary && len(e.Slots) > 0 {
				return ServingYes
			}
		}
	}
	if known {
		return ServingNo
	}
	return ServingUnknown
}

// CaughtUp reports whether replica r follows m with its link up and no full sync under
// way: a coordinated failover then completes without losing a write m acknowledged.
// When m answers, r must be in sync by m's own offsets.
func CaughtUp(r, m *Member) bool {
	if m.Reachable {
		return Synced(r, m)
	}
	return r != m && r.Reachable && r.Self.Replica && r.Self.PrimaryID == m.ID() && r.Repl.LinkUp && !r.Repl.SyncInProgress
}

// FormedWith reports whether every reachable member knows m.
func (t *Topology) FormedWith(m *Member) bool {
	for _, o := range t.Reachable() {
		if o != m && !o.Knows(m.ID()) {
			return false
		}
	}
	return true
}

// OwnerOf returns the member serving slot, by its own report.
func (t *Topology) OwnerOf(slot int) *Member {
	for _, m := range t.Reachable() {
		if m.IsPrimary() && valkey.ContainsSlot(m.Slots(), slot) {
			return m
		}
	}
	return nil
}

const (
	ServingNo Serving = iota
	ServingYes
	// servingUnknown: it does not answer and no member that answers knows it.
	ServingUnknown
)
