package valkey

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// ErrParse is wrapped by every parser error.
var ErrParse = errors.New("parse error")

func parseErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrParse, fmt.Sprintf(format, args...))
}

// Roles as normalised by this package.
const (
	RolePrimary = "primary"
	RoleReplica = "replica"
)

// normaliseRole maps the server's spellings (master/slave, primary/replica)
// to RolePrimary or RoleReplica; anything else is returned as is.
func normaliseRole(s string) string {
	switch strings.ToLower(s) {
	case "master", "primary":
		return RolePrimary
	case "slave", "replica":
		return RoleReplica
	}
	return s
}

// ---- CLUSTER NODES ----

// ClusterNode is one line of CLUSTER NODES.
type ClusterNode struct {
	ID       string
	IP       string
	Port     int
	BusPort  int
	Hostname string
	// Flags as the server lists them ("myself", "master", "fail?", ...).
	Flags []string
	// The flags as booleans; Primary and Replica accept both spellings.
	Myself, Primary, Replica, Fail, PFail, Handshake, NoAddr, NoFailover bool
	// PrimaryID is the node ID of the primary of a replica, "" otherwise.
	PrimaryID   string
	PingSent    int64
	PongRecv    int64
	ConfigEpoch uint64
	// Connected is the state of the cluster bus link to the node.
	Connected bool
	// Slots the node serves, normalised (sorted and merged).
	Slots []SlotRange
	// Importing maps a slot to the node it is imported from, Migrating to
	// the node it moves to. Only the reporting node's own view.
	Importing, Migrating map[int]string
}

