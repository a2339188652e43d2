package valkey

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// FailoverMode selects the variant of CLUSTER FAILOVER.
type FailoverMode int

const (
	// FailoverDefault is a coordinated failover: the primary stops writes,
	// the replica catches up and takes over. No acknowledged write is lost.
	FailoverDefault FailoverMode = iota
	// FailoverForce does not wait for the primary (it may be down) but
	// still needs a majority of primaries to vote.
	FailoverForce
	// FailoverTakeover promotes the replica without any vote; used when the
	// cluster has lost its quorum.
	FailoverTakeover
)

// String returns the CLUSTER FAILOVER option, or "DEFAULT".
func (m FailoverMode) String() string {
	switch m {
	case FailoverForce:
		return "FORCE"
	case FailoverTakeover:
		return "TAKEOVER"
	default:
		return "DEFAULT"
	}
}

// Ping checks that the server answers.
func (c *Client) Ping(ctx context.Context) error {
	s, err := c.str(ctx, "PING")
	if err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	if s != "PONG" {
		return fmt.Errorf("ping: unexpected reply %q", truncate(s, 64))
	}
	return nil
}

// Info runs INFO with the given sections (none: the default sections).
func (c *Client) Info(ctx context.Context, sections ...string) (Info, error) {
	s, err := c.str(ctx, append([]string{"INFO"}, sections...)...)
	if err != nil {
		return Info{}, fmt.Errorf("info: %w", err)
	}
	return ParseInfo(s), nil
}

// Version returns the server version from INFO server: valkey_version, or
// redis_version for servers that do not report it.
func (c *Client) Version(ctx context.Context) (Version, error) {
	info, err := c.Info(ctx, "server")
	if err != nil {
		return Version{}, fmt.Errorf("version: %w", err)
	}
	v, err := VersionFromInfo(info)
	if err != nil {
		return Version{}, fmt.Errorf("version: %w", err)
	}
	return v, nil
}

// ReplicationInfo returns the parsed INFO replication section.
func (c *Client) ReplicationInfo(ctx context.Context) (Replication, error) {
	info, err := c.Info(ctx, "replication")
	if err != nil {
		return Replication{}, fmt.Errorf("replication info: %w", err)
	}
	return ParseReplication(info), nil
}

// MyID returns the cluster node ID of the server.
func (c *Client) MyID(ctx context.Context) (string, error) {
	id, err := c.str(ctx, "CLUSTER", "MYID")
	if err != nil {
		return "", fmt.Errorf("cluster myid: %w", err)
	}
	return id, nil
}

// ClusterInfo returns CLUSTER INFO as key/value pairs.
func (c *Client) ClusterInfo(ctx context.Context) (map[string]string, error) {
	s, err := c.str(ctx, "CLUSTER", "INFO")
	if err != nil {
		return nil, fmt.Errorf("cluster info: %w", err)
	}
	return ParseClusterInfo(s), nil
}

// ClusterNodes returns the parsed CLUSTER NODES of the server.
func (c *Client) ClusterNodes(ctx context.Context) ([]ClusterNode, error) {
	s, err := c.str(ctx, "CLUSTER", "NODES")
	if err != nil {
		return nil, fmt.Errorf("cluster nodes: %w", err)
	}
	nodes, err := ParseClusterNodes(s)
	if err != nil {
		return nil, fmt.Errorf("cluster nodes: %w", err)
	}
	return nodes, nil
}

// ClusterShards returns the parsed CLUSTER SHARDS of the server.
func (c *Client) ClusterShards(ctx context.Context) ([]ClusterShard, error) {
	v, err := c.value(ctx, "CLUSTER", "SHARDS")
	if err != nil {
		return nil, fmt.Errorf("cluster shards: %w", err)
	}
	shards, err := ParseClusterShards(v)
	if err != nil {
		return nil, fmt.Errorf("cluster shards: %w", err)
	}
	return shards, nil
}

// Meet introduces the node at ip:port to the server's cluster. busPort 0
// means the default (port + 10000).
func (c *Client) Meet(ctx context.Context, ip string, port, busPort int) error {
	args := []string{"CLUSTER", "MEET", ip, strconv.Itoa(port)}
	if busPort != 0 {
		args = append(args, strconv.Itoa(busPort))
	}
	if err := c.ok(ctx, args...); err != nil {
		return fmt.Errorf("cluster meet %s:%d: %w", ip, port, err)
	}
	return nil
}

