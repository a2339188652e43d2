/*
   Copyright 2025 Valkey Contributors.

   Licensed under the Apache License, Version 2.0 (the "License");
   you may not use this file except in compliance with the License.
   You may obtain a copy of the License at

http://www.apache.org/licenses/LICENSE-2.0

   Unless required by applicable law or agreed to in writing, software
   distributed under the License is distributed on an "AS IS" BASIS,
   WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
   See the License for the specific language governing permissions and
   limitations under the License.
*/

package valkey

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	vclient "github.com/valkey-io/valkey-go"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// NodeState represents the current state of an inspected cluster node.
type NodeState struct {
	Client       vclient.Client
	Address      string
	Port         int
	Id           string
	Flags        []string
	ShardId      string
	Info         map[string]string
	ClusterInfo  map[string]string
	ClusterNodes string
}

// ReplicationOffset returns this node's processed replication offset from
// INFO replication (slave_repl_offset), or -1 when it is unavailable. A higher
// value means the replica is more caught up with its primary.
func (n *NodeState) ReplicationOffset() int64 {
	v, ok := n.Info["slave_repl_offset"]
	if !ok {
		return -1
	}
	offset, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -1
	}
	return offset
}

// HighestOffsetReplica returns the replica with the greatest replication offset,
// the one most caught up with its primary. Replicas whose offset is unavailable
// sort last and ties keep slice order. Returns nil for an empty slice.
func HighestOffsetReplica(replicas []*NodeState) *NodeState {
	var best *NodeState
	var bestOffset int64
	for _, replica := range replicas {
		if offset := replica.ReplicationOffset(); best == nil || offset > bestOffset {
			best, bestOffset = replica, offset
		}
	}
	return best
}

// ShardState represents the current state of a shard.
type ShardState struct {
	Id        string
	PrimaryId string
	Slots     []SlotsRange
	Nodes     []*NodeState
}

// ClusterState represents the current state of a cluster.
type ClusterState struct {
	Shards       []*ShardState
	PendingNodes []*NodeState
}

// TotalSlots is the number of hash slots in a Valkey cluster (0-16383).
const TotalSlots = 16384

// SlotsRange is an interval or a single slot when Start and End are equal.
type SlotsRange struct {
	Start int
	End   int
}

func (s SlotsRange) String() string {
	if s.Start == s.End {
		return fmt.Sprintf("%d", s.Start)
	}
	return fmt.Sprintf("%d-%d", s.Start, s.End)
}