// Addr returns "ip:port" of the node (IPv6 in brackets).
func (n ClusterNode) Addr() string {
	return joinHostPort(n.IP, n.Port)
}

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// ParseClusterNodes parses the reply of CLUSTER NODES (or a nodes.conf
// without its trailing "vars" line).
func ParseClusterNodes(s string) ([]ClusterNode, error) {
	var nodes []ClusterNode
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		n, err := parseNodeLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// parseNodeLine parses
// <id> <ip:port@cport[,hostname]> <flags> <primary> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot>...
func parseNodeLine(line string) (ClusterNode, error) {
	f := strings.Fields(line)
	if len(f) < 8 {
		return ClusterNode{}, parseErr("cluster node line has %d fields, want at least 8", len(f))
	}
	n := ClusterNode{ID: f[0]}
	var err error
	if n.IP, n.Port, n.BusPort, n.Hostname, err = parseNodeAddr(f[1]); err != nil {
		return ClusterNode{}, err
	}
	n.setFlags(f[2])
	if f[3] != "-" {
		n.PrimaryID = f[3]
	}
	if err := n.setCounters(f[4], f[5], f[6]); err != nil {
		return ClusterNode{}, err
	}
	n.Connected = f[7] == "connected"
	if err := n.setSlots(f[8:]); err != nil {
		return ClusterNode{}, err
	}
	return n, nil
}

// parseNodeAddr parses ip:port@cport[,hostname[,aux=value...]]. The IP may
// be IPv6 (without brackets, as the server prints it) or empty (noaddr).
func parseNodeAddr(s string) (ip string, port, bus int, hostname string, err error) {
	addr, rest, _ := strings.Cut(s, ",")
	if h, _, _ := strings.Cut(rest, ","); !strings.Contains(h, "=") {
		hostname = h
	}
	hostPort, cport, hasBus := strings.Cut(addr, "@")
	i := strings.LastIndexByte(hostPort, ':')
	if i < 0 {
		return "", 0, 0, "", parseErr("node address %q has no port", truncate(s, 80))
	}
	ip = strings.TrimSuffix(strings.TrimPrefix(hostPort[:i], "["), "]")
	if port, err = parsePort(hostPort[i+1:]); err != nil {
		return "", 0, 0, "", err
	}
	if hasBus {
		if bus, err = parsePort(cport); err != nil {
			return "", 0, 0, "", err
		}
	}
	return ip, port, bus, hostname, nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 0 || p > 65535 {
		return 0, parseErr("bad port %q", truncate(s, 20))
	}
	return p, nil
}

func (n *ClusterNode) setFlags(s string) {
	for _, fl := range strings.Split(s, ",") {
		if fl == "" || fl == "noflags" {
			continue
		}
		n.Flags = append(n.Flags, fl)
		switch fl {
		case "myself":
			n.Myself = true
		case "master", "primary":
			n.Primary = true
		case "slave", "replica":
			n.Replica = true
		case "fail":
			n.Fail = true
		case "fail?":
			n.PFail = true
		case "handshake":
			n.Handshake = true
		case "noaddr":
			n.NoAddr = true
		case "nofailover":
			n.NoFailover = true
		}
	}
}

func (n *ClusterNode) setCounters(ping, pong, epoch string) error {
	var err error
	if n.PingSent, err = strconv.ParseInt(ping, 10, 64); err != nil {
		return parseErr("bad ping-sent %q", truncate(ping, 24))
	}
	if n.PongRecv, err = strconv.ParseInt(pong, 10, 64); err != nil {
		return parseErr("bad pong-recv %q", truncate(pong, 24))
	}
	if n.ConfigEpoch, err = strconv.ParseUint(epoch, 10, 64); err != nil {
		return parseErr("bad config-epoch %q", truncate(epoch, 24))
	}
	return nil
}

// setSlots parses slot entries: "n", "a-b", "[n->-id]" (migrating to id) and
// "[n-<-id]" (importing from id).
func (n *ClusterNode) setSlots(entries []string) error {
	var ranges []SlotRange
	for _, e := range entries {
		if strings.HasPrefix(e, "[") {
			if err := n.setMigration(e); err != nil {
				return err
			}
			continue
		}
		r, err := ParseSlotRange(e)
		if err != nil {
			return err
		}
		ranges = append(ranges, r)
	}
	n.Slots = NormalizeRanges(ranges)
	return nil
}

func (n *ClusterNode) setMigration(e string) error {
	body, ok := strings.CutSuffix(strings.TrimPrefix(e, "["), "]")
	if !ok {
		return parseErr("bad slot migration entry %q", truncate(e, 80))
	}
	if slot, id, ok := strings.Cut(body, "->-"); ok {
		return addMigration(&n.Migrating, slot, id, e)
	}
	if slot, id, ok := strings.Cut(body, "-<-"); ok {
		return addMigration(&n.Importing, slot, id, e)
	}
	return parseErr("bad slot migration entry %q", truncate(e, 80))
}

func addMigration(m *map[int]string, slot, id, entry string) error {
	s, err := strconv.Atoi(slot)
	if err != nil || !validSlot(s) || id == "" {
		return parseErr("bad slot migration entry %q", truncate(entry, 80))
	}
	if *m == nil {
		*m = map[int]string{}
	}
	(*m)[s] = id
	return nil
}

// ---- INFO and CLUSTER INFO ----

// Info is the parsed reply of INFO: fields by section. Section names are
// lower case ("server", "replication"); fields before any section header
// are in section "".
type Info struct {
	Sections map[string]map[string]string
}

// ParseInfo parses an INFO reply. It never fails: lines that are not
// "key:value" or "# Section" are ignored.
func ParseInfo(s string) Info {
	info := Info{Sections: map[string]map[string]string{}}
	section := ""
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, "\r")
		if name, ok := strings.CutPrefix(line, "#"); ok {
			section = strings.ToLower(strings.TrimSpace(name))
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || k == "" {
			continue
		}
		if info.Sections[section] == nil {
			info.Sections[section] = map[string]string{}
		}
		info.Sections[section][k] = v
	}
	return info
}

