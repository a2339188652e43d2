package valkeytest

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
)

// TestStartAgainOnLostPort gives the first server a port another listener holds, as a
// process of another test does when it binds the port between freePortPair and the
// server's own bind: Start brings the server up on new ports instead of failing.
func TestStartAgainOnLostPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	picks := 0
	portPair = func(host string) (int, error) {
		picks++
		if picks == 1 {
			return takenPort, nil
		}
		return freePortPair(host)
	}
	t.Cleanup(func() { portPair = freePortPair })

	s := Start(t, 1, Options{})[0]
	if s.Port == takenPort {
		t.Fatalf("the server is on the taken port %d", takenPort)
	}
	if picks != 2 {
		t.Errorf("ports picked %d times, want 2 (the taken one, then a free one)", picks)
	}
	c := s.Dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Do(ctx, "PING"); err != nil {
		t.Fatalf("PING %s: %v", net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), err)
	}
}

// TestCutBus: two servers that know each other over their bus relays lose each other
// once the bus between them is cut (each flags the other as failing after the node
// timeout), and find each other again once it heals.
func TestCutBus(t *testing.T) {
	a := Start(t, 1, Options{Host: "127.0.9.1", BusRelay: true})[0]
	b := Start(t, 1, Options{Host: "127.0.9.2", BusRelay: true})[0]
	ca, cb := a.Dial(t), b.Dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ca.Meet(ctx, b.Host, b.Port, b.Port+10000); err != nil {
		t.Fatal(err)
	}
	// seen reports how c sees the node at host: known and connected, and flagged.
	seen := func(c interface {
		ClusterNodes(context.Context) ([]valkey.ClusterNode, error)
	}, host string) (connected, failing bool) {
		nodes, err := c.ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if n.IP == host && !n.Myself && !n.Handshake {
				return n.Connected && !n.PFail && !n.Fail, n.PFail || n.Fail
			}
		}
		return false, false
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("the two to know each other", func() bool {
		ab, _ := seen(ca, b.Host)
		ba, _ := seen(cb, a.Host)
		return ab && ba
	})
	if err := CutBus(a, b); err != nil {
		t.Fatal(err)
	}
	waitFor("each to flag the other as failing", func() bool {
		_, ab := seen(ca, b.Host)
		_, ba := seen(cb, a.Host)
		return ab && ba
	})
	if err := HealBus(a, b); err != nil {
		t.Fatal(err)
	}
	waitFor("the two to reach each other again", func() bool {
		ab, _ := seen(ca, b.Host)
		ba, _ := seen(cb, a.Host)
		return ab && ba
	})
}
