package cluster

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/membership"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// member is one ValkeyNode of the cluster with what its server reported this pass.
type member struct {
	node *v1alpha1.ValkeyNode
	// addr is the client address of its server (Reconciler.Addr).
	addr string
	// reachable: the server answered this pass.
	reachable bool
	// err is why it did not, for status messages.
	err error
	// self is the server's own line of CLUSTER NODES.
	self valkey.ClusterNode
	// view is the server's CLUSTER NODES.
	view []valkey.ClusterNode
	// state is cluster_state from CLUSTER INFO.
	state string
	// repl is INFO replication.
	repl valkey.Replication
	// keys counts the keys of its dataset (INFO keyspace); keysKnown is false when the
	// reply could not be read.
	keys      int64
	keysKnown bool
	// version of the server.
	version valkey.Version
	// external is its external address (spec.externalAccess), nil without.
	external *external
	// announceReset: without external access, the server announces its pod address
	// (checked, or set back, this pass).
	announceReset bool
	// unseenBy names the members whose CLUSTER NODES does not show the client address
	// this member announces yet (gossip carries it, seconds after the CONFIG SET): they
	// still name its pod address in MOVED, ASK and CLUSTER SLOTS.
	unseenBy []string
}

func (m *member) name() string  { return m.node.Name }
func (m *member) shard() int32  { return m.node.Spec.ShardIndex }
func (m *member) ip() string    { return m.node.Status.PodIP }
func (m *member) leaving() bool { return !m.node.DeletionTimestamp.IsZero() }

