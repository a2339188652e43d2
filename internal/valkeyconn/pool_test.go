package valkeyconn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// TestPoolKeepsAFewCredentialsPerAddress: the components of a process share a member's
// client when they ask with the same credentials; asking with others (a rotation's
// fallback password, a rollout's new CA) dials another client without closing the first,
// and beyond maxKeysPerAddr the least recently used leaves the pool. A client that
// leaves the pool (that one, or one dropped after a failure) keeps working for
// retireAfter, as another component may be using it, and is closed then.
func TestPoolKeepsAFewCredentialsPerAddress(t *testing.T) {
	retireAfter = 300 * time.Millisecond
	t.Cleanup(func() { retireAfter = 10 * time.Second })
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := &Pool{}
	t.Cleanup(p.Close)
	cred := func(id string) Credentials {
		return Credentials{Username: valkeytest.AdminUser, Password: s.AdminPassword, id: id}
	}
	get := func(id string) *valkey.Client {
		t.Helper()
		c, err := p.Client(ctx, s.Addr(), cred(id))
		if err != nil {
			t.Fatalf("client for %s: %v", id, err)
		}
		return c
	}
	works := func(c *valkey.Client) error { return c.Ping(ctx) }

	first := get("a")
	if again := get("a"); again != first {
		t.Fatal("the same credentials dialled a second client")
	}
	clients := []*valkey.Client{first}
	for i := 1; i <= maxKeysPerAddr; i++ {
		clients = append(clients, get(fmt.Sprintf("k%d", i)))
		time.Sleep(time.Millisecond) // distinct last uses
	}
	// "a" was used least recently when the fourth credentials came: it left the pool.
	if n := len(p.clients[s.Addr()]); n != maxKeysPerAddr {
		t.Errorf("%d clients kept for the address, want %d", n, maxKeysPerAddr)
	}
	if find(p.clients[s.Addr()], valkeytest.AdminUser+"|a") != nil {
		t.Error("the least recently used client is still in the pool")
	}
	dropped := clients[1]
	p.Drop(dropped)
	if again := get("k1"); again == dropped {
		t.Error("Drop kept the client in the pool")
	}
	for _, c := range []*valkey.Client{first, dropped} {
		if err := works(c); err != nil {
			t.Errorf("a client that just left the pool: %v", err)
		}
	}
	time.Sleep(2 * retireAfter)
	for _, c := range []*valkey.Client{first, dropped} {
		if err := works(c); err == nil {
			t.Error("a client that left the pool still works after retireAfter")
		}
	}
	for i, c := range clients[2:] {
		if err := works(c); err != nil {
			t.Errorf("client %d: %v", i+2, err)
		}
	}
	p.Drop(nil) // a member never reached: nothing to drop
}

// fakeManager is the part of a manager For uses.
type fakeManager struct {
	manager.Manager
	runnables []manager.Runnable
}

func (m *fakeManager) Add(r manager.Runnable) error {
	m.runnables = append(m.runnables, r)
	return nil
}

// TestForSharesOnePoolPerManager: the components a manager runs get one pool, closed
// once when the manager stops; another manager gets its own.
func TestForSharesOnePoolPerManager(t *testing.T) {
	m1, m2 := &fakeManager{}, &fakeManager{}
	a, err := For(m1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := For(m1)
	c, _ := For(m2)
	if a != b {
		t.Error("two components of one manager got different pools")
	}
	if a == c {
		t.Error("two managers share a pool")
	}
	if len(m1.runnables) != 1 {
		t.Errorf("%d shutdown hooks added to the manager, want 1", len(m1.runnables))
	}
}
