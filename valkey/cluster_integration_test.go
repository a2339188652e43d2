package valkey_test

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// testCluster is a cluster of real servers formed through the package API.
type testCluster struct {
	servers []*valkeytest.Server
	clients []*valkey.Client
	ids     []string
	version valkey.Version
}

const (
	primaries = 3
	extraNode = 6 // index of a node that joins and is later forgotten
)

// TestCluster forms a 3-primary, 3-replica cluster plus one extra node and
// runs the cluster operations against it, in order.
func TestCluster(t *testing.T) {
	c := startCluster(t, 7)
	steps := []struct {
		name string
		fn   func(*testing.T, *testCluster)
	}{
		{"form", testForm},
		{"parse", testParseLive},
		{"failover", testFailover},
		{"legacy slot migration", testLegacyMigration},
		{"legacy migration of several slots, pipelined", testPipelinedMigration},
		{"atomic slot migration", testAtomicMigration},
		{"forget", testForget},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.fn(t, c) }) {
			for _, srv := range c.servers {
				t.Logf("log of %s:\n%s", srv.Addr(), srv.LogTail(15))
			}
			return
		}
	}
}

func startCluster(t *testing.T, n int) *testCluster {
	servers := valkeytest.Start(t, n, valkeytest.Options{})
	c := &testCluster{servers: servers, version: servers[0].Version}
	for _, s := range servers {
		cl := s.Dial(t)
		id, err := cl.MyID(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		c.clients = append(c.clients, cl)
		c.ids = append(c.ids, id)
	}
	return c
}

func (c *testCluster) primaryOf(replica int) int { return replica - primaries }

func testForm(t *testing.T, c *testCluster) {
	ctx := ctxT(t)
	for i, s := range c.servers[1:] {
		if err := c.clients[0].Meet(ctx, s.Host, s.Port, 0); err != nil {
			t.Fatalf("meet %d: %v", i+1, err)
		}
	}
	c.waitAllKnown(t, len(c.servers))
	capture(t, c.version, "cluster-nodes-joined.txt", []byte(c.rawNodes(t, 0)))
	for i, ranges := range valkey.EvenRanges(primaries) {
		if err := c.clients[i].AddSlotsRange(ctx, ranges); err != nil {
			t.Fatal(err)
		}
	}
	for r := primaries; r < 2*primaries; r++ {
		if err := c.clients[r].Replicate(ctx, c.ids[c.primaryOf(r)]); err != nil {
			t.Fatal(err)
		}
	}
	c.waitHealthy(t)
	c.captureFormed(t)
}

// waitAllKnown waits until every node lists n nodes, none in handshake.
func (c *testCluster) waitAllKnown(t *testing.T, n int) {
	waitFor(t, 10*time.Second, "all nodes to know each other", func() (bool, error) {
		for _, cl := range c.clients[:n] {
			nodes, err := cl.ClusterNodes(ctxT(t))
			if err != nil || len(nodes) != n {
				return false, err
			}
			for _, nd := range nodes {
				if nd.Handshake || nd.ID == "" {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

// waitHealthy waits for cluster_state:ok on the first six nodes and for every
// replica link to be up.
func (c *testCluster) waitHealthy(t *testing.T) {
	waitFor(t, 15*time.Second, "cluster_state ok and replica links up", func() (bool, error) {
		for i, cl := range c.clients[:2*primaries] {
			info, err := cl.ClusterInfo(ctxT(t))
			if err != nil || info["cluster_state"] != "ok" {
				return false, err
			}
			rep, err := cl.ReplicationInfo(ctxT(t))
			if err != nil {
				return false, err
			}
			if rep.Role == valkey.RoleReplica && (!rep.LinkUp || rep.SyncInProgress) {
				return false, fmt.Errorf("node %d link not up", i)
			}
		}
		return true, nil
	})
}

func (c *testCluster) rawNodes(t *testing.T, i int) string {
	s, err := c.clients[i].Do(ctxT(t), "CLUSTER", "NODES")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (c *testCluster) captureFormed(t *testing.T) {
	if !*captureSeeds {
		return
	}
	ctx := ctxT(t)
	capture(t, c.version, "cluster-nodes-formed.txt", []byte(c.rawNodes(t, 0)))
	capture(t, c.version, "cluster-nodes-formed-replica.txt", []byte(c.rawNodes(t, primaries)))
	for _, i := range []int{0, primaries} {
		all, err := c.clients[i].Do(ctx, "INFO", "everything")
		if err != nil {
			t.Fatal(err)
		}
		capture(t, c.version, "info-everything-"+strconv.Itoa(i)+".txt", []byte(all))
	}
	ci, err := c.clients[0].Do(ctx, "CLUSTER", "INFO")
	if err != nil {
		t.Fatal(err)
	}
	capture(t, c.version, "cluster-info.txt", []byte(ci))
	captureRaw(t, c.servers[0], "cluster-shards", "CLUSTER", "SHARDS")
	captureRaw(t, c.servers[0], "acl-getuser-admin", "ACL", "GETUSER", valkeytest.AdminUser)
	captureRaw(t, c.servers[0], "acl-getuser-replication", "ACL", "GETUSER", valkeytest.ReplicationUser)
}

// testParseLive checks the parsed CLUSTER NODES and CLUSTER SHARDS of the
// formed cluster against what was built.
func testParseLive(t *testing.T, c *testCluster) {
	ctx := ctxT(t)
	nodes, err := c.clients[0].ClusterNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]valkey.ClusterNode{}
	myself := 0
	for _, n := range nodes {
		byID[n.ID] = n
		if n.Myself {
			myself++
		}
	}
	if myself != 1 || len(byID) != len(c.servers) {
		t.Fatalf("got %d nodes with %d myself, want %d and 1", len(byID), myself, len(c.servers))
	}
	even := valkey.EvenRanges(primaries)
	for i := range primaries {
		p := byID[c.ids[i]]
		if !p.Primary || !reflect.DeepEqual(p.Slots, even[i]) || p.Port != c.servers[i].Port || !p.Connected && !p.Myself {
			t.Errorf("primary %d parsed as %+v, want slots %v", i, p, even[i])
		}
		r := byID[c.ids[i+primaries]]
		if !r.Replica || r.PrimaryID != c.ids[i] || len(r.Slots) != 0 {
			t.Errorf("replica %d parsed as %+v", i, r)
		}
	}
	checkShards(t, c, even)
}

func checkShards(t *testing.T, c *testCluster, even [][]valkey.SlotRange) {
	// A replica's move into its primary's shard reaches the other nodes by gossip:
	// wait until node 1 has heard of every one before reading its answer.
	var shards []valkey.ClusterShard
	waitFor(t, 10*time.Second, "node 1's CLUSTER SHARDS to show every replica in its primary's shard", func() (bool, error) {
		var err error
		if shards, err = c.clients[1].ClusterShards(ctxT(t)); err != nil {
			return false, err
		}
		for _, sh := range shards {
			if _, ok := sh.Primary(); !ok || len(sh.Slots) > 0 && len(sh.Nodes) != 2 {
				return false, nil
			}
		}
		return true, nil
	})
	owner := map[string][]valkey.SlotRange{}
	for _, sh := range shards {
		p, ok := sh.Primary()
		if !ok {
			t.Fatalf("shard without primary: %+v", sh)
		}
		owner[p.ID] = sh.Slots
		if len(sh.Slots) > 0 && len(sh.Nodes) != 2 {
			t.Errorf("shard of %s has %d nodes, want 2", p.ID, len(sh.Nodes))
		}
	}
	for i := range primaries {
		if !reflect.DeepEqual(owner[c.ids[i]], even[i]) {
			t.Errorf("CLUSTER SHARDS gives %s slots %v, want %v", c.ids[i], owner[c.ids[i]], even[i])
		}
	}
	checkRawShards(t, c.servers[1])
}

// checkRawShards parses the RESP2 and RESP3 forms of CLUSTER SHARDS (flat
// arrays and maps) and expects the same result.
func checkRawShards(t *testing.T, s *valkeytest.Server) {
	var parsed [2][]valkey.ClusterShard
	for i, proto := range []int{2, 3} {
		raw, err := valkeytest.RawReply(s.Addr(), valkeytest.AdminUser, s.AdminPassword, proto, "CLUSTER", "SHARDS")
		if err != nil {
			t.Fatal(err)
		}
		tree, _, err := valkeytest.DecodeRESP(raw)
		if err != nil {
			t.Fatal(err)
		}
		if parsed[i], err = valkey.ParseClusterShards(tree); err != nil {
			t.Fatalf("RESP%d: %v", proto, err)
		}
		sort.Slice(parsed[i], func(a, b int) bool { return parsed[i][a].Nodes[0].ID < parsed[i][b].Nodes[0].ID })
	}
	// Offsets and health move between the two calls; compare the topology.
	for i := range parsed {
		for j := range parsed[i] {
			for k := range parsed[i][j].Nodes {
				parsed[i][j].Nodes[k].ReplicationOffset = 0
				parsed[i][j].Nodes[k].Health = ""
			}
		}
	}
	if !reflect.DeepEqual(parsed[0], parsed[1]) {
		t.Errorf("RESP2 and RESP3 CLUSTER SHARDS differ:\n%+v\n%+v", parsed[0], parsed[1])
	}
}

// testFailover fails shard 0 over to its replica and waits for the roles to
// swap on both servers and in the cluster's view.
func testFailover(t *testing.T, c *testCluster) {
	ctx := ctxT(t)
	oldPrimary, replica := 0, primaries
	if err := c.clients[replica].Failover(ctx, valkey.FailoverDefault); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "roles to swap", func() (bool, error) {
		r, err := c.clients[replica].ReplicationInfo(ctxT(t))
		if err != nil || r.Role != valkey.RolePrimary {
			return false, err
		}
		p, err := c.clients[oldPrimary].ReplicationInfo(ctxT(t))
		if err != nil || p.Role != valkey.RoleReplica || !p.LinkUp {
			return false, err
		}
		nodes, err := c.clients[1].ClusterNodes(ctxT(t))
		if err != nil {
			return false, err
		}
		for _, n := range nodes {
			if n.ID == c.ids[replica] && (!n.Primary || valkey.CountSlots(n.Slots) == 0) {
				return false, nil
			}
			if n.ID == c.ids[oldPrimary] && n.PrimaryID != c.ids[replica] {
				return false, nil
			}
		}
		return true, nil
	})
	capture(t, c.version, "cluster-nodes-after-failover.txt", []byte(c.rawNodes(t, 1)))
	// Swap so that indexes 0..2 are primaries again for the next steps.
	c.swap(oldPrimary, replica)
}

func (c *testCluster) swap(i, j int) {
	c.servers[i], c.servers[j] = c.servers[j], c.servers[i]
	c.clients[i], c.clients[j] = c.clients[j], c.clients[i]
	c.ids[i], c.ids[j] = c.ids[j], c.ids[i]
}

// ownerOf returns the index of the primary that serves slot.
func (c *testCluster) ownerOf(t *testing.T, slot int) int {
	nodes, err := c.clients[0].ClusterNodes(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Primary && valkey.ContainsSlot(n.Slots, slot) {
			for i, id := range c.ids {
				if id == n.ID {
					return i
				}
			}
		}
	}
	t.Fatalf("no primary serves slot %d", slot)
	return -1
}

// writeKeys stores n keys with the hash tag tag through client i.
func (c *testCluster) writeKeys(t *testing.T, i int, tag string, n int) {
	ctx := ctxT(t)
	for k := range n {
		if _, err := c.clients[i].Do(ctx, "SET", fmt.Sprintf("{%s}:%d", tag, k), strconv.Itoa(k)); err != nil {
			t.Fatal(err)
		}
	}
}

// testLegacyMigration moves one slot with a few hundred keys between two
// primaries with SETSLOT IMPORTING/MIGRATING, GETKEYSINSLOT and MIGRATE
// (AUTH2), then binds the slot to the target everywhere.
func testLegacyMigration(t *testing.T, c *testCluster) {
	ctx := ctxT(t)
	const tag, keys = "legacy", 300
	slot := valkey.KeySlot("{" + tag + "}")
	src := c.ownerOf(t, slot)
	dst := (src + 1) % primaries
	c.writeKeys(t, src, tag, keys)

	must(t, c.clients[dst].SetSlotImporting(ctx, slot, c.ids[src]))
	must(t, c.clients[src].SetSlotMigrating(ctx, slot, c.ids[dst]))
	capture(t, c.version, "cluster-nodes-migrating.txt", []byte(c.rawNodes(t, src)))
	capture(t, c.version, "cluster-nodes-importing.txt", []byte(c.rawNodes(t, dst)))
	checkMigrationFlags(t, c, src, dst, slot)

	moveKeys(t, c, src, dst, slot)
	// Target first, then source, then the other primary (SETSLOT NODE is for
	// primaries; replicas learn through gossip).
	for _, i := range []int{dst, src, 3 - src - dst} {
		must(t, c.clients[i].SetSlotNode(ctx, slot, c.ids[dst]))
	}
	n, err := c.clients[dst].CountKeysInSlot(ctx, slot)
	if err != nil || n != keys {
		t.Fatalf("target holds %d keys (%v), want %d", n, err, keys)
	}
	if got := c.ownerOf(t, slot); got != dst {
		t.Fatalf("slot %d owned by node %d, want %d", slot, got, dst)
	}
	v, err := c.clients[dst].Do(ctx, "GET", "{"+tag+"}:7")
	if err != nil || v != "7" {
		t.Fatalf("GET on target = %q, %v", v, err)
	}
}

// testPipelinedMigration moves 40 slots of one primary, two with keys and the others
// empty, with SetSlots (pipelined over several connections: each primary has a replica,
// which from 8.0 acknowledges every SETSLOT before it is answered) and KeysInSlots (one
// round trip) and a MIGRATE per slot that has keys.
func testPipelinedMigration(t *testing.T, c *testCluster) {
	ctx := ctxT(t)
	src := c.ownerOf(t, valkey.KeySlot("{batch-a}"))
	dst := (src + 1) % primaries
	var slots []int
	tags := map[int]string{}
	for i := 0; len(slots) < 3; i++ {
		tag := fmt.Sprintf("batch-%d", i)
		slot := valkey.KeySlot("{" + tag + "}")
		if c.ownerOf(t, slot) != src || tags[slot] != "" {
			continue
		}
		tags[slot] = tag
		slots = append(slots, slot)
	}
	c.writeKeys(t, src, tags[slots[0]], 250)
	c.writeKeys(t, src, tags[slots[1]], 3)
	// Empty slots of the source, from one view of the cluster.
	nodes, err := c.clients[src].ClusterNodes(ctx)
	must(t, err)
	for _, r := range myself(nodes).Slots {
		for slot := r.Start; slot <= r.End && len(slots) < 40; slot++ {
			if tags[slot] != "" {
				continue
			}
			if n, err := c.clients[src].CountKeysInSlot(ctx, slot); err == nil && n == 0 {
				slots = append(slots, slot)
			}
		}
	}
	start := time.Now()
	must(t, c.clients[dst].SetSlots(ctx, slots, "IMPORTING", c.ids[src]))
	must(t, c.clients[src].SetSlots(ctx, slots, "MIGRATING", c.ids[dst]))
	t.Logf("%d slots importing and migrating in %v", len(slots), time.Since(start))
	checkMigrationFlags(t, c, src, dst, slots...)
	target := c.servers[dst]
	pending := slots
	for round := 0; len(pending) > 0; round++ {
		if round == 10 {
			t.Fatalf("keys still in slots %v after 10 rounds", pending)
		}
		keys, err := c.clients[src].KeysInSlots(ctx, pending, 100)
		must(t, err)
		if round == 0 && (len(keys[slots[0]]) != 100 || len(keys[slots[1]]) != 3 || len(keys) != 2) {
			t.Fatalf("first round's keys: %d and %d in the slots written, %d slots with keys; want 100, 3 and 2", len(keys[slots[0]]), len(keys[slots[1]]), len(keys))
		}
		var next []int
		for _, slot := range pending {
			if len(keys[slot]) == 0 {
				continue
			}
			must(t, c.clients[src].Migrate(ctx, valkey.MigrateArgs{
				Host: target.Host, Port: target.Port, Keys: keys[slot], Timeout: 5 * time.Second,
				Username: valkeytest.AdminUser, Password: target.AdminPassword, Replace: true,
			}))
			next = append(next, slot)
		}
		pending = next
	}
	for _, i := range []int{dst, src, 3 - src - dst} {
		must(t, c.clients[i].SetSlots(ctx, slots, "NODE", c.ids[dst]))
	}
	t.Logf("%d slots moved in %v", len(slots), time.Since(start))
	nodes, err = c.clients[dst].ClusterNodes(ctx)
	must(t, err)
	for _, slot := range slots {
		want := map[int]int64{slots[0]: 250, slots[1]: 3}[slot]
		if n, err := c.clients[dst].CountKeysInSlot(ctx, slot); err != nil || n != want {
			t.Errorf("target holds %d keys of slot %d (%v), want %d", n, slot, err, want)
		}
		if !valkey.ContainsSlot(myself(nodes).Slots, slot) {
			t.Errorf("the target does not own slot %d", slot)
		}
	}
	// A refusal names its slot: the target cannot import a slot it owns from itself.
	if err := c.clients[dst].SetSlots(ctx, slots[:1], "IMPORTING", c.ids[dst]); err == nil || !strings.Contains(err.Error(), strconv.Itoa(slots[0])) {
		t.Errorf("SetSlots IMPORTING from itself: %v, want a refusal naming slot %d", err, slots[0])
	}
}

func checkMigrationFlags(t *testing.T, c *testCluster, src, dst int, slots ...int) {
	srcNodes, err := c.clients[src].ClusterNodes(ctxT(t))
	must(t, err)
	dstNodes, err := c.clients[dst].ClusterNodes(ctxT(t))
	must(t, err)
	for _, slot := range slots {
		if me := myself(srcNodes); me.Migrating[slot] != c.ids[dst] {
			t.Errorf("source shows migrating %v, want slot %d to %s", me.Migrating, slot, c.ids[dst])
		}
		if me := myself(dstNodes); me.Importing[slot] != c.ids[src] {
			t.Errorf("target shows importing %v, want slot %d from %s", me.Importing, slot, c.ids[src])
		}
	}
}

func myself(nodes []valkey.ClusterNode) valkey.ClusterNode {
	for _, n := range nodes {
		if n.Myself {
			return n
		}
	}
	return valkey.ClusterNode{}
}

func moveKeys(t *testing.T, c *testCluster, src, dst, slot int) {
	ctx := ctxT(t)
	target := c.servers[dst]
	for range 100 {
		keys, err := c.clients[src].GetKeysInSlot(ctx, slot, 100)
		must(t, err)
		if len(keys) == 0 {
			return
		}
		must(t, c.clients[src].Migrate(ctx, valkey.MigrateArgs{
			Host: target.Host, Port: target.Port, Keys: keys, Timeout: 5 * time.Second,
			Username: valkeytest.AdminUser, Password: target.AdminPassword, Replace: true,
		}))
	}
	t.Fatal("keys still in the source slot after 100 batches")
}

// testAtomicMigration uses CLUSTER MIGRATESLOTS on 9.0+; older servers must
// refuse it with a server error.
func testAtomicMigration(t *testing.T, c *testCluster) {
	ctx := ctxT(t)
	const tag = "atomic"
	slot := valkey.KeySlot("{" + tag + "}")
	src := c.ownerOf(t, slot)
	dst := (src + 1) % primaries
	ranges := []valkey.SlotRange{{Start: slot, End: slot}}
	if !c.version.AtLeast(9, 0) {
		err := c.clients[src].MigrateSlots(ctx, ranges, c.ids[dst])
		if !valkey.IsServerError(err) {
			t.Fatalf("MigrateSlots on %s: %v, want a server error", c.version, err)
		}
		return
	}
	c.writeKeys(t, src, tag, 200)
	must(t, c.clients[src].MigrateSlots(ctx, ranges, c.ids[dst]))
	var last valkey.SlotMigration
	waitFor(t, 15*time.Second, "atomic slot migration to finish", func() (bool, error) {
		jobs, err := c.clients[src].SlotMigrations(ctxT(t))
		if err != nil || len(jobs) == 0 {
			return false, err
		}
		last = jobs[len(jobs)-1]
		return last.Done(), nil
	})
	if last.State != valkey.SlotMigrationSuccess || !reflect.DeepEqual(last.Slots, ranges) {
		t.Fatalf("migration ended as %+v", last)
	}
	if raw, err := valkeytest.RawReply(c.servers[src].Addr(), valkeytest.AdminUser, c.servers[src].AdminPassword, 2, "CLUSTER", "GETSLOTMIGRATIONS"); err == nil {
		capture(t, c.version, "cluster-getslotmigrations-resp2.resp", raw)
	}
	n, err := c.clients[dst].CountKeysInSlot(ctx, slot)
	if err != nil || n != 200 {
		t.Fatalf("target holds %d keys (%v), want 200", n, err)
	}
}

// testForget stops the extra node, waits until the others flag it as
// failing, and forgets it everywhere.
func testForget(t *testing.T, c *testCluster) {
	ctx := ctxT(t)
	gone := c.ids[extraNode]
	c.servers[extraNode].Stop()
	waitFor(t, 15*time.Second, "the stopped node to be flagged failing", func() (bool, error) {
		nodes, err := c.clients[0].ClusterNodes(ctxT(t))
		for _, n := range nodes {
			if n.ID == gone {
				return n.Fail || n.PFail, err
			}
		}
		return false, err
	})
	capture(t, c.version, "cluster-nodes-node-failing.txt", []byte(c.rawNodes(t, 0)))
	for i := range c.clients[:2*primaries] {
		must(t, c.clients[i].Forget(ctx, gone))
	}
	for i := range c.clients[:2*primaries] {
		nodes, err := c.clients[i].ClusterNodes(ctx)
		must(t, err)
		for _, n := range nodes {
			if n.ID == gone {
				t.Fatalf("node %d still lists the forgotten node", i)
			}
		}
	}
	info, err := c.clients[0].ClusterInfo(ctx)
	if err != nil || info["cluster_state"] != "ok" {
		t.Fatalf("cluster_state after forget: %q, %v", info["cluster_state"], err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
