package valkey_test

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

func TestVersionAndInfo(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	c := s.Dial(t)
	ctx := ctxT(t)
	v, err := c.Version(ctx)
	if err != nil || v != s.Version {
		t.Fatalf("Version() = %v, %v; binary says %v", v, err, s.Version)
	}
	info, err := c.Info(ctx, "server")
	if err != nil || info.Get("tcp_port") != strconv.Itoa(s.Port) || info.Section("server") == nil {
		t.Fatalf("INFO server: %v, tcp_port %q", err, info.Get("tcp_port"))
	}
	capture(t, s.Version, "info-server.txt", []byte(mustDo(t, c, "INFO", "server")))
	if who, err := c.ACLWhoAmI(ctx); err != nil || who != valkeytest.AdminUser {
		t.Fatalf("ACL WHOAMI = %q, %v", who, err)
	}
	must(t, c.Ping(ctx))
	for _, k := range []string{"", "foo", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "a{b", "ü{x}y", "}{"} {
		got, err := c.Do(ctx, "CLUSTER", "KEYSLOT", k)
		if err != nil || got != strconv.Itoa(valkey.KeySlot(k)) {
			t.Errorf("KeySlot(%q) = %d, server says %s (%v)", k, valkey.KeySlot(k), got, err)
		}
	}
}

func TestConfigSet(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	c := s.Dial(t)
	ctx := ctxT(t)
	must(t, c.ConfigSet(ctx, map[string]string{"maxmemory": "100mb", "maxmemory-policy": "allkeys-lru"}))
	got, err := c.ConfigGet(ctx, "maxmemory*")
	must(t, err)
	if got["maxmemory"] != "104857600" || got["maxmemory-policy"] != "allkeys-lru" {
		t.Fatalf("after CONFIG SET: %v", got)
	}

	// One refused value refuses the whole set, and the server says why.
	err = c.ConfigSet(ctx, map[string]string{"maxmemory": "200mb", "maxmemory-policy": "bogus"})
	msg, ok := valkey.ServerMessage(err)
	if !ok || !strings.Contains(msg, "maxmemory-policy") {
		t.Fatalf("refused CONFIG SET: err %v, server message %q", err, msg)
	}
	got, _ = c.ConfigGet(ctx, "maxmemory")
	if got["maxmemory"] != "104857600" {
		t.Fatalf("maxmemory changed to %s by a refused CONFIG SET", got["maxmemory"])
	}
}

// TestLiveKeys proves that every live key of this server version can be set
// at run time, and that keys kept for later versions are unknown here.
func TestLiveKeys(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	c := s.Dial(t)
	ctx := ctxT(t)
	live := valkeyconf.LiveKeys(s.Version)
	for _, k := range live {
		cur, err := c.ConfigGet(ctx, k)
		must(t, err)
		v, ok := cur[k]
		if !ok {
			t.Errorf("%s: unknown to %s", k, s.Version)
			continue
		}
		if err := c.ConfigSet(ctx, map[string]string{k: v}); err != nil {
			t.Errorf("%s: CONFIG SET to its own value %q: %v", k, v, err)
		}
	}
	for _, k := range valkeyconf.LiveKeys(valkey.Version{Major: 99}) {
		if slices.Contains(live, k) {
			continue
		}
		if cur, err := c.ConfigGet(ctx, k); err != nil || len(cur) != 0 {
			t.Errorf("%s is not live on %s but the server knows it: %v %v", k, s.Version, cur, err)
		}
	}
}

// TestRenderedConfigBoots starts a server from RenderConfig output with
// values that need quoting and reads them back.
func TestRenderedConfigBoots(t *testing.T) {
	weird := "we\"ird \\ va\tl'ue\nrequirepass x"
	s := valkeytest.Start(t, 1, valkeytest.Options{Config: map[string]string{
		"syslog-ident":           weird,
		"save":                   "900 1 300 10",
		"notify-keyspace-events": "KEA",
		"requirepass":            "must-not-render",
	}})[0]
	c := s.Dial(t)
	got, err := c.ConfigGet(ctxT(t), "*")
	must(t, err)
	want := map[string]string{
		"syslog-ident": weird, "save": "900 1 300 10", "notify-keyspace-events": "AKE",
		"requirepass": "", "cluster-node-timeout": "2000", "repl-diskless-sync-delay": "0",
		"cluster-allow-replica-migration": "no", "masteruser": valkeytest.ReplicationUser,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if s.Version.AtLeast(9, 0) && !strings.Contains(got["shutdown-on-sigterm"], "failover") {
		t.Errorf("shutdown-on-sigterm = %q on %s, want failover", got["shutdown-on-sigterm"], s.Version)
	}
	if got["masterauth"] == "" {
		t.Error("masterauth from the included file is not set")
	}
}

func TestACL(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	c := s.Dial(t)
	ctx := ctxT(t)
	const pw = "app-password-123"
	must(t, c.ACLSetUser(ctx, "app", "reset", "on", ">"+pw, "~app:*", "&app:*", "+get", "+set"))
	u, err := c.ACLGetUser(ctx, "app")
	must(t, err)
	if !u.Enabled || u.NoPass || !slices.Equal(u.Passwords, []string{valkey.ACLPasswordHash(pw)}) ||
		!slices.Equal(u.Keys, []string{"~app:*"}) || !slices.Equal(u.Channels, []string{"&app:*"}) ||
		u.Commands != "-@all +get +set" {
		t.Fatalf("ACL GETUSER app = %+v", u)
	}
	if _, err := c.ACLGetUser(ctx, "nobody"); !errors.Is(err, valkey.ErrNoSuchUser) {
		t.Fatalf("ACL GETUSER nobody: %v, want ErrNoSuchUser", err)
	}

	// A refused rule: the server's message names the rule, but never a
	// password or hash sent with it.
	badHash := "#" + strings.Repeat("ab", 31) + "a"
	err = c.ACLSetUser(ctx, "app", ">"+pw, badHash)
	if !valkey.IsServerError(err) || strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), badHash[1:]) {
		t.Fatalf("bad ACL SETUSER error %q leaks a secret or is not a server error", err)
	}
	// A password too short to be taken for a secret by Do is still removed from the
	// modifier the server quotes.
	_, err = c.Do(ctx, "ACL", "SETUSER", "app", "<pw1")
	if !valkey.IsServerError(err) || strings.Contains(err.Error(), "pw1") || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("ACL SETUSER <pw1: error %q leaks the password or is not the server's", err)
	}
	must(t, c.ACLDelUser(ctx, "app", "never-existed"))
	testACLLoad(t, s, c)
}