// Lookup returns the value of key from any section (the first section in
// name order that has it).
func (i Info) Lookup(key string) (string, bool) {
	names := make([]string, 0, len(i.Sections))
	for name := range i.Sections {
		names = append(names, name)
	}
	sort.Strings(names) // deterministic when a key is in two sections
	for _, name := range names {
		if v, ok := i.Sections[name][key]; ok {
			return v, true
		}
	}
	return "", false
}

// Get returns the value of key from any section, or "".
func (i Info) Get(key string) string {
	v, _ := i.Lookup(key)
	return v
}

// first returns the value of the first key present.
func (i Info) first(keys ...string) (string, bool) {
	for _, k := range keys {
		if v, ok := i.Lookup(k); ok {
			return v, true
		}
	}
	return "", false
}

// Section returns the fields of one section (nil when absent).
func (i Info) Section(name string) map[string]string {
	return i.Sections[strings.ToLower(name)]
}

// ParseClusterInfo parses the reply of CLUSTER INFO into key/value pairs.
func ParseClusterInfo(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), ":")
		if ok && k != "" {
			m[k] = v
		}
	}
	return m
}

// ---- INFO replication ----

// Replication is the parsed INFO replication section.
type Replication struct {
	// Role is RolePrimary or RoleReplica (or the server's word if unknown).
	Role string
	// Of a replica: where its primary is and how the link is.
	PrimaryHost    string
	PrimaryPort    int
	LinkUp         bool
	LinkDownSince  int64 // seconds, as reported while the link is down
	SyncInProgress bool
	// Offset is this server's replication offset: what a replica has
	// processed, or what a primary has produced.
	Offset int64
	// Of a primary: its connected replicas.
	ConnectedReplicas int
	Replicas          []ReplicaInfo
	// FailoverState is the state of a coordinated failover (no-failover,
	// waiting-for-sync, failover-in-progress).
	FailoverState string
}

// ReplicaInfo is one replica line (slaveN / replicaN) of a primary.
type ReplicaInfo struct {
	IP     string
	Port   int
	State  string
	Offset int64
	Lag    int64
}

// ParseReplication reads the replication fields of info, accepting the
// master_*/slave* spellings and any primary_*/replica* spellings.
func ParseReplication(info Info) Replication {
	r := Replication{Role: normaliseRole(info.Get("role"))}
	r.PrimaryHost, _ = info.first("master_host", "primary_host")
	r.PrimaryPort = int(infoInt(info, "master_port", "primary_port"))
	link, _ := info.first("master_link_status", "primary_link_status")
	r.LinkUp = link == "up"
	r.LinkDownSince = infoInt(info, "master_link_down_since_seconds", "primary_link_down_since_seconds")
	r.SyncInProgress = infoInt(info, "master_sync_in_progress", "primary_sync_in_progress") != 0
	if r.Role == RoleReplica {
		r.Offset = infoInt(info, "slave_repl_offset", "replica_repl_offset", "master_repl_offset", "primary_repl_offset")
	} else {
		r.Offset = infoInt(info, "master_repl_offset", "primary_repl_offset")
	}
	r.ConnectedReplicas = int(infoInt(info, "connected_slaves", "connected_replicas"))
	r.FailoverState, _ = info.first("master_failover_state", "primary_failover_state", "failover_state")
	r.Replicas = replicaLines(info)
	return r
}

// KeyCount returns the number of keys of every database in the keyspace section of
// info ("db0:keys=12,expires=0,avg_ttl=0"), 0 when it lists none: a server whose
// dataset is empty. ok is false when a database line cannot be read.
func KeyCount(info Info) (n int64, ok bool) {
	ok = true
	for db, v := range info.Section("keyspace") {
		if !strings.HasPrefix(db, "db") {
			continue
		}
		keys, found := "", false
		for _, f := range strings.Split(v, ",") {
			if k, val, cut := strings.Cut(f, "="); cut && k == "keys" {
				keys, found = val, true
				break
			}
		}
		c, err := strconv.ParseInt(keys, 10, 64)
		if !found || err != nil || c < 0 {
			ok = false
			continue
		}
		n += c
	}
	return n, ok
}

