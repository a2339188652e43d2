package node

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// divergentNodesConf is the cluster state file of a replica that crash-looped on its
// volume after an in-place roll (e2e, Valkey 8.0.1): the replica 177262… carries another
// shard ID than its primary e62aa9…. The pod IPs are replaced by loopback addresses: the
// server started on it dials them.
const divergentNodesConf = `f7b7d063b56c86981d4d79ad8d00a11851f1286d 127.0.0.2:6379@16379,,tls-port=0,shard-id=646e551e341c141318ac2737f67abd5617148970 master - 0 1796116989773 2 connected 5462-10922
177262926b3c7f6d81e37fa413be8364ef8bd346 127.0.0.3:6379@16379,,tls-port=0,shard-id=fc3df67cf9a84d0a14e092f88dbe8152b6aa4c95 slave e62aa9f37fe240ffc3e269e8df240f564ff84357 0 1796116989974 3 connected
740151d240943785bc55ca4cd090c7c06653bdf3 127.0.0.4:6379@16379,,tls-port=0,shard-id=d8ebaa2ee29528580c5b65fe8a81a0888b783e14 master - 0 1796116990000 4 connected 0-5461
e62aa9f37fe240ffc3e269e8df240f564ff84357 127.0.0.5:6379@16379,,tls-port=0,shard-id=b6db6e164a71994a761b4d4dad78bda2ff0337c3 master - 0 1796116989000 3 connected 10923-16383
ffd06fa86d2c7de558fca8f2229786010cb7c4b2 127.0.0.6:6379@16379,,tls-port=0,shard-id=d8ebaa2ee29528580c5b65fe8a81a0888b783e14 myself,slave 740151d240943785bc55ca4cd090c7c06653bdf3 0 0 4 connected
9a1ef7740a5187170a8cd29904465d1e2dff5a42 127.0.0.7:6379@16379,,tls-port=0,shard-id=646e551e341c141318ac2737f67abd5617148970 slave f7b7d063b56c86981d4d79ad8d00a11851f1286d 0 1796116990780 2 connected
vars currentEpoch 4 lastVoteEpoch 0
`

// TestRepairNodesConf runs the server command with the host's sh and awk (and a stub
// valkey-server):
// only the divergent replica's shard ID changes, a second run changes nothing, and a
// missing file stays missing.
func TestRepairNodesConf(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "nodes.conf")
	if err := os.WriteFile(file, []byte(divergentNodesConf), 0o644); err != nil {
		t.Fatal(err)
	}
	env := stubServer(t, "8.0.1")
	defaults, include := startFiles(t)
	command := func(nodesConf string) []string {
		return shell(serverScript(true), "server", ConfigPath, "-", "-", defaults, include, nodesConf,
			"12", v1alpha1.UserReplication, PrimaryAuthPath)
	}
	started := "valkey-server " + ConfigPath + " --cluster-announce-ip 10.88.1.5\n"
	repair := func() string {
		t.Helper()
		out := strings.TrimPrefix(mustRun(t, env, command(file)), "Valkey 8.0.1\n")
		return strings.TrimSuffix(out, started)
	}
	log := repair()
	if want := "nodes.conf: replica 177262926b3c7f6d81e37fa413be8364ef8bd346 takes the shard ID of its primary e62aa9f37fe240ffc3e269e8df240f564ff84357\n"; log != want {
		t.Errorf("log = %q, want %q", log, want)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(divergentNodesConf, "shard-id=fc3df67cf9a84d0a14e092f88dbe8152b6aa4c95", "shard-id=b6db6e164a71994a761b4d4dad78bda2ff0337c3", 1)
	if string(got) != want {
		t.Errorf("repaired file:\n%s\nwant:\n%s", got, want)
	}
	if log := repair(); log != "" {
		t.Errorf("a second run changed something: %s", log)
	}
	if again, _ := os.ReadFile(file); string(again) != want {
		t.Error("a second run rewrote the file differently")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left files behind: %v", entries)
	}

	empty := filepath.Join(t.TempDir(), "nodes.conf")
	if out := mustRun(t, env, command(empty)); out != "Valkey 8.0.1\n"+started {
		t.Errorf("no file: %s", out)
	}
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Errorf("no file must stay no file: %v", err)
	}
}

