//go:build e2e

package failures

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// nodeTimeout is cluster-node-timeout as the operator renders it by default: an
// unplanned failover cannot complete sooner, a planned one takes a fraction of it.
const nodeTimeout = 5 * time.Second

// newCluster creates a cluster of shards x replicas, changed by adjust when set, waits
// until it is Ready and logs how long that took. Its primaries stay where failovers put
// them (primaryPlacement policy None): the suite counts the failovers each failure
// causes, and failback's own planned failovers back to a member that returned are the
// placement suite's.
func newCluster(ctx context.Context, t *testing.T, shards, replicas int32, adjust func(*framework.Cluster, *v1alpha1.ValkeyCluster)) (*framework.Cluster, *v1alpha1.ValkeyCluster) {
	t.Helper()
	k := framework.ClusterFrom(ctx, t)
	vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", shards, replicas)
	vc.Spec.PrimaryPlacement = &v1alpha1.PrimaryPlacementSpec{Policy: v1alpha1.PrimaryPlacementNone}
	if adjust != nil {
		adjust(k, vc)
	}
	if err := k.Client.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	d := k.WaitClusterReady(ctx, t, vc, 4*time.Minute)
	t.Logf("%dx%d cluster Ready %s after apply", shards, replicas, d.Round(100*time.Millisecond))
	return k, vc
}

// withImage sets the cluster's image to the Valkey major.minor of the image manifest.
func withImage(t *testing.T, major, minor int) func(*framework.Cluster, *v1alpha1.ValkeyCluster) {
	return func(k *framework.Cluster, vc *v1alpha1.ValkeyCluster) {
		img, err := k.ValkeyImage(major, minor)
		if err != nil {
			t.Fatal(err)
		}
		vc.Spec.Image = img.Ref
	}
}

// getMember reads a member again.
func getMember(ctx context.Context, t *testing.T, k *framework.Cluster, ns, name string) *v1alpha1.ValkeyNode {
	t.Helper()
	vn := &v1alpha1.ValkeyNode{}
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, vn); err != nil {
		t.Fatal(err)
	}
	return vn
}

// shardSlots returns the first slot of each shard, as the cluster's status lists them.
func shardSlots(t *testing.T, vc *v1alpha1.ValkeyCluster) map[int32]int {
	t.Helper()
	out := map[int32]int{}
	for _, s := range vc.Status.Shards {
		if len(s.Slots) == 0 {
			t.Fatalf("shard %d lists no slots: %+v", s.Index, vc.Status.Shards)
		}
		r, err := valkey.ParseSlotRange(s.Slots[0])
		if err != nil {
			t.Fatal(err)
		}
		out[s.Index] = r.Start
	}
	return out
}