// hostPort splits the member's client address for the commands that take a host and a
// port (CLUSTER MEET, MIGRATE). The cluster bus is on the port + 10000.
func (m *member) hostPort() (string, int, error) {
	host, p, err := net.SplitHostPort(m.addr)
	if err != nil {
		return "", 0, fmt.Errorf("address of member %s: %w", m.name(), err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("address of member %s: %w", m.name(), err)
	}
	return host, port, nil
}

// id is the member's Valkey node ID as its server reports it, or as last recorded.
func (m *member) id() string {
	if m.reachable && m.self.ID != "" {
		return m.self.ID
	}
	return m.node.Status.NodeID
}

// isPrimary reports whether the server says it is a primary.
func (m *member) isPrimary() bool { return m.reachable && m.self.Primary }

// slots the member's server says it serves.
func (m *member) slots() []valkey.SlotRange {
	if !m.reachable {
		return nil
	}
	return m.self.Slots
}

// knows reports whether the member's view holds a connected, settled entry for id.
func (m *member) knows(id string) bool {
	for _, n := range m.view {
		if n.ID == id {
			return !n.Handshake && !n.NoAddr
		}
	}
	return false
}

// votersNotReaching names the primaries serving slots (the voters of a failover) whose
// link to m is not up at m's current address: m's vote requests reach them, their votes
// would not reach m.
func (t *topology) votersNotReaching(m *member) []string {
	var out []string
	for _, v := range t.reachable() {
		if v == m || !v.isPrimary() || len(v.slots()) == 0 {
			continue
		}
		n, ok := v.entry(m.id())
		if !ok || n.IP != m.ip() || !n.Connected || n.PFail || n.Fail || n.Handshake || n.NoAddr {
			out = append(out, v.name())
		}
	}
	return out
}

// entry returns the member's view of node id.
func (m *member) entry(id string) (valkey.ClusterNode, bool) {
	for _, n := range m.view {
		if n.ID == id {
			return n, true
		}
	}
	return valkey.ClusterNode{}, false
}

// topology is the cluster as the members' servers report it this pass. Nothing of it is
// remembered between passes: the operator restarting at any point rebuilds it the same.
type topology struct {
	members []*member
	// shards maps a shard index to its members, oldest first.
	shards map[int32][]*member
	now    time.Time
	// ignoreServerDown: the members' ServerDown conditions are not proof of death (the
	// cluster-controller's --fast-failover=false), so only Valkey's own view counts.
	ignoreServerDown bool
}

func newTopology(members []*member, now time.Time) *topology {
	t := &topology{members: members, shards: map[int32][]*member{}, now: now}
	sort.SliceStable(members, func(i, j int) bool { return membership.Older(members[i].node, members[j].node) })
	for _, m := range members {
		t.shards[m.shard()] = append(t.shards[m.shard()], m)
	}
	return t
}

// reachable lists the members whose servers answered.
func (t *topology) reachable() []*member {
	var out []*member
	for _, m := range t.members {
		if m.reachable {
			out = append(out, m)
		}
	}
	return out
}

// byID finds the member whose server has node ID id.
func (t *topology) byID(id string) *member {
	if id == "" {
		return nil
	}
	for _, m := range t.members {
		if m.id() == id {
			return m
		}
	}
	return nil
}

// primaryOf returns the member serving shard s as primary: the member of the shard that
// owns slots; else the one the shard's replicas follow; else nil.
func (t *topology) primaryOf(s int32) *member {
	var best *member
	for _, m := range t.shards[s] {
		if m.isPrimary() && len(m.slots()) > 0 {
			if best == nil || m.self.ConfigEpoch > best.self.ConfigEpoch {
				best = m
			}
		}
	}
	if best != nil {
		return best
	}
	for _, m := range t.shards[s] {
		if m.reachable && m.self.Replica {
			if p := t.byID(m.self.PrimaryID); p != nil && p.shard() == s && p.isPrimary() {
				return p
			}
		}
	}
	return nil
}

// inFailover reports whether a reachable member of shard sh replicates a primary that is
// not a reachable member: the primary is gone and the replica is the shard's data.
func (t *topology) inFailover(sh int32) bool {
	for _, m := range t.shards[sh] {
		if !m.reachable || !m.self.Replica || m.self.PrimaryID == "" {
			continue
		}
		if p := t.byID(m.self.PrimaryID); p == nil || !p.reachable {
			return true
		}
	}
	return false
}

// ownedSlots returns the slots each node ID serves, by consensus of the reachable members'
// views: an owner's own report wins; owners that did not answer are taken from the view
// of the member with the highest epoch for them.
func (t *topology) ownedSlots() map[string][]valkey.SlotRange {
	out := map[string][]valkey.SlotRange{}
	epochs := map[string]uint64{}
	for _, m := range t.reachable() {
		for _, n := range m.view {
			if !n.Primary || len(n.Slots) == 0 {
				continue
			}
			if n.Myself || n.ConfigEpoch > epochs[n.ID] || out[n.ID] == nil {
				if !n.Myself {
					if self := t.byID(n.ID); self != nil && self.reachable {
						continue // the owner speaks for itself
					}
				}
				out[n.ID] = n.Slots
				epochs[n.ID] = n.ConfigEpoch
			}
		}
	}
	return out
}

// coveredSlots counts the slots some primary serves.
func (t *topology) coveredSlots() int {
	var all []valkey.SlotRange
	for _, r := range t.ownedSlots() {
		all = append(all, r...)
	}
	return valkey.CountSlots(valkey.NormalizeRanges(all))
}

// openSlots reports whether any reachable primary has a slot importing or migrating.
// Replicas are left out: Valkey 8.0+ copies the states to them, but only a primary's
// counts (finishOpenSlots acts on primaries only, replicas refuse SETSLOT), and a replica
// that joined mid-migration may keep a state its primary closed since, which nothing
// could close and would hold the cluster's progress for good.
func (t *topology) openSlots() bool {
	for _, m := range t.reachable() {
		if m.isPrimary() && (len(m.self.Importing) > 0 || len(m.self.Migrating) > 0) {
			return true
		}
	}
	return false
}

// slotsUnsettled names the reachable members whose CLUSTER NODES does not show every
// reachable member serving exactly the slots it says it serves. A migration's end or a
// failover changes a slot's owner, and gossip brings the change to the other members
// moments later; until it has, a client that reads the slot map from such a member
// sends that slot's requests to the old owner (which redirects them), and a tool that
// trusts one member's map sees a shard serve slots it gave away. Entries of members
// that do not answer are left out: whether their slots are served is Ready's question.
func (t *topology) slotsUnsettled() []string {
	claims := map[string]string{} // node ID -> the slots it serves by its own report
	for _, m := range t.reachable() {
		claims[m.id()] = slotsOf(m.self)
	}
	var out []string
	for _, m := range t.reachable() {
		if m.leaving() {
			continue
		}
		for _, n := range m.view {
			if want, ok := claims[n.ID]; ok && slotsOf(n) != want {
				out = append(out, m.name())
				break
			}
		}
	}
	return out
}

// slotsOf is the slots a CLUSTER NODES entry gives its node, normalised ("" for none).
func slotsOf(n valkey.ClusterNode) string {
	if !n.Primary {
		return ""
	}
	return valkey.FormatRanges(valkey.NormalizeRanges(n.Slots))
}

// known reports whether every reachable member knows every other reachable member.
func (t *topology) formed() bool {
	r := t.reachable()
	for _, a := range r {
		for _, b := range r {
			if a != b && !a.knows(b.id()) {
				return false
			}
		}
	}
	return len(r) > 0
}

// strangers returns the node IDs some member knows that belong to no ValkeyNode: stale
// entries of replaced pods, or nodes that were never ours.
func (t *topology) strangers() []string {
	ours := map[string]bool{}
	for _, m := range t.members {
		if id := m.id(); id != "" {
			ours[id] = true
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range t.reachable() {
		for _, n := range m.view {
			if !ours[n.ID] && !seen[n.ID] && !n.Myself {
				seen[n.ID] = true
				out = append(out, n.ID)
			}
		}
	}
	sort.Strings(out)
	return out
}

// synced reports whether replica m is linked to primary p and caught up.
func synced(m, p *member) bool { return syncFault(m, p) == "" }

// syncFault says why replica m does not count as in sync with primary p, "" when it does:
// the words of the Degraded condition's message, so that a replica judged behind for a
// moment says why.
func syncFault(m, p *member) string {
	switch {
	case m == nil || p == nil || m == p:
		return "no replica of that primary"
	case !m.reachable:
		return "not answering"
	case !p.reachable:
		return "its primary not answering"
	case !m.self.Replica || m.self.PrimaryID != p.id():
		return "not a replica of the shard's primary"
	case !m.repl.LinkUp:
		return "link to the primary down"
	case m.repl.SyncInProgress:
		return "full sync in progress"
	case p.repl.Offset-m.repl.Offset > syncLagBytes:
		return valkey.FormatBytes(p.repl.Offset-m.repl.Offset) + " behind"
	case !acknowledged(p, m.ip()):
		return "its primary does not list it online and caught up"
	}
	return ""
}

// acknowledged reports whether primary p lists the replica at ip as online with an
// acknowledged offset close to its own. After a full sync over a socket the replica says
// its link is up, and the primary calls it online, before the replica's first
// acknowledgement (sent once a second) starts the stream of the writes held back
// meanwhile; its acknowledged offset is 0 until then. A manual failover asked in between
// waits for that stream, its primary's clients paused (a second, seen on Valkey 8.0 in
// the in-place roll). A primary that never wrote anything (offset 0) holds nothing back.
func acknowledged(p *member, ip string) bool {
	for _, r := range p.repl.Replicas {
		if r.IP == ip && r.State == "online" && (r.Offset > 0 || p.repl.Offset == 0) && p.repl.Offset-r.Offset <= syncLagBytes {
			return true
		}
	}
	return false
}

// syncLagBytes is how far behind its primary a replica may be and count as in sync: a
// write in flight, not a backlog.
const syncLagBytes = 1 << 20