// infoInt returns the first present key as an integer (0 when absent or bad).
func infoInt(info Info, keys ...string) int64 {
	v, _ := info.first(keys...)
	n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n
}

// replicaLines collects slave0..N / replica0..N in index order.
func replicaLines(info Info) []ReplicaInfo {
	var out []ReplicaInfo
	for i := 0; ; i++ {
		v, ok := info.first("slave"+strconv.Itoa(i), "replica"+strconv.Itoa(i))
		if !ok {
			return out
		}
		out = append(out, parseReplicaLine(v))
	}
}

// parseReplicaLine parses "ip=...,port=...,state=...,offset=...,lag=...".
func parseReplicaLine(s string) ReplicaInfo {
	var r ReplicaInfo
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "ip":
			r.IP = v
		case "port":
			r.Port, _ = strconv.Atoi(v)
		case "state":
			r.State = v
		case "offset":
			r.Offset, _ = strconv.ParseInt(v, 10, 64)
		case "lag":
			r.Lag, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return r
}

// ---- Version ----

// Version is a Valkey server version (valkeyconf's, which the config rules use too).
type Version = valkeyconf.Version

// ParseVersion parses "major.minor[.patch]" with an optional suffix after
// '-' or '+' ("9.0.0-rc1").
func ParseVersion(s string) (Version, error) {
	v, err := valkeyconf.ParseVersion(s)
	if err != nil {
		return Version{}, parseErr("%v", err)
	}
	return v, nil
}

// VersionFromInfo reads valkey_version, or redis_version, from INFO.
func VersionFromInfo(info Info) (Version, error) {
	s, ok := info.first("valkey_version", "redis_version")
	if !ok {
		return Version{}, parseErr("INFO has no valkey_version nor redis_version")
	}
	return ParseVersion(s)
}

// ---- CLUSTER SHARDS ----

// ClusterShard is one shard of CLUSTER SHARDS.
type ClusterShard struct {
	Slots []SlotRange
	Nodes []ShardNode
}

// ShardNode is one node of a shard in CLUSTER SHARDS.
type ShardNode struct {
	ID                string
	IP                string
	Endpoint          string
	Hostname          string
	Port              int
	TLSPort           int
	Role              string // RolePrimary or RoleReplica
	ReplicationOffset int64
	Health            string // online, failed, loading
}

// Primary returns the node of the shard whose role is primary.
func (s ClusterShard) Primary() (ShardNode, bool) {
	for _, n := range s.Nodes {
		if n.Role == RolePrimary {
			return n, true
		}
	}
	return ShardNode{}, false
}

// ParseClusterShards parses the reply of CLUSTER SHARDS given as a tree (an
// array of maps, or of flat key/value arrays under RESP2).
func ParseClusterShards(v any) ([]ClusterShard, error) {
	arr, ok := list(v)
	if !ok {
		return nil, parseErr("cluster shards reply is %T, want an array", v)
	}
	shards := make([]ClusterShard, 0, len(arr))
	for i, e := range arr {
		sh, err := parseShard(e)
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
		shards = append(shards, sh)
	}
	return shards, nil
}

func parseShard(v any) (ClusterShard, error) {
	ps, err := pairs(v)
	if err != nil {
		return ClusterShard{}, parseErr("%v", err)
	}
	var sh ClusterShard
	for _, p := range ps {
		switch p.key {
		case "slots":
			if sh.Slots, err = parseSlotPairs(p.val); err != nil {
				return ClusterShard{}, err
			}
		case "nodes":
			if sh.Nodes, err = parseShardNodes(p.val); err != nil {
				return ClusterShard{}, err
			}
		}
	}
	return sh, nil
}