// slotRanges returns the slot ranges of shard sh from the cluster's status.
func slotRanges(t *testing.T, vc *v1alpha1.ValkeyCluster, sh int32) []valkey.SlotRange {
	t.Helper()
	for _, s := range vc.Status.Shards {
		if s.Index != sh {
			continue
		}
		var out []valkey.SlotRange
		for _, sr := range s.Slots {
			r, err := valkey.ParseSlotRange(sr)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	t.Fatalf("no shard %d in the status", sh)
	return nil
}

// tagIn returns a hash tag whose keys hash into ranges.
func tagIn(ranges []valkey.SlotRange) string {
	for i := 0; ; i++ {
		tag := "f" + fmt.Sprint(i)
		if valkey.ContainsSlot(ranges, valkey.KeySlot(tag)) {
			return tag
		}
	}
}

// watchOwners counts, from the servers' own view, the owner changes of one slot per
// shard.
func watchOwners(k *framework.Cluster, vc *v1alpha1.ValkeyCluster, slots map[int32]int) *framework.OwnerWatch {
	list := make([]int, 0, len(slots))
	for _, s := range slots {
		list = append(list, s)
	}
	sort.Ints(list)
	return framework.WatchOwners(func(ctx context.Context) (*valkey.Client, error) { return k.AnyAdmin(ctx, vc) }, list)
}

// checkOwnerChanges checks that the slot of each shard in want changed owner exactly
// want[shard] times and every other shard's slot never did.
func checkOwnerChanges(t *testing.T, changes map[int]int, slots map[int32]int, want map[int32]int) {
	t.Helper()
	t.Logf("owner changes seen by the servers, per shard slot: %v", changes)
	for sh, slot := range slots {
		if changes[slot] != want[sh] {
			t.Errorf("shard %d (slot %d) changed owner %d times, want %d", sh, slot, changes[slot], want[sh])
		}
	}
}

// condition returns one condition of the cluster (the zero value when absent).
func condition(vc *v1alpha1.ValkeyCluster, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(vc.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// ensureClusterController brings the cluster-controller back (for cleanups).
func ensureClusterController(t *testing.T, k *framework.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k.ScaleOperator(ctx, t, "cluster-controller", 1)
}

// waitEvent waits for an event of the namespace with the reason and type whose note
// holds every string of contains, and returns it.
func waitEvent(ctx context.Context, t *testing.T, k *framework.Cluster, ns, reason, typ string, timeout time.Duration, contains ...string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	err := framework.Until(ctx, timeout, fmt.Sprintf("a %s event %s naming %v", typ, reason, contains), func(ctx context.Context) (bool, string, error) {
		evs := k.Events(ctx, t, ns, reason)
	next:
		for _, e := range evs {
			if e.Type != typ {
				continue
			}
			for _, s := range contains {
				if !strings.Contains(e.Note, s) {
					continue next
				}
			}
			found = e
			return true, "", nil
		}
		return false, strings.TrimSpace(framework.DescribeEvents(evs)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("event %s %s: %s", found.Type, found.Reason, found.Note)
	return found
}

// conditionLog records every distinct state of some conditions of a cluster, in order,
// with when it was first seen: what a user watching the cluster would have seen.
type conditionLog struct {
	cancel context.CancelFunc
	done   chan struct{}
	start  time.Time
	seen   []seenCondition
}

// seenCondition is a state of a condition, first seen At after the recording started.
type seenCondition struct {
	metav1.Condition
	At time.Duration
}

// recordConditions polls the cluster every 200 ms until Stop.
func recordConditions(k *framework.Cluster, vc *v1alpha1.ValkeyCluster, types ...string) *conditionLog {
	ctx, cancel := context.WithCancel(context.Background())
	l := &conditionLog{cancel: cancel, done: make(chan struct{}), start: time.Now()}
	key := client.ObjectKeyFromObject(vc)
	go func() {
		defer close(l.done)
		last := map[string]string{}
		for ctx.Err() == nil {
			var now v1alpha1.ValkeyCluster
			if err := k.Client.Get(ctx, key, &now); err == nil {
				for _, typ := range types {
					c := meta.FindStatusCondition(now.Status.Conditions, typ)
					if c == nil {
						continue
					}
					if s := string(c.Status) + c.Reason + c.Message; s != last[typ] {
						last[typ] = s
						l.seen = append(l.seen, seenCondition{Condition: *c, At: time.Since(l.start)})
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return l
}

// Stop ends the recording and returns the states seen.
func (l *conditionLog) Stop() []seenCondition {
	l.cancel()
	<-l.done
	return l.seen
}

// find returns the first state seen of type typ with status (and reason, when set).
func find(seen []seenCondition, typ string, status metav1.ConditionStatus, reason string) (seenCondition, bool) {
	for _, c := range seen {
		if c.Type == typ && c.Status == status && (reason == "" || c.Reason == reason) {
			return c, true
		}
	}
	return seenCondition{}, false
}

// logSeen logs the recorded states with when each was first seen.
func logSeen(t *testing.T, seen []seenCondition) {
	t.Helper()
	for _, c := range seen {
		t.Logf("  +%5.1fs %s=%s %s: %s", c.At.Seconds(), c.Type, c.Status, c.Reason, c.Message)
	}
}