// FormatSlotsRanges formats a slice of SlotsRange as "0-100,500-600".
func FormatSlotsRanges(ranges []SlotsRange) string {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// GetClusterState connects to Valkey nodes and scrapes the current state.
func GetClusterState(ctx context.Context, addresses []string, port int, username, password string, tlsCfg *tls.Config) *ClusterState {
	state := ClusterState{
		Shards:       make([]*ShardState, 0),
		PendingNodes: make([]*NodeState, 0),
	}

	for _, address := range addresses {
		// Attempt to connect to the Valkey node and extract information.
		node := getNodeState(ctx, address, port, username, password, tlsCfg)
		if node != nil {
			// Check if node is pending to be added.
			if node.IsPrimary() && len(node.GetSlots()) == 0 {
				// Node not part of any shard yet.
				state.PendingNodes = append(state.PendingNodes, node)
				continue
			}

			// Find a ShardState with the same ShardId as this node.
			var shard *ShardState
			idx := slices.IndexFunc(state.Shards, func(s *ShardState) bool { return s.Id == node.ShardId })
			if idx >= 0 {
				shard = state.Shards[idx]
			} else {
				// Not know yet, adding it.
				shard = &ShardState{
					Id:    node.ShardId,
					Nodes: make([]*NodeState, 0),
				}
				state.Shards = append(state.Shards, shard)
			}
			// Add node and update shard information.
			shard.Nodes = append(shard.Nodes, node)
			if node.IsPrimary() {
				ranges, _ := parseSlotsRanges(node.GetSlots())
				shard.Slots = ranges
				shard.PrimaryId = node.Id
			}
		}
	}
	return &state
}

// CloseClients disconnects all valkey-go clients.
func (s *ClusterState) CloseClients() {
	for _, node := range s.PendingNodes {
		if node.Client != nil {
			node.Client.Close()
		}
	}
	for _, shard := range s.Shards {
		for _, node := range shard.Nodes {
			if node.Client != nil {
				node.Client.Close()
			}
		}
	}
}

// GetUnassignedSlots returns all unassigned slots
func (s *ClusterState) GetUnassignedSlots() []SlotsRange {
	remaining := []SlotsRange{{0, 16383}}
	for _, shard := range s.Shards {
		for _, slot := range shard.Slots {
			var next []SlotsRange //nolint:prealloc
			for _, base := range remaining {
				parts := SubtractSlotsRange(base, slot)
				next = append(next, parts...)
			}
			remaining = next
		}
	}
	return remaining
}

// FindShardForAddress returns the shard containing a node with the given IP
// address, or nil if no shard contains that address.
func (s *ClusterState) FindShardForAddress(address string) *ShardState {
	for _, shard := range s.Shards {
		for _, node := range shard.Nodes {
			if node.Address == address {
				return shard
			}
		}
	}
	return nil
}

// GetPrimaryNode returns the primary NodeState object
func (s *ShardState) GetPrimaryNode() *NodeState {
	idx := slices.IndexFunc(s.Nodes, func(n *NodeState) bool { return n.Id == s.PrimaryId })
	if idx >= 0 {
		return s.Nodes[idx]
	}
	return nil
}

// GetSyncedReplicas returns replica nodes that are connected and have their
// replication link up (master_link_status:up). Nodes with fail/pfail flags
// are excluded.
func (s *ShardState) GetSyncedReplicas() []*NodeState {
	var replicas []*NodeState
	for _, node := range s.Nodes {
		if node.Id == s.PrimaryId {
			continue
		}
		if slices.Contains(node.Flags, "fail") || slices.Contains(node.Flags, "pfail") {
			continue
		}
		if node.Info["master_link_status"] != "up" {
			continue
		}
		replicas = append(replicas, node)
	}
	return replicas
}

// GetSlots returns slots assigned to myself, same format as in CLUSTER NODES.
func (n *NodeState) GetSlots() []string {
	// Parse CLUSTER NODES output.
	// <id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot> <slot> ... <slot>
	for line := range strings.SplitSeq(n.ClusterNodes, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 8 {
			continue
		}
		flags := strings.Split(fields[2], ",")
		if slices.Contains(flags, "myself") {
			if slices.Contains(flags, "master") {
				// Get slots starting at field 8
				return fields[8:]
			}
		}
	}
	return nil
}

// IsPrimary return true if this is a primary node.
func (n *NodeState) IsPrimary() bool {
	return slices.Contains(n.Flags, "master")
}

// CurrentEpoch returns the cluster's current epoch as reported by this node's
// CLUSTER INFO output.
func (n *NodeState) CurrentEpoch() int64 {
	if epoch, err := strconv.ParseInt(n.ClusterInfo["cluster_current_epoch"], 10, 64); err == nil {
		return epoch
	}
	return 0
}

// IsIsolated returns true if the node's cluster_known_nodes is <= 1,
// meaning it hasn't been introduced to any other cluster member yet.
func (n *NodeState) IsIsolated() bool {
	sval, ok := n.ClusterInfo["cluster_known_nodes"]
	if !ok {
		return false
	}
	val, err := strconv.Atoi(sval)
	return err == nil && val <= 1
}

// IsReplicationInSync returns true if this replica node has its replication
// link up (master_link_status:up in INFO REPLICATION). Primary nodes always
// return true since they don't have a replication link to check.
func (n *NodeState) IsReplicationInSync() bool {
	if n.IsPrimary() {
		return true
	}
	return n.Info["master_link_status"] == "up"
}

// HasReplicaOf returns true if any live node in the cluster state reports
// itself as a replica of the given node ID. This is used to prevent
// CLUSTER FORGET from racing with auto-failover: forgetting a failed
// primary from other primaries removes it from their node tables, which
// prevents them from voting in the replica's failover election.
func (s *ClusterState) HasReplicaOf(nodeId string) bool {
	for _, shard := range s.Shards {
		for _, node := range shard.Nodes {
			if node.PrimaryIdFromSelf() == nodeId {
				return true
			}
		}
	}
	return false
}

// HasFailoverQuorum returns true if a majority of slot-owning primaries are
// reachable. Valkey requires a majority of primaries to vote in a failover
// election; if quorum is unreachable, no automatic failover can succeed.
// Uses cluster_size from CLUSTER INFO (total primaries with slots, including
// failed ones) as the denominator.
func (s *ClusterState) HasFailoverQuorum() bool {
	if len(s.Shards) == 0 {
		return false
	}
	var livePrimaries, clusterSize int
	for _, shard := range s.Shards {
		if shard.GetPrimaryNode() != nil && len(shard.Slots) > 0 {
			livePrimaries++
		}
		for _, node := range shard.Nodes {
			// Take the max across nodes in case gossip hasn't fully propagated.
			if size, err := strconv.Atoi(node.ClusterInfo["cluster_size"]); err == nil && size > clusterSize {
				clusterSize = size
			}
		}
	}
	if clusterSize == 0 {
		return false
	}
	return livePrimaries > (clusterSize / 2)
}

// IsNodeFailed returns true if any live node reports the given node ID as
// "fail" or "fail?" in CLUSTER NODES. Includes "fail?" (pfail) because when
// majority of primaries are down, pfail can never promote to fail.
func (s *ClusterState) IsNodeFailed(nodeId string) bool {
	for _, shard := range s.Shards {
		for _, node := range shard.Nodes {
			for line := range strings.SplitSeq(node.ClusterNodes, "\n") {
				fields := strings.Fields(line)
				if len(fields) < 8 || fields[0] != nodeId {
					continue
				}
				flags := strings.Split(fields[2], ",")
				if slices.Contains(flags, "fail") || slices.Contains(flags, "fail?") {
					return true
				}
			}
		}
	}
	return false
}

// BestReplicaOf returns the replica with the highest replication offset
// that references the given primary ID, or nil if none found.
func (s *ClusterState) BestReplicaOf(primaryId string) *NodeState {
	var replicas []*NodeState
	for _, shard := range s.Shards {
		for _, node := range shard.Nodes {
			if node.PrimaryIdFromSelf() == primaryId {
				replicas = append(replicas, node)
			}
		}
	}
	return HighestOffsetReplica(replicas)
}

// PrimaryIdFromSelf returns the primary node ID that this node reports as its
// own primary in CLUSTER NODES (fields[3] of the "myself" line). Returns "-"
// for primaries and the primary's node ID for replicas.
func (n *NodeState) PrimaryIdFromSelf() string {
	for line := range strings.SplitSeq(n.ClusterNodes, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 8 {
			continue
		}
		if strings.Contains(fields[2], "myself") {
			return fields[3]
		}
	}
	return ""
}

// AllNodes returns every reachable node in the state: shard members first,
// then pending nodes.
func (s *ClusterState) AllNodes() []*NodeState {
	var nodes []*NodeState
	for _, shard := range s.Shards {
		nodes = append(nodes, shard.Nodes...)
	}
	return append(nodes, s.PendingNodes...)
}

// FindNodeById returns the reachable node with the given cluster node ID, or
// nil if no such node was scraped.
func (s *ClusterState) FindNodeById(id string) *NodeState {
	for _, node := range s.AllNodes() {
		if node.Id == id {
			return node
		}
	}
	return nil
}

// hostFromClusterNodesEndpoint extracts the bare host from a CLUSTER NODES
// endpoint field (<ip:port@cport[,hostname]>). IPv6 hosts appear bracketed
// ([fd00::2]:6379@16379); net.SplitHostPort unbrackets them so the result
// compares equal to the bare pod IP Kubernetes reports. Returns "" when the
// field has no parsable host:port part.
func hostFromClusterNodesEndpoint(endpoint string) string {
	// Drop the cluster-bus suffix and the optional ,hostname after it.
	if i := strings.Index(endpoint, "@"); i != -1 {
		endpoint = endpoint[:i]
	}
	if host, _, err := net.SplitHostPort(endpoint); err == nil {
		return host
	}
	// Fallback for entries with no port (shouldn't occur in CLUSTER NODES,
	// but keep the previous last-colon behavior rather than dropping them).
	if i := strings.LastIndex(endpoint, ":"); i != -1 {
		return strings.Trim(endpoint[:i], "[]")
	}
	return ""
}

// StaleAddressPeer pairs a viewer node with a live cluster member whose
// address in the viewer's node table is outdated.
type StaleAddressPeer struct {
	Viewer *NodeState // node whose table holds the stale entry
	Live   *NodeState // the same member, reachable at its current address
}

// FindStaleAddressPeers detects cluster members that restarted with a new
// address while other nodes' tables (persisted in nodes.conf) still point at
// the old one. This happens when many pods restart at once — e.g. a full
// Kubernetes cluster restart — leaving no surviving member to gossip the new
// addresses from, so the cluster stays partitioned until the peers are
// re-introduced (see valkey-io/valkey-operator#275).
//
// A peer entry is stale when it is flagged failing (fail, fail? or noaddr)
// in the viewer's node table, but a node with the same cluster ID was
// scraped alive at a different address. Entries whose ID matches no live
// node are genuinely dead and left for forgetStaleNodes.
func (s *ClusterState) FindStaleAddressPeers() []StaleAddressPeer {
	all := s.AllNodes()
	live := make(map[string]*NodeState, len(all))
	for _, node := range all {
		live[node.Id] = node
	}
	var stale []StaleAddressPeer
	for _, viewer := range all {
		for line := range strings.SplitSeq(viewer.ClusterNodes, "\n") {
			fields := strings.Fields(line)
			if len(fields) < 8 {
				continue
			}
			flags := strings.Split(fields[2], ",")
			if slices.Contains(flags, "myself") {
				continue
			}
			// fail? is included: promoting pfail to fail needs gossip
			// between a majority of primaries, which is exactly what a
			// cluster-wide address change breaks — entries can stay at
			// fail? indefinitely.
			noaddr := slices.Contains(flags, "noaddr")
			if !slices.Contains(flags, "fail") && !slices.Contains(flags, "fail?") && !noaddr {
				continue
			}
			peer, ok := live[fields[0]]
			if !ok {
				continue
			}
			// A noaddr entry carries no endpoint at all (:0@0) — the ID is
			// known but no address ever completed a handshake. A live node
			// with that ID always needs re-introduction.
			if noaddr {
				stale = append(stale, StaleAddressPeer{Viewer: viewer, Live: peer})
				continue
			}
			if address := hostFromClusterNodesEndpoint(fields[1]); address != "" && address != peer.Address {
				stale = append(stale, StaleAddressPeer{Viewer: viewer, Live: peer})
			}
		}
	}
	return stale
}

// GetFailingNodes returns all known nodes that are failing.
func (n *NodeState) GetFailingNodes() []NodeState {
	nodes := []NodeState{}
	for line := range strings.SplitSeq(n.ClusterNodes, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 8 {
			continue
		}
		flags := strings.Split(fields[2], ",")
		if !slices.Contains(flags, "myself") {
			if slices.Contains(flags, "fail") || slices.Contains(flags, "noaddr") {
				// Get IP address from <ip:port@cport[,hostname]>
				if idx := strings.LastIndex(fields[1], ":"); idx != -1 {
					nodes = append(nodes, NodeState{Address: fields[1][:idx], Id: fields[0]})
				}
			}
		}
	}
	return nodes
}

// Connect to a single Valkey node and scrapes its current state.
func getNodeState(ctx context.Context, address string, port int, username string, password string, tlsConfig *tls.Config) *NodeState {
	log := logf.FromContext(ctx)

	opt := vclient.ClientOption{
		InitAddress:       []string{fmt.Sprintf("%s:%d", address, port)},
		ForceSingleClient: true, // Don't connect to another cluster node.
		Username:          username,
		Password:          password,
		TLSConfig:         tlsConfig,
	}
	client, err := vclient.NewClient(opt)
	if err != nil {
		if !strings.Contains(err.Error(), "WRONGPASS") {
			log.Error(err, "failed to create Valkey client")
			return nil
		}
		// fallback to unauthenticated
		log.Info("fall back to unauthenticated default user on WRONGPASS error")
		opt.Username = ""
		opt.Password = ""
		client, err = vclient.NewClient(opt)
		if err != nil {
			log.Error(err, "failed to create Valkey client")
			return nil
		}
	}

	node := NodeState{Client: client,
		Address: address,
		Port:    port}

	results := client.DoMulti(ctx,
		client.B().ClusterMyid().Build(),
		client.B().ClusterMyshardid().Build(),
		client.B().Info().Build(),
		client.B().ClusterInfo().Build(),
		client.B().ClusterNodes().Build(),
	)

	if len(results) == 5 {
		id, err := results[0].ToString()
		if err != nil {
			log.Error(err, "command failed: CLUSTER MYID")
		}
		node.Id = id

		shardid, err := results[1].ToString()
		if err != nil {
			log.Error(err, "command failed: CLUSTER MYSHARDID")
		}
		node.ShardId = shardid

		info, err := results[2].ToString()
		if err != nil {
			log.Error(err, "command failed: INFO")
		}
		node.Info = infoStringToMap(info)

		cinfo, err := results[3].ToString()
		if err != nil {
			log.Error(err, "command failed: CLUSTER INFO")
		}
		node.ClusterInfo = infoStringToMap(cinfo)

		cnodes, err := results[4].ToString()
		if err != nil {
			log.Error(err, "command failed: CLUSTER NODES")
		}
		// Remove the encoding string included in a verbatim string.
		node.ClusterNodes = strings.TrimPrefix(cnodes, "txt:")
	} else {
		log.Error(fmt.Errorf("expected 5 results from DoMulti, got %d", len(results)), "failed to query node state")
	}

	// Extract flags
	for line := range strings.SplitSeq(node.ClusterNodes, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 8 {
			continue
		}
		flags := strings.Split(fields[2], ",")
		if slices.Contains(flags, "myself") {
			node.Flags = flags
		}
	}
	return &node
}

// Convert a string containing INFO elements to a map.
func infoStringToMap(s string) map[string]string {
	m := map[string]string{}
	// Remove the encoding string included in a verbatim string.
	for line := range strings.SplitSeq(strings.TrimPrefix(s, "txt:"), "\r\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if key, val, found := strings.Cut(line, ":"); found {
			m[key] = val
		}
	}
	return m
}

