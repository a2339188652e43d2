package valkey_test

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// maxBytesPerClient is what one open client may keep in memory. Every controller keeps a
// client per member it talks to, so this is a part of each member's cost to the operator
// (docs/scale.md); rueidis' defaults (0.5 MiB read and write buffers and a ring of 1024
// waiters per connection) cost about 1.3 MiB. Heap and goroutine stacks both count.
const maxBytesPerClient = 40 << 10

func TestClientMemory(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	ctx := ctxT(t)
	const n = 40
	before := inUse()
	clients := make([]*valkey.Client, 0, n)
	for range n {
		c, err := valkey.Dial(ctx, s.Options())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		// Commands at once, so every buffer a reply needs and the goroutines a
		// connection starts once commands overlap are in use.
		errs := make([]error, 4)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = c.Ping(ctx) })
		}
		wg.Wait()
		must(t, errors.Join(errs...))
		clients = append(clients, c)
	}
	perClient := (inUse() - before) / n
	runtime.KeepAlive(clients)
	t.Logf("%d clients: %d KiB each", n, perClient>>10)
	if perClient > maxBytesPerClient {
		t.Errorf("an open client keeps %d KiB in memory, want at most %d KiB", perClient>>10, maxBytesPerClient>>10)
	}
}

// inUse is the live heap after a full collection, and the goroutines' stacks (each
// connection has a reader and a writer goroutine once commands overlap).
func inUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}

// TestBatchLongerThanRing pipelines more commands than a connection has room for in
// flight: the batch waits for room instead of failing or hanging.
func TestBatchLongerThanRing(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	c := s.Dial(t)
	slots := make([]int, 1000)
	for i := range slots {
		slots[i] = i
	}
	keys, err := c.KeysInSlots(ctxT(t), slots, 10)
	if err != nil || len(keys) != 0 {
		t.Fatalf("KeysInSlots of %d empty slots: %v, %v", len(slots), keys, err)
	}
}

// TestIdleClientIsQuiet: a controller keeps a client per member, so what an idle client
// sends is paid per member at rest, on the operator's CPU and the server's.
func TestIdleClientIsQuiet(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	idle := dialLimited(t, s, 0)
	must(t, idle.Ping(ctxT(t)))
	before := pingCalls(t, s)
	time.Sleep(3 * time.Second)
	if after := pingCalls(t, s); after != before {
		t.Errorf("an idle client sent %d PINGs in 3 s", after-before)
	}
}

// TestClientAfterTheServerClosedItsConnection: a server whose `timeout` closed an idle
// client's connection (as one restarted at the same address would) answers the
// client's next command: the client dials again first.
func TestClientAfterTheServerClosedItsConnection(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	ctx := ctxT(t)
	c := dialLimited(t, s, 0)
	must(t, c.ConfigSet(ctx, map[string]string{"timeout": "1"}))
	for range 2 {
		time.Sleep(2500 * time.Millisecond) // the server closes idle clients once a second
		if _, err := c.Info(ctx, "server"); err != nil {
			t.Fatalf("the first command after the server closed the idle connection: %v", err)
		}
	}
}

// pingCalls counts the PINGs the server has run, through a client of its own (closed
// when the test ends: rueidis closes a connection with a PING).
func pingCalls(t *testing.T, s *valkeytest.Server) int {
	t.Helper()
	info, err := dialLimited(t, s, 0).Info(ctxT(t), "commandstats")
	must(t, err)
	calls, _, _ := strings.Cut(strings.TrimPrefix(info.Get("cmdstat_ping"), "calls="), ",")
	n, _ := strconv.Atoi(calls)
	return n
}
