// Package testvalkey sets up real Valkey servers for the backup-controller's tests: a
// one-shard cluster with replicas, users of the backup and restore Jobs, and keys
// written in pipelined batches.
package testvalkey

import (
	"context"
	"fmt"
	"strconv"
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
