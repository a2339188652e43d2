package plan

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

// Member is one ValkeyNode of the cluster with what its server reported this pass.
type Member struct {
	Node *v1alpha1.ValkeyNode
	// Addr is the client address of its server (Reconciler.Addr).
	Addr string
	// reachable: the server answered this pass.
	Reachable bool
	// Err is why it did not, for status messages.
	Err error
	// Self is the server's own line of CLUSTER NODES.
	Self valkey.ClusterNode
	// View is the server's CLUSTER NODES.
	View []valkey.ClusterNode
	// State is cluster_state from CLUSTER INFO.
	State string
	// Repl is INFO replication.
	Repl valkey.Replication
	// Keys counts the keys of its dataset (INFO keyspace); keysKnown is false when the
	// reply could not be read.
	Keys      int64
	KeysKnown bool
	// Version of the server.
	Version valkey.Version
	// External is its external address (spec.externalAccess), nil without.
	External *External
	// announceReset: without external access, the server announces its pod address
	// (checked, or set back, this pass).
	AnnounceReset bool
	// UnseenBy names the members whose CLUSTER NODES does not show the client address
	// this member announces yet (gossip carries it, seconds after the CONFIG SET): they
	// still name its pod address in MOVED, ASK and CLUSTER SLOTS.
	UnseenBy []string
}

func (m *Member) Name() string  { return m.Node.Name }
func (m *Member) Shard() int32  { return m.Node.Spec.ShardIndex }
func (m *Member) IP() string    { return m.Node.Status.PodIP }
func (m *Member) Leaving() bool { return !m.Node.DeletionTimestamp.IsZero() }

