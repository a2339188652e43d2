package framework

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
)

// OwnerWatch polls the cluster's own view of who serves one slot of each shard and counts
// the changes of owner: the failovers clients saw, as the servers report them.
//
// A change counts only when the new owner's config epoch is higher, the rule Valkey
// itself resolves claims with. A server that just restarted from its nodes.conf (an
// in-place roll) lists itself with its old slots and epoch until gossip corrects it; it
// refuses writes meanwhile (cluster_state is not ok for its first 2 s), so that stale
// view is no failover and is ignored.
type OwnerWatch struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	owner   map[int]slotOwner
	changes map[int]int
	// seen says, for each change counted, whose view showed it: read by Seen when a
	// count is not the one a test expects.
	seen []string
}

// slotOwner is a primary and the config epoch it claimed a slot with.
type slotOwner struct {
	id    string
	epoch uint64
}

// WatchOwners starts polling every 100 ms. dial returns a connection to any member for
// this attempt (members come and go during a roll). slots are one slot per shard.
func WatchOwners(dial func(ctx context.Context) (*valkey.Client, error), slots []int) *OwnerWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &OwnerWatch{cancel: cancel, owner: map[int]slotOwner{}, changes: map[int]int{}}
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
			if !n.Primary || n.Fail || !valkey.ContainsSlot(n.Slots, slot) {
				continue
			}
			old, known := w.owner[slot]
			switch {
			case !known || n.ID == old.id:
				w.owner[slot] = slotOwner{id: n.ID, epoch: max(old.epoch, n.ConfigEpoch)}
			case n.ConfigEpoch > old.epoch:
				w.changes[slot]++
				w.owner[slot] = slotOwner{id: n.ID, epoch: n.ConfigEpoch}
				w.seen = append(w.seen, fmt.Sprintf("%s slot %d: %.8s (epoch %d) -> %.8s (epoch %d), in the view of %.8s",
					time.Now().Format("15:04:05.000"), slot, old.id, old.epoch, n.ID, n.ConfigEpoch, viewer(nodes)))
			}
		}
	}
}

// viewer is the node ID of the member whose CLUSTER NODES nodes is.
func viewer(nodes []valkey.ClusterNode) string {
	for _, n := range nodes {
		if n.Myself {
			return n.ID
		}
	}
	return "?"
}

// Seen lists the changes counted, each with the member whose view showed it.
func (w *OwnerWatch) Seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.seen)
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