// AddSlotsRange assigns the slot ranges to the server.
func (c *Client) AddSlotsRange(ctx context.Context, ranges []SlotRange) error {
	if err := c.slotsRangeCommand(ctx, "ADDSLOTSRANGE", ranges); err != nil {
		return fmt.Errorf("cluster addslotsrange %s: %w", FormatRanges(ranges), err)
	}
	return nil
}

// DelSlotsRange removes the slot ranges from the server's view of the cluster.
func (c *Client) DelSlotsRange(ctx context.Context, ranges []SlotRange) error {
	if err := c.slotsRangeCommand(ctx, "DELSLOTSRANGE", ranges); err != nil {
		return fmt.Errorf("cluster delslotsrange %s: %w", FormatRanges(ranges), err)
	}
	return nil
}

func (c *Client) slotsRangeCommand(ctx context.Context, sub string, ranges []SlotRange) error {
	args, err := rangeArgs([]string{"CLUSTER", sub}, ranges)
	if err != nil {
		return err
	}
	return c.ok(ctx, args...)
}

// rangeArgs appends "start end" pairs of valid, non-empty ranges.
func rangeArgs(args []string, ranges []SlotRange) ([]string, error) {
	if len(ranges) == 0 {
		return nil, fmt.Errorf("no slot range: %w", ErrInvalidArgument)
	}
	for _, r := range ranges {
		if !r.Valid() {
			return nil, fmt.Errorf("slot range %d-%d: %w", r.Start, r.End, ErrInvalidArgument)
		}
		args = append(args, strconv.Itoa(r.Start), strconv.Itoa(r.End))
	}
	return args, nil
}

// Replicate makes the server a replica of the primary with the given node ID.
func (c *Client) Replicate(ctx context.Context, primaryID string) error {
	if err := c.ok(ctx, "CLUSTER", "REPLICATE", primaryID); err != nil {
		return fmt.Errorf("cluster replicate %s: %w", primaryID, err)
	}
	return nil
}

// Failover asks the server, a replica, to take over its primary's slots.
// The command returns once the failover has been started, not finished.
func (c *Client) Failover(ctx context.Context, mode FailoverMode) error {
	args := []string{"CLUSTER", "FAILOVER"}
	if mode == FailoverForce || mode == FailoverTakeover {
		args = append(args, mode.String())
	}
	if err := c.ok(ctx, args...); err != nil {
		return fmt.Errorf("cluster failover %s: %w", mode, err)
	}
	return nil
}

// Forget removes the node from the server's node table; other nodes must
// forget it too within 60 s or gossip brings it back.
func (c *Client) Forget(ctx context.Context, id string) error {
	if err := c.ok(ctx, "CLUSTER", "FORGET", id); err != nil {
		return fmt.Errorf("cluster forget %s: %w", id, err)
	}
	return nil
}

// BumpEpoch runs CLUSTER BUMPEPOCH: the node takes a config epoch above every epoch it
// knows, unless its own is already the greatest and no other node has it (bumped false).
// It returns the node's config epoch after.
func (c *Client) BumpEpoch(ctx context.Context) (bumped bool, epoch int64, err error) {
	s, err := c.str(ctx, "CLUSTER", "BUMPEPOCH")
	if err != nil {
		return false, 0, fmt.Errorf("cluster bumpepoch: %w", err)
	}
	word, n, ok := strings.Cut(s, " ")
	if ok {
		epoch, err = strconv.ParseInt(n, 10, 64)
	}
	if !ok || err != nil || (word != "BUMPED" && word != "STILL") {
		return false, 0, fmt.Errorf("cluster bumpepoch: unexpected reply %q", s)
	}
	return word == "BUMPED", epoch, nil
}

// SetSlotImporting marks slot as being imported from sourceID (run on the
// target).
func (c *Client) SetSlotImporting(ctx context.Context, slot int, sourceID string) error {
	return c.setSlot(ctx, slot, "IMPORTING", sourceID)
}

// SetSlotMigrating marks slot as moving to targetID (run on the source).
func (c *Client) SetSlotMigrating(ctx context.Context, slot int, targetID string) error {
	return c.setSlot(ctx, slot, "MIGRATING", targetID)
}