// parseSlotsRange parses strings to find multiple SlotsRange's
func parseSlotsRanges(s []string) ([]SlotsRange, error) {
	ranges := []SlotsRange{}

	for _, part := range s {
		// During active slot migration, CLUSTER NODES appends entries like
		// "[5461->-abc123]" (migrating) or "[5461-<-abc123]" (importing) to the
		// slot fields. GetSlots() returns fields[8:] verbatim, so these entries
		// can appear here. Skip them — they aren't assignable slot ranges.
		if strings.HasPrefix(part, "[") {
			continue
		}
		r, err := parseSlotsRange(part)
		if err != nil {
			return nil, err
		}
		ranges = append(ranges, r)
	}
	return ranges, nil
}

// parseSlotsRange parses a string to find a single SlotsRange
func parseSlotsRange(s string) (SlotsRange, error) {
	if strings.Contains(s, "-") {
		parts := strings.Split(s, "-")
		if len(parts) != 2 {
			return SlotsRange{}, fmt.Errorf("invalid range: %s", s)
		}
		start, err := strconv.Atoi(parts[0])
		if err != nil {
			return SlotsRange{}, err
		}
		end, err := strconv.Atoi(parts[1])
		if err != nil {
			return SlotsRange{}, err
		}
		if start > end {
			return SlotsRange{}, fmt.Errorf("invalid range: start > end")
		}
		return SlotsRange{start, end}, nil
	}

	// Single number range
	n, err := strconv.Atoi(s)
	if err != nil {
		return SlotsRange{}, fmt.Errorf("invalid number: %s", s)
	}
	return SlotsRange{n, n}, nil
}

// SubtractSlotsRange subtracts a SlotsRange from another SlotsRange.
func SubtractSlotsRange(base, remove SlotsRange) []SlotsRange {
	var result []SlotsRange

	// No overlap
	if remove.End < base.Start || remove.Start > base.End {
		return []SlotsRange{base}
	}
	// Add range remaining on the left side.
	if remove.Start > base.Start {
		left := SlotsRange{base.Start, remove.Start - 1}
		result = append(result, left)
	}
	// Add range remaining on the right side.
	if remove.End < base.End {
		right := SlotsRange{remove.End + 1, base.End}
		result = append(result, right)
	}
	return result
}