// TestRepairedNodesConfStartsValkey starts the host's valkey-server on the divergent
// file: the versions with the bug refuse it, and every version starts on the repaired
// one.
func TestRepairedNodesConfStartsValkey(t *testing.T) {
	if s, err := valkeytest.Launch(t, valkeytest.Options{NodesConf: divergentNodesConf}); err != nil {
		if !strings.Contains(err.Error(), "corrupted cluster config file") {
			t.Fatalf("the divergent file fails for another reason: %v", err)
		}
		t.Log("this valkey-server refuses the divergent file, as the repair expects")
	} else {
		t.Logf("valkey-server %s mends the divergent file itself", s.Version)
	}
	file := filepath.Join(t.TempDir(), "nodes.conf")
	if err := os.WriteFile(file, []byte(divergentNodesConf), 0o644); err != nil {
		t.Fatal(err)
	}
	defaults, include := startFiles(t)
	mustRun(t, stubServer(t, "8.0.1"), shell(serverScript(true), "server", ConfigPath, "-", "-", defaults, include, file))
	repaired, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := valkeytest.Launch(t, valkeytest.Options{NodesConf: string(repaired)}); err != nil {
		t.Errorf("the repaired file does not start valkey-server: %v", err)
	}
}

// TestWaitForTakeover runs wait_for_takeover with the host's sh and valkey-cli against a
// real server: "me" held slots 0-100 with a replica and died; the other member still
// lists it as their owner, so the wait runs to its end; once that member's view has the
// slots elsewhere (here: no longer assigned to it), the wait ends at once.
func TestWaitForTakeover(t *testing.T) {
	servers := valkeytest.Start(t, 2, valkeytest.Options{})
	peer, me := servers[0], servers[1]
	ctx := context.Background()
	pc, mc := peer.Dial(t), me.Dial(t)
	if err := mc.Meet(ctx, peer.Host, peer.Port, peer.Port+10000); err != nil {
		t.Fatal(err)
	}
	if err := mc.AddSlotsRange(ctx, []valkey.SlotRange{{Start: 0, End: 100}}); err != nil {
		t.Fatal(err)
	}
	var myID string
	for i := 0; ; i++ {
		nodes, err := pc.ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if !n.Myself && len(n.Slots) > 0 {
				myID = n.ID
			}
		}
		if myID != "" {
			break
		}
		if i > 100 {
			t.Fatal("the peer never learnt the slots of the other server")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// me's cluster state file as it left it, with a replica of it, then me dies.
	raw, err := mc.Do(ctx, "CLUSTER", "NODES")
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "nodes.conf")
	state := raw + "\n" + strings.Repeat("e", 40) + " 127.0.0.99:6379@16379 slave " + myID + " 0 0 1 connected\nvars currentEpoch 1 lastVoteEpoch 0\n"
	if err := os.WriteFile(conf, []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	auth := filepath.Join(t.TempDir(), "primaryauth.conf")
	if err := os.WriteFile(auth, []byte("primaryauth "+peer.AdminPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lifecycle := filepath.Join(t.TempDir(), "lifecycle")
	if err := os.WriteFile(lifecycle, []byte(peer.AdminPassword), 0o600); err != nil {
		t.Fatal(err)
	}
	me.Stop()
	wait := func(max string) string {
		t.Helper()
		out, _ := runCommand(t, os.Environ(), shell(takeoverSh+`wait_for_takeover "$1" "$2" "$3" "$4" "$5" "$6"; echo "rc=$?"`,
			"wait", conf, max, valkeytest.AdminUser, auth, valkeytest.AdminUser, lifecycle))
		return out
	}
	if out := wait("2"); !strings.Contains(out, "no takeover seen within 2s, and no replica of "+myID+" to take over") || !strings.HasSuffix(out, "rc=1\n") {
		t.Errorf("while the peer lists it as the owner and its replica does not answer: %q", out)
	}
	if err := pc.DelSlotsRange(ctx, []valkey.SlotRange{{Start: 0, End: 100}}); err != nil {
		t.Fatal(err)
	}
	if out := wait("30"); !strings.Contains(out, "no longer lists "+myID) || !strings.HasSuffix(out, "rc=0\n") {
		t.Errorf("once the peer lists it without slots: %q", out)
	}
	// Nothing to wait for: a replica's file.
	if err := os.WriteFile(conf, []byte(divergentNodesConf), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := wait("30"); out != "rc=1\n" {
		t.Errorf("a replica's file: %q", out)
	}
}

// TestWaitForTakeoverAsksReplica: a restarted primary whose replica nobody promoted (here
// a node timeout of a minute holds Valkey's own election back) has that replica take
// over without a vote once its wait is over, and starts once a peer shows it: it is the
// proof that its old identity's process is gone, and its replica must not resync from
// an empty server at its address.
func TestWaitForTakeoverAsksReplica(t *testing.T) {
	servers := valkeytest.Start(t, 3, valkeytest.Options{Config: map[string]string{"cluster-node-timeout": "60000"}})
	peer, me, replica := servers[0], servers[1], servers[2]
	ctx := context.Background()
	pc, mc, rc := peer.Dial(t), me.Dial(t), replica.Dial(t)
	for _, o := range []*valkeytest.Server{peer, replica} {
		if err := mc.Meet(ctx, o.Host, o.Port, o.Port+10000); err != nil {
			t.Fatal(err)
		}
	}
	if err := mc.AddSlotsRange(ctx, []valkey.SlotRange{{Start: 0, End: 100}}); err != nil {
		t.Fatal(err)
	}
	myID, err := mc.MyID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		err := rc.Replicate(ctx, myID)
		if err == nil {
			break
		}
		if i > 100 {
			t.Fatalf("replicate: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := 0; ; i++ {
		r, err := rc.ReplicationInfo(ctx)
		if err == nil && r.LinkUp {
			break
		}
		if i > 200 {
			t.Fatalf("the replica never linked to its primary: %+v %v", r, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The cluster state file me leaves behind once the others know its slots and the
	// peer knows the replica.
	var state []byte
	owner := func(n valkey.ClusterNode) bool { return n.ID == myID && len(n.Slots) > 0 }
	for i := 0; ; i++ {
		nodes, err := pc.ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen, err := rc.ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(nodes, func(n valkey.ClusterNode) bool { return n.Replica && n.PrimaryID == myID }) &&
			slices.ContainsFunc(nodes, owner) && slices.ContainsFunc(seen, owner) {
			if state, err = os.ReadFile(filepath.Join(me.Dir, "nodes.conf")); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(state), " "+myID+" ") {
				break
			}
		}
		if i > 200 {
			t.Fatalf("the peer never learnt of the replica")
		}
		time.Sleep(50 * time.Millisecond)
	}
	conf := filepath.Join(t.TempDir(), "nodes.conf")
	if err := os.WriteFile(conf, state, 0o600); err != nil {
		t.Fatal(err)
	}
	auth := filepath.Join(t.TempDir(), "primaryauth.conf")
	if err := os.WriteFile(auth, []byte("primaryauth "+peer.AdminPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lifecycle := filepath.Join(t.TempDir(), "lifecycle")
	if err := os.WriteFile(lifecycle, []byte(peer.AdminPassword), 0o600); err != nil {
		t.Fatal(err)
	}
	me.Stop()

	out, _ := runCommand(t, os.Environ(), shell(takeoverSh+`wait_for_takeover "$1" "$2" "$3" "$4" "$5" "$6"; echo "rc=$?"`,
		"wait", conf, "2", valkeytest.AdminUser, auth, valkeytest.AdminUser, lifecycle))
	if !strings.Contains(out, "takes over without a vote (CLUSTER FAILOVER TAKEOVER)") || !strings.Contains(out, "no longer lists "+myID) ||
		!strings.HasSuffix(out, "rc=0\n") {
		t.Errorf("wait_for_takeover: %q", out)
	}
	r, err := rc.ReplicationInfo(ctx)
	if err != nil || r.Role != valkey.RolePrimary {
		t.Errorf("the replica is %+v (%v), want the primary", r, err)
	}
}