// SetSlotNode binds slot to nodeID and clears its migration state.
func (c *Client) SetSlotNode(ctx context.Context, slot int, nodeID string) error {
	return c.setSlot(ctx, slot, "NODE", nodeID)
}

// SetSlotStable clears the importing/migrating state of slot.
func (c *Client) SetSlotStable(ctx context.Context, slot int) error {
	return c.setSlot(ctx, slot, "STABLE", "")
}

func (c *Client) setSlot(ctx context.Context, slot int, sub, id string) error {
	if !validSlot(slot) {
		return fmt.Errorf("cluster setslot %d %s: %w", slot, sub, ErrInvalidArgument)
	}
	args := []string{"CLUSTER", "SETSLOT", strconv.Itoa(slot), sub}
	if id != "" {
		args = append(args, id)
	}
	if err := c.ok(ctx, args...); err != nil {
		return fmt.Errorf("cluster setslot %d %s %s: %w", slot, sub, id, err)
	}
	return nil
}

// setSlotLanes is how many connections carry one SetSlots call at once. From Valkey 8.0
// a primary with replicas answers CLUSTER SETSLOT only once its replicas acknowledged it,
// and a connection's next command waits for that answer: on one connection each slot
// costs a replica round trip, on several one acknowledgement releases a command of each.
// Measured on loopback (8.0.1, two primaries with a replica each, 1024 slots with 50k
// keys moved 64 at a time): 5.3 ms a slot on one connection, 1.6 ms on eight. One
// MULTI/EXEC of many SETSLOTs is not a way around the wait: it makes an 8.0.1 primary
// with replicas abort ("multi.c:233 'c->flag.blocked == 0' is not true").
const setSlotLanes = 8

// setSlotsPerLane is the fewest slots a lane of its own is worth: smaller calls (a
// single slot finished, a handful left) stay on the client's shared connection.
const setSlotsPerLane = 4

// SetSlots runs CLUSTER SETSLOT <slot> <sub> [id] for every slot of slots; sub is
// IMPORTING, MIGRATING, NODE or STABLE. The commands are pipelined over up to
// setSlotLanes connections at once (the shared one and connections borrowed for the
// call), each slot's once: the slots are independent of each other. The refusal of the
// earliest slot in slots is returned, naming it; the other commands have run too.
func (c *Client) SetSlots(ctx context.Context, slots []int, sub, id string) error {
	if len(slots) == 0 {
		return nil
	}
	cmds := make([][]string, 0, len(slots))
	for _, slot := range slots {
		if !validSlot(slot) {
			return fmt.Errorf("cluster setslot %d %s: %w", slot, sub, ErrInvalidArgument)
		}
		args := []string{"CLUSTER", "SETSLOT", strconv.Itoa(slot), sub}
		if id != "" {
			args = append(args, id)
		}
		cmds = append(cmds, args)
	}
	ctx, cancel := c.withTimeout(ctx, 0)
	defer cancel()
	lanes := min(setSlotLanes, max(1, len(slots)/setSlotsPerLane))
	size := (len(cmds) + lanes - 1) / lanes
	errs := make([]error, len(slots))
	// run pipelines the commands of the lane starting at first on one connection.
	run := func(first int, do func(...rueidis.Completed) []rueidis.RedisResult) {
		part := cmds[first:min(first+size, len(cmds))]
		built := make(rueidis.Commands, len(part))
		for i, args := range part {
			built[i] = c.rc.B().Arbitrary(args...).Build()
		}
		for i, r := range do(built...) {
			errs[first+i] = setSlotReply(r)
		}
	}
	c.begin(ctx)
	var wg sync.WaitGroup
	for first := size; first < len(cmds); first += size {
		wg.Go(func() {
			// A lane may have waited idle in rueidis' pool (up to idleLaneClose) while
			// the server closed it: one PING first, and another lane if it failed.
			dc, release := c.rc.Dedicate()
			if !c.ping(ctx, dc) {
				release()
				dc, release = c.rc.Dedicate()
			}
			defer func() { release() }()
			run(first, func(cmds ...rueidis.Completed) []rueidis.RedisResult { return dc.DoMulti(ctx, cmds...) })
		})
	}
	run(0, func(cmds ...rueidis.Completed) []rueidis.RedisResult { return c.rc.DoMulti(ctx, cmds...) })
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("cluster setslot %d %s %s: %w", slots[i], sub, id, asServerError(err))
		}
	}
	return nil
}

