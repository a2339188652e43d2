package acl

import (
	"strings"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// notNoPerm fails when err is a permission refusal; other errors (a bogus node ID, a
// slot in a wrong state) are fine: the test is about permissions.
func notNoPerm(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("_operator may not %s: %v", what, err)
	}
}

// aclLogUsers returns the users of the server's ACL LOG entries.
func aclLogUsers(t *testing.T, s *valkeytest.Server) []string {
	t.Helper()
	v, err := s.Dial(t).DoValue(ctxT(t), "ACL", "LOG")
	must(t, err)
	var out []string
	entries, _ := v.([]any)
	for _, e := range entries {
		fields, _ := e.([]any)
		for i := 0; i+1 < len(fields); i += 2 {
			if fields[i] == "username" {
				out = append(out, fields[i+1].(string)+":"+fieldOf(fields, "object"))
			}
		}
	}
	return out
}

func fieldOf(fields []any, name string) string {
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i] == name {
			s, _ := fields[i+1].(string)
			return s
		}
	}
	return ""
}

// TestOperatorUserRunsTheLibrary forms a small cluster as _operator only, with a replica
// that authenticates as _replication, moves a slot with MIGRATE and fails over: every
// command of the valkey library runs and none is refused.
func TestOperatorUserRunsTheLibrary(t *testing.T) {
	srv := valkeytest.Start(t, 3, valkeytest.Options{})
	f := NewFile(SystemUsers(testPasswords, srv[0].Version), nil)
	for _, s := range srv {
		loadFile(t, s, f)
		must(t, s.Dial(t).ConfigSet(ctxT(t), map[string]string{
			"primaryuser": v1alpha1.UserReplication, "primaryauth": testPasswords[v1alpha1.UserReplication][0]}))
		if _, err := s.Dial(t).Do(ctxT(t), "ACL", "LOG", "RESET"); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := operatorClient(t, srv[0]), operatorClient(t, srv[1]), operatorClient(t, srv[2])
	ctx := ctxT(t)

	must(t, a.Ping(ctx))
	_, err := a.Info(ctx)
	must(t, err)
	_, err = a.Version(ctx)
	must(t, err)
	_, err = a.ReplicationInfo(ctx)
	must(t, err)
	_, err = a.ConfigGet(ctx, "maxmemory")
	must(t, err)
	must(t, a.ConfigSet(ctx, map[string]string{"maxmemory": "0"}))
	who, err := a.ACLWhoAmI(ctx)
	must(t, err)
	if who != v1alpha1.UserOperator {
		t.Fatalf("whoami %s", who)
	}
	ids := make([]string, 3)
	for i, cl := range []*valkey.Client{a, b, c} {
		ids[i], err = cl.MyID(ctx)
		must(t, err)
	}
	must(t, a.AddSlotsRange(ctx, []valkey.SlotRange{{Start: 0, End: 16383}}))
	for _, s := range srv[1:] {
		must(t, a.Meet(ctx, s.Host, s.Port, 0))
	}
	waitFor(t, 20*time.Second, "every node knows the others", func() bool {
		for _, cl := range []*valkey.Client{a, b, c} {
			nodes, err := cl.ClusterNodes(ctx)
			if err != nil || len(nodes) != 3 {
				return false
			}
		}
		return true
	})
	_, err = a.ClusterInfo(ctx)
	must(t, err)
	_, err = a.ClusterShards(ctx)
	must(t, err)

	// b replicates a, logging in as _replication.
	must(t, b.Replicate(ctx, ids[0]))
	waitFor(t, 30*time.Second, "the replica's link is up", func() bool {
		r, err := b.ReplicationInfo(ctx)
		return err == nil && r.LinkUp
	})

	waitFor(t, 20*time.Second, "the cluster state is ok on every node", func() bool {
		for _, cl := range []*valkey.Client{a, b, c} {
			if info, err := cl.ClusterInfo(ctx); err != nil || info["cluster_state"] != "ok" {
				return false
			}
		}
		return true
	})
	// Move slot 0's keys from a to c with MIGRATE (c logs the move in as _operator).
	admin := srv[0].Dial(t)
	for _, k := range []string{"{06S}a", "{06S}b"} { // slot 0
		if _, err := admin.Do(ctx, "SET", k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	must(t, a.DelSlotsRange(ctx, []valkey.SlotRange{{Start: 1, End: 1}}))
	must(t, a.AddSlotsRange(ctx, []valkey.SlotRange{{Start: 1, End: 1}}))
	must(t, c.SetSlotImporting(ctx, 0, ids[0]))
	must(t, a.SetSlotMigrating(ctx, 0, ids[2]))
	n, err := a.CountKeysInSlot(ctx, 0)
	must(t, err)
	keys, err := a.GetKeysInSlot(ctx, 0, 10)
	must(t, err)
	if n != 2 || len(keys) != 2 {
		t.Fatalf("slot 0 holds %d keys %v", n, keys)
	}
	must(t, a.Migrate(ctx, valkey.MigrateArgs{Host: srv[2].Host, Port: srv[2].Port, Keys: keys,
		Username: v1alpha1.UserOperator, Password: testPasswords[v1alpha1.UserOperator][0]}))
	must(t, c.SetSlotNode(ctx, 0, ids[2]))
	must(t, a.SetSlotNode(ctx, 0, ids[2]))
	if n, err := c.CountKeysInSlot(ctx, 0); err != nil || n != 2 {
		t.Fatalf("slot 0 on the target: %d keys, %v", n, err)
	}
	must(t, a.SetSlotStable(ctx, 1))
	if srv[0].Version.AtLeast(9, 0) {
		atomicSlotMigration(t, a, admin, ids[2])
	}

	// A failover, a forget of an unknown node, and the ACL commands.
	waitFor(t, 30*time.Second, "the replica caught up", func() bool {
		r, err := b.ReplicationInfo(ctx)
		return err == nil && r.LinkUp
	})
	notNoPerm(t, "fail over", b.Failover(ctx, valkey.FailoverDefault))
	notNoPerm(t, "forget", a.Forget(ctx, strings.Repeat("0", 40)))
	must(t, a.ACLSetUser(ctx, "tmp", "off"))
	_, err = a.ACLGetUser(ctx, "tmp")
	must(t, err)
	must(t, a.ACLDelUser(ctx, "tmp"))
	_, err = a.ACLList(ctx)
	must(t, err)
	_, err = a.ACLUsers(ctx)
	must(t, err)
	_, err = a.ACLTransaction(ctx, []valkey.ACLOp{{Name: "tmp", Rules: []string{"off"}}, {Name: "tmp", Delete: true}})
	must(t, err)
	notNoPerm(t, "ACL LOAD", a.ACLLoad(ctx))

	for _, s := range srv {
		for _, entry := range aclLogUsers(t, s) {
			if strings.HasPrefix(entry, "_") {
				t.Errorf("%s: ACL LOG has a refusal of a system user: %s", s.Addr(), entry)
			}
		}
	}
}

// atomicSlotMigration moves slot 2 with CLUSTER MIGRATESLOTS (9.0+): the source logs in
// to the target as _replication and replays the keys there.
func atomicSlotMigration(t *testing.T, src, admin *valkey.Client, target string) {
	t.Helper()
	ctx := ctxT(t)
	for _, cmd := range [][]string{ // every type, in slot 2, one with a TTL
		{"SET", "{0Sb}s", "v", "PX", "100000"}, {"RPUSH", "{0Sb}l", "a", "b"}, {"HSET", "{0Sb}h", "f", "v"},
		{"SADD", "{0Sb}set", "m"}, {"ZADD", "{0Sb}z", "1", "m"}, {"XADD", "{0Sb}x", "*", "f", "v"}, {"PFADD", "{0Sb}hll", "a"},
	} {
		if _, err := admin.Do(ctx, cmd...); err != nil {
			t.Fatal(err)
		}
	}
	must(t, src.MigrateSlots(ctx, []valkey.SlotRange{{Start: 2, End: 2}}, target))
	waitFor(t, 30*time.Second, "the atomic slot migration ends", func() bool {
		jobs, err := src.SlotMigrations(ctx)
		return err == nil && len(jobs) > 0 && jobs[len(jobs)-1].Done()
	})
	jobs, err := src.SlotMigrations(ctx)
	must(t, err)
	if last := jobs[len(jobs)-1]; last.State != valkey.SlotMigrationSuccess {
		t.Fatalf("atomic slot migration: %s %s", last.State, last.Message)
	}
	if n, err := src.CountKeysInSlot(ctx, 2); err != nil || n != 0 {
		t.Fatalf("slot 2 still has %d keys on the source (%v)", n, err)
	}
	notNoPerm(t, "cancel slot migrations", src.CancelSlotMigrations(ctx))
}

// TestSystemUsersAreLimited checks what the system users may not do.
func TestSystemUsersAreLimited(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	loadFile(t, s, NewFile(SystemUsers(testPasswords, s.Version), nil))
	for _, cmd := range [][]string{
		{"FLUSHALL"}, {"DEBUG", "SLEEP", "0"}, {"SHUTDOWN", "NOSAVE"}, {"KEYS", "*"}, {"GET", "k"}, {"SET", "k", "v"},
		{"CONFIG", "REWRITE"}, {"CLUSTER", "RESET"}, {"ACL", "SAVE"}, {"ACL", "LOG"}, {"MODULE", "LIST"},
		{"SAVE"}, {"BGSAVE"}, {"EVAL", "return 1", "0"}, {"CLIENT", "KILL", "ID", "1"}, {"MONITOR"},
		{"REPLICAOF", "NO", "ONE"}, {"CLUSTER", "FLUSHSLOTS"}, {"FUNCTION", "FLUSH"}, {"SUBSCRIBE", "x"},
	} {
		wantDenied(t, s, v1alpha1.UserOperator, cmd...)
	}
	repl, err := dialAs(t, s, v1alpha1.UserReplication, testPasswords[v1alpha1.UserReplication][0])
	must(t, err)
	must(t, repl.Ping(ctxT(t)))
	for _, cmd := range [][]string{{"INFO"}, {"GET", "k"}, {"CONFIG", "GET", "x"}, {"CLUSTER", "NODES"}, {"FLUSHALL"}} {
		wantDenied(t, s, v1alpha1.UserReplication, cmd...)
	}
	exp, err := dialAs(t, s, v1alpha1.UserExporter, testPasswords[v1alpha1.UserExporter][0])
	must(t, err)
	for _, cmd := range [][]string{{"PING"}, {"INFO"}, {"CONFIG", "GET", "maxmemory"}, {"CLUSTER", "INFO"}, {"SLOWLOG", "LEN"}, {"LATENCY", "LATEST"}} {
		wantAllowed(t, "_exporter", exp, cmd...)
	}
	for _, cmd := range [][]string{{"CONFIG", "SET", "maxmemory", "1"}, {"GET", "k"}, {"SET", "k", "v"}, {"FLUSHALL"}, {"CLIENT", "LIST"}, {"ACL", "LIST"}, {"SLOWLOG", "RESET"}} {
		wantDenied(t, s, v1alpha1.UserExporter, cmd...)
	}
	if _, err := valkeytest.RawReply(s.Addr(), "default", "", 2, "PING"); err == nil {
		t.Error("the default user can log in")
	}
}

// wantDenied asks the server (ACL DRYRUN, which runs nothing) whether user may run cmd.
func wantDenied(t *testing.T, s *valkeytest.Server, user string, cmd ...string) {
	t.Helper()
	got, err := s.Dial(t).Do(ctxT(t), append([]string{"ACL", "DRYRUN", user}, cmd...)...)
	must(t, err)
	if !strings.Contains(got, "no permissions") {
		t.Errorf("%s %v: dry run says %q, want no permission", user, cmd, got)
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting until %s", timeout, what)
}