// parseSlotPairs parses the flat [start, end, start, end...] slot list.
func parseSlotPairs(v any) ([]SlotRange, error) {
	arr, ok := list(v)
	if !ok || len(arr)%2 != 0 {
		return nil, parseErr("shard slots are not start/end pairs")
	}
	ranges := make([]SlotRange, 0, len(arr)/2)
	for i := 0; i < len(arr); i += 2 {
		a, okA := scalarInt(arr[i])
		b, okB := scalarInt(arr[i+1])
		r := SlotRange{Start: int(a), End: int(b)}
		if !okA || !okB || a < 0 || b > SlotCount-1 || !r.Valid() {
			return nil, parseErr("bad shard slot range %v-%v", arr[i], arr[i+1])
		}
		ranges = append(ranges, r)
	}
	return NormalizeRanges(ranges), nil
}

func parseShardNodes(v any) ([]ShardNode, error) {
	arr, ok := list(v)
	if !ok {
		return nil, parseErr("shard nodes are %T, want an array", v)
	}
	nodes := make([]ShardNode, 0, len(arr))
	for i, e := range arr {
		n, err := parseShardNode(e)
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func parseShardNode(v any) (ShardNode, error) {
	ps, err := pairs(v)
	if err != nil {
		return ShardNode{}, parseErr("%v", err)
	}
	var n ShardNode
	for _, p := range ps {
		if err := n.set(p); err != nil {
			return ShardNode{}, err
		}
	}
	if n.ID == "" {
		return ShardNode{}, parseErr("shard node without id")
	}
	return n, nil
}

// set stores one field; unknown fields are ignored, known ones must have the
// right type.
func (n *ShardNode) set(p pair) error {
	strField := map[string]*string{"id": &n.ID, "ip": &n.IP, "endpoint": &n.Endpoint,
		"hostname": &n.Hostname, "role": &n.Role, "health": &n.Health}
	if dst, ok := strField[p.key]; ok {
		s, ok := scalarString(p.val)
		if !ok {
			return parseErr("shard node field %s is %T", p.key, p.val)
		}
		*dst = s
		if p.key == "role" {
			n.Role = normaliseRole(s)
		}
		return nil
	}
	switch p.key {
	case "port", "tls-port":
		x, ok := scalarInt(p.val)
		if !ok || x < 0 || x > 65535 {
			return parseErr("shard node field %s is not a port", p.key)
		}
		if p.key == "port" {
			n.Port = int(x)
		} else {
			n.TLSPort = int(x)
		}
	case "replication-offset":
		x, ok := scalarInt(p.val)
		if !ok {
			return parseErr("shard node replication-offset is not an integer")
		}
		n.ReplicationOffset = x
	}
	return nil
}

// ---- ACL GETUSER ----

// ACLUser is the parsed reply of ACL GETUSER: enough to compare a live user
// with the wanted one.
type ACLUser struct {
	Name string
	// Flags as listed ("on", "off", "nopass", "sanitize-payload", ...).
	Flags   []string
	Enabled bool
	NoPass  bool
	// Passwords are the SHA-256 hex digests of the user's passwords.
	Passwords []string
	// Commands is the command rule string ("+@all -debug").
	Commands string
	// Keys and Channels are the key and channel patterns ("~app:*", "%R~x",
	// "&*").
	Keys, Channels []string
	// Selectors are the additional rule sets of the user.
	Selectors []ACLSelector
}

// ACLSelector is one selector of an ACL user.
type ACLSelector struct {
	Commands       string
	Keys, Channels []string
}

// ParseACLUser parses the reply of ACL GETUSER given as a tree.
func ParseACLUser(v any) (ACLUser, error) {
	ps, err := pairs(v)
	if err != nil {
		return ACLUser{}, parseErr("%v", err)
	}
	var u ACLUser
	for _, p := range ps {
		if err := u.set(p); err != nil {
			return ACLUser{}, err
		}
	}
	for _, f := range u.Flags {
		u.Enabled = u.Enabled || f == "on"
		u.NoPass = u.NoPass || f == "nopass"
	}
	return u, nil
}

func (u *ACLUser) set(p pair) error {
	var err error
	switch p.key {
	case "flags":
		u.Flags, err = words(p.val)
	case "passwords":
		u.Passwords, err = words(p.val)
	case "commands":
		u.Commands, err = text(p.val)
	case "keys":
		u.Keys, err = words(p.val)
	case "channels":
		u.Channels, err = words(p.val)
	case "selectors":
		u.Selectors, err = parseSelectors(p.val)
	}
	if err != nil {
		return parseErr("acl user field %s: %v", p.key, err)
	}
	return nil
}

func parseSelectors(v any) ([]ACLSelector, error) {
	arr, ok := list(v)
	if !ok {
		return nil, fmt.Errorf("selectors are %T, want an array", v)
	}
	out := make([]ACLSelector, 0, len(arr))
	for _, e := range arr {
		ps, err := pairs(e)
		if err != nil {
			return nil, err
		}
		var s ACLSelector
		for _, p := range ps {
			switch p.key {
			case "commands":
				s.Commands, err = text(p.val)
			case "keys":
				s.Keys, err = words(p.val)
			case "channels":
				s.Channels, err = words(p.val)
			}
			if err != nil {
				return nil, err
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// words accepts a space-separated string or an array of strings.
func words(v any) ([]string, error) {
	if s, ok := v.(string); ok {
		return strings.Fields(s), nil
	}
	if v == nil {
		return nil, nil
	}
	return stringList(v)
}

// text accepts a string (or nil).
func text(v any) (string, error) {
	s, ok := scalarString(v)
	if !ok {
		return "", fmt.Errorf("value is %T, want a string", v)
	}
	return s, nil
}

// ---- CLUSTER GETSLOTMIGRATIONS ----

// States of an atomic slot migration that no longer change.
const (
	SlotMigrationSuccess   = "success"
	SlotMigrationFailed    = "failed"
	SlotMigrationCancelled = "cancelled"
)

// SlotMigration is one entry of CLUSTER GETSLOTMIGRATIONS (Valkey 9.0+).
type SlotMigration struct {
	Name      string
	Operation string // IMPORT or EXPORT
	Slots     []SlotRange
	// SourceNode and TargetNode are node IDs (Node is the peer's ID on
	// servers that report a single "node" field).
	SourceNode, TargetNode, Node string
	State, Message               string
	// Fields holds every field as reported, including ones not listed above.
	Fields map[string]string
}

// Done reports whether the migration reached a final state.
func (m SlotMigration) Done() bool {
	switch m.State {
	case SlotMigrationSuccess, SlotMigrationFailed, SlotMigrationCancelled:
		return true
	}
	return false
}

// ParseSlotMigrations parses the reply of CLUSTER GETSLOTMIGRATIONS given as
// a tree.
func ParseSlotMigrations(v any) ([]SlotMigration, error) {
	if v == nil {
		return nil, nil
	}
	arr, ok := list(v)
	if !ok {
		return nil, parseErr("slot migrations reply is %T, want an array", v)
	}
	out := make([]SlotMigration, 0, len(arr))
	for i, e := range arr {
		m, err := parseSlotMigration(e)
		if err != nil {
			return nil, fmt.Errorf("slot migration %d: %w", i, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func parseSlotMigration(v any) (SlotMigration, error) {
	fields, err := stringMap(v)
	if err != nil {
		return SlotMigration{}, parseErr("%v", err)
	}
	m := SlotMigration{
		Name:       firstNonEmpty(fields["name"], fields["link_name"]),
		Operation:  fields["operation"],
		SourceNode: fields["source_node"],
		TargetNode: fields["target_node"],
		Node:       fields["node"],
		State:      fields["state"],
		Message:    fields["message"],
		Fields:     fields,
	}
	for _, r := range strings.Fields(fields["slot_ranges"]) {
		sr, err := ParseSlotRange(r)
		if err != nil {
			return SlotMigration{}, err
		}
		m.Slots = append(m.Slots, sr)
	}
	m.Slots = NormalizeRanges(m.Slots)
	return m, nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