// setSlotReply is nil for SETSLOT's OK, the error otherwise.
func setSlotReply(r rueidis.RedisResult) error {
	msg, err := r.ToMessage()
	if err != nil {
		return err
	}
	return wantOK(msg)
}

// KeysInSlots returns up to count keys of each slot of slots (CLUSTER GETKEYSINSLOT), in
// one round trip (pipelined); a slot without keys has none in the map. When the replies
// do not fit in the reply budget together (long key names), it asks for half the slots at
// a time, and for one slot for half the keys, down to one: a caller that moves the keys it
// got asks again for those still in the slot. Only a single key name over the budget
// fails, with an error wrapping ErrReplyTooLarge.
func (c *Client) KeysInSlots(ctx context.Context, slots []int, count int) (map[int][]string, error) {
	for _, slot := range slots {
		if !validSlot(slot) || count < 0 {
			return nil, fmt.Errorf("cluster getkeysinslot %d %d: %w", slot, count, ErrInvalidArgument)
		}
	}
	if len(slots) == 0 {
		return nil, nil
	}
	ctx, cancel := c.withTimeout(ctx, 0)
	defer cancel()
	out := map[int][]string{}
	if err := c.keysInSlots(ctx, slots, count, out); err != nil {
		return nil, err
	}
	return out, nil
}

// keysInSlots is KeysInSlots with smaller pipelines while the replies do not fit.
func (c *Client) keysInSlots(ctx context.Context, slots []int, count int, out map[int][]string) error {
	err := c.keysInSlotsOnce(ctx, slots, count, out)
	switch {
	case !errors.Is(err, ErrReplyTooLarge):
		return err
	case len(slots) > 1:
		half := len(slots) / 2
		if err := c.keysInSlots(ctx, slots[:half], count, out); err != nil {
			return err
		}
		return c.keysInSlots(ctx, slots[half:], count, out)
	case count > 1:
		return c.keysInSlots(ctx, slots, count/2, out)
	}
	return err
}

// keysInSlotsOnce fetches the keys of slots in one pipeline.
func (c *Client) keysInSlotsOnce(ctx context.Context, slots []int, count int, out map[int][]string) error {
	cmds := make(rueidis.Commands, 0, len(slots))
	for _, slot := range slots {
		cmds = append(cmds, c.rc.B().Arbitrary("CLUSTER", "GETKEYSINSLOT", strconv.Itoa(slot), strconv.Itoa(count)).Build())
	}
	c.begin(ctx)
	for i, r := range c.rc.DoMulti(ctx, cmds...) {
		msg, err := r.ToMessage()
		if err != nil {
			return fmt.Errorf("cluster getkeysinslot %d: %w", slots[i], asServerError(err))
		}
		v, err := toTree(msg)
		if err != nil {
			return fmt.Errorf("cluster getkeysinslot %d: %w", slots[i], err)
		}
		keys, err := stringList(v)
		if err != nil {
			return fmt.Errorf("cluster getkeysinslot %d: %w", slots[i], err)
		}
		if len(keys) > 0 {
			out[slots[i]] = keys
		}
	}
	return nil
}

// CountKeysInSlot returns the number of keys the server holds in slot.
func (c *Client) CountKeysInSlot(ctx context.Context, slot int) (int64, error) {
	if !validSlot(slot) {
		return 0, fmt.Errorf("cluster countkeysinslot %d: %w", slot, ErrInvalidArgument)
	}
	n, err := c.integer(ctx, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot))
	if err != nil {
		return 0, fmt.Errorf("cluster countkeysinslot %d: %w", slot, err)
	}
	return n, nil
}

// GetKeysInSlot returns up to count keys of slot.
func (c *Client) GetKeysInSlot(ctx context.Context, slot, count int) ([]string, error) {
	if !validSlot(slot) || count < 0 {
		return nil, fmt.Errorf("cluster getkeysinslot %d %d: %w", slot, count, ErrInvalidArgument)
	}
	v, err := c.value(ctx, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(slot), strconv.Itoa(count))
	if err != nil {
		return nil, fmt.Errorf("cluster getkeysinslot %d: %w", slot, err)
	}
	keys, err := stringList(v)
	if err != nil {
		return nil, fmt.Errorf("cluster getkeysinslot %d: %w", slot, err)
	}
	return keys, nil
}