// testACLLoad reloads the ACL file: a good file adds its user, a bad file
// is refused whole and the server keeps its users.
func testACLLoad(t *testing.T, s *valkeytest.Server, c *valkey.Client) {
	ctx := ctxT(t)
	good := s.ACLFileContent() + "user loaded on nopass ~* +ping\n"
	must(t, os.WriteFile(s.ACLFile, []byte(good), 0o600))
	must(t, c.ACLLoad(ctx))
	users, err := c.ACLList(ctx)
	must(t, err)
	if !slices.ContainsFunc(users, func(l string) bool { return strings.HasPrefix(l, "user loaded ") }) {
		t.Fatalf("ACL LIST after load: %v", users)
	}
	must(t, os.WriteFile(s.ACLFile, []byte(good+"user broken on +nosuchcommand\n"), 0o600))
	if err := c.ACLLoad(ctx); !valkey.IsServerError(err) {
		t.Fatalf("ACL LOAD of a bad file: %v, want a server error", err)
	}
	if _, err := c.ACLGetUser(ctx, "loaded"); err != nil {
		t.Fatalf("users lost after a refused ACL LOAD: %v", err)
	}
}

func TestDial(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	t.Run("wrong password", func(t *testing.T) {
		o := s.Options()
		o.Password = "wrong-password-xyz"
		_, err := valkey.Dial(ctxT(t), o)
		if !valkey.IsServerError(err) || strings.Contains(err.Error(), o.Password) {
			t.Fatalf("dial with a wrong password: %v", err)
		}
	})
	t.Run("user with one command", func(t *testing.T) {
		// The handshake (AUTH, HELLO) needs no permission: a user allowed a
		// single command can connect and run it.
		admin := s.Dial(t)
		must(t, admin.ACLSetUser(ctxT(t), "minimal", "reset", "on", ">minimal-pw", "+cluster|myid"))
		c, err := valkey.Dial(ctxT(t), valkey.Options{Addr: s.Addr(), Username: "minimal", Password: "minimal-pw"})
		must(t, err)
		defer c.Close()
		_, err = c.MyID(ctxT(t))
		must(t, err)
		if err := c.Ping(ctxT(t)); !valkey.IsServerError(err) || !strings.Contains(err.Error(), "NOPERM") {
			t.Fatalf("PING without +ping: %v, want NOPERM", err)
		}
	})
	t.Run("closed port", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		addr := l.Addr().String()
		l.Close()
		checkDialFails(t, addr, time.Second)
	})
	t.Run("peer never answers", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		defer l.Close()
		go acceptAndHold(l)
		checkDialFails(t, l.Addr().String(), 300*time.Millisecond)
	})
	t.Run("context cancelled", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		defer l.Close()
		go acceptAndHold(l)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = valkey.Dial(ctx, valkey.Options{Addr: l.Addr().String(), DialTimeout: 10 * time.Second})
		if err == nil || time.Since(start) > time.Second {
			t.Fatalf("dial with a 100ms context: %v after %s", err, time.Since(start))
		}
	})
}

// checkDialFails dials addr with the given DialTimeout and expects an error
// within that timeout plus a small margin.
func checkDialFails(t *testing.T, addr string, timeout time.Duration) {
	start := time.Now()
	c, err := valkey.Dial(context.Background(), valkey.Options{Addr: addr, DialTimeout: timeout})
	took := time.Since(start)
	if err == nil {
		c.Close()
		t.Fatal("dial succeeded")
	}
	if took > timeout+500*time.Millisecond {
		t.Fatalf("dial took %s with DialTimeout %s", took, timeout)
	}
}

// acceptAndHold accepts connections and never answers them.
func acceptAndHold(l net.Listener) {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		conns = append(conns, c)
	}
}

func TestCommandTimeout(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	o := s.Options()
	o.CommandTimeout = 200 * time.Millisecond
	c, err := valkey.Dial(ctxT(t), o)
	must(t, err)
	defer c.Close()
	start := time.Now()
	// WAIT for a replica that does not exist: the server holds the reply for
	// 2 s, the client gives up after its command timeout.
	_, err = c.Do(context.Background(), "WAIT", "1", "2000")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("command with a 200ms timeout: %v after %s", err, time.Since(start))
	}
	must(t, c.Ping(ctxT(t)))
}

func mustDo(t *testing.T, c *valkey.Client, args ...string) string {
	s, err := c.Do(ctxT(t), args...)
	must(t, err)
	return s
}
