package valkeytest

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"
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
