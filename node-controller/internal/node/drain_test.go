package node

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// TestDrainClients runs the pre-stop hook's drain_clients (scripts/drain.sh) with the
// host's sh and valkey-cli against a real valkey-server: it waits while an application
// connection keeps sending data commands, not for idle connections, health checks or
// system users, and gives up after its time.
func TestDrainClients(t *testing.T) {
	srv := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	if err := srv.Dial(t).AddSlotsRange(context.Background(), []valkey.SlotRange{{Start: 0, End: 16383}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		info, err := valkeytest.RawReply(srv.Addr(), valkeytest.AdminUser, srv.AdminPassword, 2, "CLUSTER", "INFO")
		if err == nil && strings.Contains(string(info), "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's cluster state is not ok: %s %v", info, err)
		}
	}
	drain := func(max int) (time.Duration, string) {
		t.Helper()
		script := `user=$4; cli() { valkey-cli --no-auth-warning --user "$user" "$@"; }` + "\n" + drainSh +
			`drain_clients "$1" "$2" "$3"; echo "rc=$?"`
		cmd := shell(script, "drain", strconv.Itoa(srv.Port), strconv.Itoa(max), strings.Join(valkey.ControlCommands, " "), valkeytest.AdminUser)
		start := time.Now()
		out, _ := runCommand(t, append(os.Environ(), "REDISCLI_AUTH="+srv.AdminPassword), cmd)
		return time.Since(start), strings.TrimSpace(out)
	}

	idle := rawConn(t, srv)
	idle.do(t, "SET", "k", "v")
	pinger := rawConn(t, srv)
	stopPing := pinger.every(t, 100*time.Millisecond, "PING")
	time.Sleep(2 * time.Second) // the SET above is now more than a second ago
	if d, out := drain(5); out != "rc=0" || d > 1500*time.Millisecond {
		t.Errorf("with an idle connection and a health check only: %q after %s, want rc=0 at once", out, d.Round(time.Millisecond))
	}

	writer := rawConn(t, srv)
	writer.do(t, "SET", "w", "0")
	stopWrites := writer.every(t, 100*time.Millisecond, "SET", "w", "1")
	time.AfterFunc(2*time.Second, stopWrites)
	if d, out := drain(10); out != "rc=0" || d < 2*time.Second || d > 6*time.Second {
		t.Errorf("with a writer that stops after 2 s: %q after %s, want rc=0 one or two seconds after it stopped", out, d.Round(time.Millisecond))
	}

	writer.do(t, "SET", "w", "1")
	stopWrites = writer.every(t, 100*time.Millisecond, "SET", "w", "2")
	defer stopWrites()
	if d, out := drain(2); out != "rc=1" || d < time.Second {
		t.Errorf("with a writer that goes on: %q after %s, want rc=1 after 2 s (of whole-second clocks)", out, d.Round(time.Millisecond))
	}
	stopPing()
}

// respConn is an application's connection: raw RESP as the test server's admin, with no
// library sending anything of its own.
type respConn struct{ c *valkeytest.RawConn }

func rawConn(t *testing.T, s *valkeytest.Server) *respConn {
	t.Helper()
	c, err := valkeytest.DialRaw(s.Addr(), valkeytest.AdminUser, s.AdminPassword, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &respConn{c: c}
}

// do sends one command; an error reply fails the test.
func (rc *respConn) do(t *testing.T, args ...string) {
	if reply, err := rc.c.Do(args...); err != nil {
		t.Errorf("%s: %q %v", args[0], reply, err)
	}
}

// every sends the command every interval until the returned stop is called.
func (rc *respConn) every(t *testing.T, interval time.Duration, args ...string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				rc.do(t, args...)
			}
		}
	}()
	var stopped bool
	return func() {
		if !stopped {
			stopped = true
			close(done)
			<-finished
		}
	}
}
