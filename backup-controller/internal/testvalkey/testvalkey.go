// Package testvalkey sets up real Valkey servers for the backup-controller's tests: a
// one-shard cluster with replicas, users of the backup and restore Jobs, and keys
// written in pipelined batches.
package testvalkey

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// Users created by Shard on every server, with the permissions the operator gives them.
const (
	BackupUser     = "_backup"
	BackupPassword = "backup-secret"
)

// BackupRules are the _backup user's permissions (as the acl-controller renders them).
var BackupRules = []string{"+psync", "+replconf", "+sync", "+ping", "+info"}

// Shard starts a primary owning every slot and n replicas of it, with the _backup user;
// it returns the servers (primary first) once every replica's link is up.
func Shard(t testing.TB, replicas int, o valkeytest.Options) []*valkeytest.Server {
	t.Helper()
	ctx := Ctx(t)
	servers := valkeytest.Start(t, 1+replicas, o)
	clients := make([]*valkey.Client, len(servers))
	for i, s := range servers {
		clients[i] = s.Dial(t)
		rules := append([]string{"reset", "on", ">" + BackupPassword, "resetchannels", "-@all"}, BackupRules...)
		if err := clients[i].ACLSetUser(ctx, BackupUser, rules...); err != nil {
			t.Fatalf("create %s: %v", BackupUser, err)
		}
	}
	if err := clients[0].AddSlotsRange(ctx, []valkey.SlotRange{{Start: 0, End: valkey.SlotCount - 1}}); err != nil {
		t.Fatal(err)
	}
	primaryID, err := clients[0].MyID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers[1:] {
		if err := clients[0].Meet(ctx, s.Host, s.Port, 0); err != nil {
			t.Fatal(err)
		}
	}
	Wait(t, 15*time.Second, "replicas to know the primary", func() (bool, error) {
		for _, c := range clients[1:] {
			if err := c.Replicate(ctx, primaryID); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	Wait(t, 20*time.Second, "replica links up", func() (bool, error) {
		for _, c := range clients[1:] {
			r, err := c.ReplicationInfo(ctx)
			if err != nil || !r.LinkUp {
				return false, err
			}
		}
		return true, nil
	})
	Wait(t, 20*time.Second, "the cluster state ok", func() (bool, error) {
		for _, c := range clients {
			info, err := c.ClusterInfo(ctx)
			if err != nil || info["cluster_state"] != "ok" {
				return false, err
			}
		}
		return true, nil
	})
	return servers
}

// Ctx is a context bounded by 60 s and the test.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Wait polls cond every 50 ms until it holds, failing the test after timeout.
func Wait(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
}

// Single is a pipelining client of one server as the admin user.
func Single(t testing.TB, s *valkeytest.Server) rueidis.Client {
	t.Helper()
	o := rueidis.ClientOption{
		InitAddress: []string{s.Addr()}, Username: valkeytest.AdminUser, Password: s.AdminPassword,
		ForceSingleClient: true, DisableCache: true,
	}
	if s.CA != nil {
		o.TLSConfig = s.CA.ClientTLS()
	}
	c, err := rueidis.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Populate writes n keys key:<i> of size bytes; every third has a TTL of an hour.
func Populate(t testing.TB, c rueidis.Client, prefix string, n, size int) {
	t.Helper()
	ctx := Ctx(t)
	val := make([]byte, size)
	for i := range val {
		val[i] = 'a' + byte(i%26)
	}
	const batch = 1000
	for start := 0; start < n; start += batch {
		cmds := make(rueidis.Commands, 0, batch)
		for i := start; i < min(n, start+batch); i++ {
			k := prefix + strconv.Itoa(i)
			if i%3 == 0 {
				cmds = append(cmds, c.B().Set().Key(k).Value(rueidis.BinaryString(val)).Px(time.Hour).Build())
			} else {
				cmds = append(cmds, c.B().Set().Key(k).Value(rueidis.BinaryString(val)).Build())
			}
		}
		for _, r := range c.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				t.Fatalf("populate: %v", err)
			}
		}
	}
}

// DBSize returns the number of keys of a server.
func DBSize(t testing.TB, c rueidis.Client) int64 {
	t.Helper()
	n, err := c.Do(Ctx(t), c.B().Dbsize().Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Addr formats host and port.
func Addr(host string, port int) string { return fmt.Sprintf("%s:%d", host, port) }

// RestoreUser is the user of a restore Job, with the acl-controller's rules.
const (
	RestoreUser     = "_restore"
	RestorePassword = "restore-secret"
)

// RestoreRules are the _restore user's permissions.
var RestoreRules = []string{"+restore", "+asking", "+ping", "+cluster|slots", "+cluster|shards", "~*"}

// Primaries starts n primaries sharing the slots evenly (no replica), with the
// _restore user, once the cluster state is ok everywhere.
func Primaries(t testing.TB, n int, o valkeytest.Options) []*valkeytest.Server {
	t.Helper()
	ctx := Ctx(t)
	servers := valkeytest.Start(t, n, o)
	clients := make([]*valkey.Client, n)
	for i, s := range servers {
		clients[i] = s.Dial(t)
		rules := append([]string{"reset", "on", ">" + RestorePassword, "resetchannels", "-@all"}, RestoreRules...)
		if err := clients[i].ACLSetUser(ctx, RestoreUser, rules...); err != nil {
			t.Fatalf("create %s: %v", RestoreUser, err)
		}
	}
	for _, s := range servers[1:] {
		if err := clients[0].Meet(ctx, s.Host, s.Port, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i, ranges := range valkey.EvenRanges(n) {
		if err := clients[i].AddSlotsRange(ctx, ranges); err != nil {
			t.Fatal(err)
		}
	}
	Wait(t, 30*time.Second, "the cluster state ok", func() (bool, error) {
		for _, c := range clients {
			info, err := c.ClusterInfo(ctx)
			if err != nil || info["cluster_state"] != "ok" || info["cluster_known_nodes"] != strconv.Itoa(n) {
				return false, err
			}
		}
		return true, nil
	})
	return servers
}

// ClusterClient is a cluster-aware admin client of servers.
func ClusterClient(t testing.TB, servers []*valkeytest.Server) rueidis.Client {
	t.Helper()
	o := rueidis.ClientOption{InitAddress: []string{servers[0].Addr()}, Username: valkeytest.AdminUser,
		Password: servers[0].AdminPassword, DisableCache: true}
	if servers[0].CA != nil {
		o.TLSConfig = servers[0].CA.ClientTLS()
	}
	c, err := rueidis.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Plain starts a non-cluster valkey-server without users on 127.0.0.1 over dir (which
// may hold a dump.rdb to load), as a restore Job's private server runs, and returns its
// address and a stop function; it does not wait for the load.
func Plain(t testing.TB, dir string) (string, func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(valkeytest.Binary(t), "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "valkey.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) }
	t.Cleanup(stop)
	return Addr("127.0.0.1", port), stop
}