// MigrateArgs are the arguments of Migrate.
type MigrateArgs struct {
	// Host and Port of the target server.
	Host string
	Port int
	// Keys to move; an empty list is a no-op.
	Keys []string
	// Timeout is the server's I/O timeout towards the target. Default 5s.
	Timeout time.Duration
	// Username and Password authenticate on the target (AUTH2; AUTH when
	// Username is empty; none when Password is empty).
	Username, Password string
	// Replace overwrites existing keys on the target.
	Replace bool
	// Copy keeps the keys on the source.
	Copy bool
}

// Migrate moves keys from the server to another one with MIGRATE (legacy slot
// migration). Keys that do not exist are skipped.
func (c *Client) Migrate(ctx context.Context, a MigrateArgs) error {
	if len(a.Keys) == 0 {
		return nil
	}
	if a.Timeout <= 0 {
		a.Timeout = 5 * time.Second
	}
	msg, err := c.resultWithin(ctx, a.Timeout+time.Second, []string{a.Password}, migrateCommand(a)...)
	if err != nil {
		return fmt.Errorf("migrate %d keys to %s:%d: %w", len(a.Keys), a.Host, a.Port, err)
	}
	if s, err := replyString(msg); err != nil || (s != "OK" && s != "NOKEY") {
		return fmt.Errorf("migrate %d keys to %s:%d: unexpected reply %q", len(a.Keys), a.Host, a.Port, truncate(s, 64))
	}
	return nil
}

// migrateCommand builds MIGRATE host port "" 0 timeout [COPY] [REPLACE]
// [AUTH2 user pass | AUTH pass] KEYS key...
func migrateCommand(a MigrateArgs) []string {
	args := []string{"MIGRATE", a.Host, strconv.Itoa(a.Port), "", "0", strconv.FormatInt(a.Timeout.Milliseconds(), 10)}
	if a.Copy {
		args = append(args, "COPY")
	}
	if a.Replace {
		args = append(args, "REPLACE")
	}
	switch {
	case a.Password != "" && a.Username != "":
		args = append(args, "AUTH2", a.Username, a.Password)
	case a.Password != "":
		args = append(args, "AUTH", a.Password)
	}
	args = append(args, "KEYS")
	return append(args, a.Keys...)
}

// MigrateSlots starts an atomic slot migration of ranges to the primary
// targetID (CLUSTER MIGRATESLOTS, Valkey 9.0 and later; older servers answer
// with an error). It returns once the migration has started; follow it with
// SlotMigrations on the source. On 9.x the source authenticates to the target
// with its primaryuser/primaryauth settings.
func (c *Client) MigrateSlots(ctx context.Context, ranges []SlotRange, targetID string) error {
	args, err := rangeArgs([]string{"CLUSTER", "MIGRATESLOTS", "SLOTSRANGE"}, ranges)
	if err == nil {
		err = c.ok(ctx, append(args, "NODE", targetID)...)
	}
	if err != nil {
		return fmt.Errorf("cluster migrateslots %s to %s: %w", FormatRanges(ranges), targetID, err)
	}
	return nil
}

// SlotMigrations returns the in-progress and recently finished atomic slot
// migrations known to the server (CLUSTER GETSLOTMIGRATIONS, Valkey 9.0+).
func (c *Client) SlotMigrations(ctx context.Context) ([]SlotMigration, error) {
	v, err := c.value(ctx, "CLUSTER", "GETSLOTMIGRATIONS")
	if err != nil {
		return nil, fmt.Errorf("cluster getslotmigrations: %w", err)
	}
	jobs, err := ParseSlotMigrations(v)
	if err != nil {
		return nil, fmt.Errorf("cluster getslotmigrations: %w", err)
	}
	return jobs, nil
}

// CancelSlotMigrations cancels the atomic slot migrations started on the
// server (CLUSTER CANCELSLOTMIGRATIONS, Valkey 9.0+).
func (c *Client) CancelSlotMigrations(ctx context.Context) error {
	if _, err := c.result(ctx, nil, "CLUSTER", "CANCELSLOTMIGRATIONS"); err != nil {
		return fmt.Errorf("cluster cancelslotmigrations: %w", err)
	}
	return nil
}

// stringList converts an array reply of strings.
func stringList(v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("reply is %T, want an array", v)
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("array element is %T, want a string", e)
		}
		out = append(out, s)
	}
	return out, nil
}
