package valkey_test

import (
	"runtime"
	"testing"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// maxBytesPerClient is what one open client may keep in memory. Every controller keeps a
// client per member it talks to, so this is a part of each member's cost to the operator
// (docs/scale.md); rueidis' defaults (0.5 MiB read and write buffers and a ring of 1024
// waiters per connection) cost about 1.3 MiB.
const maxBytesPerClient = 96 << 10

func TestClientMemory(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	ctx := ctxT(t)
	const n = 40
	before := heapInUse()
	clients := make([]*valkey.Client, 0, n)
	for range n {
		c, err := valkey.Dial(ctx, s.Options())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		// A command each, so every buffer a reply needs is in use.
		must(t, c.Ping(ctx))
		clients = append(clients, c)
	}
	perClient := (heapInUse() - before) / n
	runtime.KeepAlive(clients)
	t.Logf("%d clients: %d KiB each", n, perClient>>10)
	if perClient > maxBytesPerClient {
		t.Errorf("an open client keeps %d KiB in memory, want at most %d KiB", perClient>>10, maxBytesPerClient>>10)
	}
}

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
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
