package framework

import (
	"context"
	"sync"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
)

// OwnerWatch polls the cluster's own view of who serves one slot of each shard and counts
// the changes of owner: the failovers clients saw, as the servers report them.
type OwnerWatch struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	owner   map[int]string
	changes map[int]int
}

// WatchOwners starts polling every 100 ms. dial returns a connection to any member for
// this attempt (members come and go during a roll). slots are one slot per shard.
func WatchOwners(dial func(ctx context.Context) (*valkey.Client, error), slots []int) *OwnerWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &OwnerWatch{cancel: cancel, owner: map[int]string{}, changes: map[int]int{}}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for ctx.Err() == nil {
			w.poll(ctx, dial, slots)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *OwnerWatch) poll(ctx context.Context, dial func(ctx context.Context) (*valkey.Client, error), slots []int) {
	c, err := dial(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	nodes, err := c.ClusterNodes(ctx)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, slot := range slots {
		for _, n := range nodes {
			if n.Primary && !n.Fail && valkey.ContainsSlot(n.Slots, slot) {
				if old, ok := w.owner[slot]; ok && old != n.ID {
					w.changes[slot]++
				}
				w.owner[slot] = n.ID
			}
		}
	}
}

// Stop stops polling and returns the owner changes seen per slot.
func (w *OwnerWatch) Stop() map[int]int {
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[int]int{}
	for s, n := range w.changes {
		out[s] = n
	}
	return out
}