// HostPort splits the member's client address for the commands that take a host and a
// port (CLUSTER MEET, MIGRATE). The cluster bus is on the port + 10000.
func (m *Member) HostPort() (string, int, error) {
	host, p, err := net.SplitHostPort(m.Addr)
	if err != nil {
		return "", 0, fmt.Errorf("address of member %s: %w", m.Name(), err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("address of member %s: %w", m.Name(), err)
	}
	return host, port, nil
}

// ID is the member's Valkey node ID as its server reports it, or as last recorded.
func (m *Member) ID() string {
	if m.Reachable && m.Self.ID != "" {
		return m.Self.ID
	}
	return m.Node.Status.NodeID
}

// IsPrimary reports whether the server says it is a primary.
func (m *Member) IsPrimary() bool { return m.Reachable && m.Self.Primary }

// Slots the member's server says it serves.
func (m *Member) Slots() []valkey.SlotRange {
	if !m.Reachable {
		return nil
	}
	return m.Self.Slots
}

// Knows reports whether the member's view holds a connected, settled entry for id.
func (m *Member) Knows(id string) bool {
	for _, n := range m.View {
		if n.ID == id {
			return !n.Handshake && !n.NoAddr
		}
	}
	return false
}

// VotersNotReaching names the primaries serving slots (the voters of a failover) whose
// link to m is not up at m's current address: m's vote requests reach them, their votes
// would not reach m.
func (t *Topology) VotersNotReaching(m *Member) []string {
	var out []string
	for _, v := range t.Reachable() {
		if v == m || !v.IsPrimary() || len(v.Slots()) == 0 {
			continue
		}
		n, ok := v.Entry(m.ID())
		if !ok || n.IP != m.IP() || !n.Connected || n.PFail || n.Fail || n.Handshake || n.NoAddr {
			out = append(out, v.Name())
		}
	}
	return out
}

// Entry returns the member's view of node id.
func (m *Member) Entry(id string) (valkey.ClusterNode, bool) {
	for _, n := range m.View {
		if n.ID == id {
			return n, true
		}
	}
	return valkey.ClusterNode{}, false
}

// Topology is the cluster as the members' servers report it this pass. Nothing of it is
// remembered between passes: the operator restarting at any point rebuilds it the same.
type Topology struct {
	Members []*Member
	// Shards maps a shard index to its members, oldest first.
	Shards map[int32][]*Member
	Now    time.Time
	// ignoreServerDown: the members' ServerDown conditions are not proof of death (the
	// cluster-controller's --fast-failover=false), so only Valkey's own view counts.
	IgnoreServerDown bool
	// Exited holds, by node ID, the exits of servers their members reported (ServerDown)
	// and no longer report: a member whose pod was replaced (a Deployment's, a bare
	// Pod's) clears its ServerDown as soon as the new pod's server answers, with a new ID,
	// often before a pass read the report. The reconciler fills it from the reports it
	// saw; see ServerExited.
	Exited map[string]Exit
}

// Exit is a member's report that the server with some node ID exited: why (the
// condition's message, the proof) and since when.
type Exit struct {
	Why   string
	Since time.Time
}

// NewTopology builds the topology of members (sorted oldest first) as seen at now.
func NewTopology(members []*Member, now time.Time) *Topology {
	t := &Topology{Members: members, Shards: map[int32][]*Member{}, Now: now}
	sort.SliceStable(members, func(i, j int) bool { return membership.Older(members[i].Node, members[j].Node) })
	for _, m := range members {
		t.Shards[m.Shard()] = append(t.Shards[m.Shard()], m)
	}
	return t
}

// Reachable lists the members whose servers answered.
func (t *Topology) Reachable() []*Member {
	var out []*Member
	for _, m := range t.Members {
		if m.Reachable {
			out = append(out, m)
		}
	}
	return out
}

// Answers reports whether a member's server answered this pass as node id.
func (t *Topology) Answers(id string) bool {
	m := t.ByID(id)
	return m != nil && m.Reachable
}

// ByID finds the member whose server has node ID id.
func (t *Topology) ByID(id string) *Member {
	if id == "" {
		return nil
	}
	for _, m := range t.Members {
		if m.ID() == id {
			return m
		}
	}
	return nil
}

// PrimaryOf returns the member serving shard s as primary: the member of the shard that
// owns slots; else the one the shard's replicas follow; else nil.
func (t *Topology) PrimaryOf(s int32) *Member {
	var best *Member
	for _, m := range t.Shards[s] {
		if m.IsPrimary() && len(m.Slots()) > 0 {
			if best == nil || m.Self.ConfigEpoch > best.Self.ConfigEpoch {
				best = m
			}
		}
	}
	if best != nil {
		return best
	}
	for _, m := range t.Shards[s] {
		if m.Reachable && m.Self.Replica {
			if p := t.ByID(m.Self.PrimaryID); p != nil && p.Shard() == s && p.IsPrimary() {
				return p
			}
		}
	}
	return nil
}

// InFailover reports whether a reachable member of shard sh replicates a primary that is
// not a reachable member: the primary is gone and the replica is the shard's data.
func (t *Topology) InFailover(sh int32) bool {
	for _, m := range t.Shards[sh] {
		if !m.Reachable || !m.Self.Replica || m.Self.PrimaryID == "" {
			continue
		}
		if p := t.ByID(m.Self.PrimaryID); p == nil || !p.Reachable {
			return true
		}
	}
	return false
}

// OwnedSlots returns the slots each node ID serves, by consensus of the reachable members'
// views: an owner's own report wins; owners that did not answer are taken from the view
// of the member with the highest epoch for them.
func (t *Topology) OwnedSlots() map[string][]valkey.SlotRange {
	out := map[string][]valkey.SlotRange{}
	epochs := map[string]uint64{}
	for _, m := range t.Reachable() {
		for _, n := range m.View {
			if !n.Primary || len(n.Slots) == 0 {
				continue
			}
			if n.Myself || n.ConfigEpoch > epochs[n.ID] || out[n.ID] == nil {
				if !n.Myself {
					if t.Answers(n.ID) {
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

// CoveredSlots counts the slots some primary serves.
func (t *Topology) CoveredSlots() int {
	var all []valkey.SlotRange
	for _, r := range t.OwnedSlots() {
		all = append(all, r...)
	}
	return valkey.CountSlots(valkey.NormalizeRanges(all))
}

// OpenSlots reports whether any reachable primary has a slot importing or migrating.
// Replicas are left out: Valkey 8.0+ copies the states to them, but only a primary's
// counts (finishOpenSlots acts on primaries only, replicas refuse SETSLOT), and a replica
// that joined mid-migration may keep a state its primary closed since, which nothing
// could close and would hold the cluster's progress for good.
func (t *Topology) OpenSlots() bool {
	for _, m := range t.Reachable() {
		if m.IsPrimary() && (len(m.Self.Importing) > 0 || len(m.Self.Migrating) > 0) {
			return true
		}
	}
	return false
}

// SlotsUnsettled names the reachable members whose CLUSTER NODES does not show every
// reachable member serving exactly the slots it says it serves. A migration's end or a
// failover changes a slot's owner, and gossip brings the change to the other members
// moments later; until it has, a client that reads the slot map from such a member
// sends that slot's requests to the old owner (which redirects them), and a tool that
// trusts one member's map sees a shard serve slots it gave away. Entries of members
// that do not answer are left out: whether their slots are served is Ready's question.
func (t *Topology) SlotsUnsettled() []string {
	claims := map[string]string{} // node ID -> the slots it serves by its own report
	for _, m := range t.Reachable() {
		claims[m.ID()] = slotsOf(m.Self)
	}
	var out []string
	for _, m := range t.Reachable() {
		if m.Leaving() {
			continue
		}
		for _, n := range m.View {
			if want, ok := claims[n.ID]; ok && slotsOf(n) != want {
				out = append(out, m.Name())
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

// Formed reports whether every reachable member knows every other reachable member.
func (t *Topology) Formed() bool {
	r := t.Reachable()
	for _, a := range r {
		for _, b := range r {
			if a != b && !a.Knows(b.ID()) {
				return false
			}
		}
	}
	return len(r) > 0
}

// Strangers returns the node IDs some member knows that belong to no ValkeyNode: stale
// entries of replaced pods, or nodes that were never ours.
func (t *Topology) Strangers() []string {
	ours := map[string]bool{}
	for _, m := range t.Members {
		if id := m.ID(); id != "" {
			ours[id] = true
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range t.Reachable() {
		for _, n := range m.View {
			if !ours[n.ID] && !seen[n.ID] && !n.Myself {
				seen[n.ID] = true
				out = append(out, n.ID)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Synced reports whether replica m is linked to primary p and caught up.
func Synced(m, p *Member) bool { return SyncFault(m, p) == "" }

// SyncFault says why replica m does not count as in sync with primary p, "" when it does:
// the words of the Degraded condition's message, so that a replica judged behind for a
// moment says why.
func SyncFault(m, p *Member) string {
	switch {
	case m == nil || p == nil || m == p:
		return "no replica of that primary"
	case !m.Reachable:
		return "not answering"
	case !p.Reachable:
		return "its primary not answering"
	case !m.Self.Replica || m.Self.PrimaryID != p.ID():
		return "not a replica of the shard's primary"
	case !m.Repl.LinkUp:
		return "link to the primary down"
	case m.Repl.SyncInProgress:
		return "full sync in progress"
	case p.Repl.Offset-m.Repl.Offset > SyncLagBytes:
		return valkey.FormatBytes(p.Repl.Offset-m.Repl.Offset) + " behind"
	case !Acknowledged(p, m):
		return "its primary does not list it online and caught up"
	}
	return ""
}

// Acknowledged reports whether primary p lists the replica at ip as online with an
// acknowledged offset close to its own. After a full sync over a socket the replica says
// its link is up, and the primary calls it online, before the replica's first
// acknowledgement (sent once a second) starts the stream of the writes held back
// meanwhile; its acknowledged offset is 0 until then. A manual failover asked in between
// waits for that stream, its primary's clients paused (a second, seen on Valkey 8.0 in
// the in-place roll). Nothing is held back when the primary never wrote anything (offset
// 0), or when replica m says it has processed all the primary has (its own offset): a
// primary with no writes since the sync sends its replicas a PING every 10 s, which
// moves its offset past an acknowledged 0 for up to a second until the next
// acknowledgement, while the replica already has it.
func Acknowledged(p, m *Member) bool {
	ip := m.IP()
	for _, r := range p.Repl.Replicas {
		started := r.Offset > 0 || p.Repl.Offset == 0 || m.Repl.Offset >= p.Repl.Offset
		if r.IP == ip && r.State == "online" && started && p.Repl.Offset-r.Offset <= SyncLagBytes {
			return true
		}
	}
	return false
}

// SyncLagBytes is how far behind its primary a replica may be and count as in sync: a
// write in flight, not a backlog.
const SyncLagBytes = 1 << 20
