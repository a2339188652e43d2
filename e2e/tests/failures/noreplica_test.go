//go:build e2e

package failures

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestShardWithoutReplicaLost3x0(t *testing.T) { testShardWithoutReplicaLost(t, 3) }
func TestShardWithoutReplicaLost1x0(t *testing.T) {
	testShardWithoutReplicaLost(t, 1)
}

// testShardWithoutReplicaLost kills the pod of a shard that has no replica, without
// persistence: its data is gone with the pod. The StatefulSet brings back an empty
// server; while the slots have no server the cluster is Degraded, then the operator
// gives the lost slots, empty, to the new server with a Warning event SlotsReassigned
// naming them. A key written there before is gone; the other shards keep theirs.
func testShardWithoutReplicaLost(t *testing.T, shards int32) {
	f := framework.NewFeature(suite, fmt.Sprintf("shard without replica lost (%dx0)", shards)).
		Assess("Degraded, then the slots served again, empty, with a Warning event", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k, vc := newCluster(ctx, t, shards, 0, nil)
			lost := slotRanges(t, vc, 0)
			keys := map[int32]string{}
			for sh := range shards {
				keys[sh] = "{" + tagIn(slotRanges(t, vc, sh)) + "}:before"
			}
			setKeys(ctx, t, k.MemberAddrs(ctx, t, vc), keys)
			p := k.Member(ctx, t, vc, 0, v1alpha1.RolePrimary)
			pod := k.PodOf(ctx, t, vc, p.Name)
			start := time.Now()
			rec := recordConditions(k, vc, v1alpha1.ConditionReady, v1alpha1.ConditionDegraded, v1alpha1.ConditionProgressing)
			if err := k.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
			took := k.WaitNotReadyThenReady(ctx, t, vc, start, 3*time.Minute)
			t.Logf("Ready %s after the pod was killed", took.Round(100*time.Millisecond))
			time.Sleep(5 * time.Second) // what comes after Ready
			k.WaitClusterReady(ctx, t, vc, 2*time.Minute)
			seen := rec.Stop()
			t.Logf("conditions from the kill on:")
			logSeen(t, seen)
			if c, ok := find(seen, v1alpha1.ConditionDegraded, metav1.ConditionTrue, ""); !ok {
				t.Errorf("Degraded was never True while shard 0 had no server")
			} else if !strings.Contains(c.Message, "shard 0") && !strings.Contains(c.Message, valkey.FormatRanges(lost)) {
				t.Errorf("Degraded names neither shard 0 nor its slots %s: %s", valkey.FormatRanges(lost), c.Message)
			}
			evs := k.Events(ctx, t, vc.Namespace, "SlotsReassigned")
			if len(evs) != 1 || evs[0].Type != corev1.EventTypeWarning || !strings.Contains(evs[0].Note, valkey.FormatRanges(lost)) || !strings.Contains(evs[0].Note, p.Name) {
				t.Errorf("want one Warning event SlotsReassigned naming slots %s and member %s, got:\n%s%s", valkey.FormatRanges(lost), p.Name,
					framework.DescribeEvents(evs), framework.DescribeEvents(k.Events(ctx, t, vc.Namespace, "SlotsAssigned")))
			} else {
				t.Logf("event %s %s: %s", evs[0].Type, evs[0].Reason, evs[0].Note)
			}
			now := getMember(ctx, t, k, vc.Namespace, p.Name)
			if now.Status.NodeID == p.Status.NodeID {
				t.Errorf("member %s kept its node ID %.8s: want a new, empty node", p.Name, p.Status.NodeID)
			}
			if got := valkey.FormatRanges(slotRanges(t, vc, 0)); got != valkey.FormatRanges(lost) {
				t.Errorf("shard 0 serves %s, want %s", got, valkey.FormatRanges(lost))
			}
			if shards > 1 {
				k.CheckBalanced(ctx, t, vc, int(shards))
			}
			if evs := k.Events(ctx, t, vc.Namespace, "SlotsMoved"); len(evs) > 0 {
				t.Logf("note: slots moved between shards after the loss (not needed: the lost slots went back to their shard):\n%s", framework.DescribeEvents(evs))
			}
			got := getKeys(ctx, t, k.MemberAddrs(ctx, t, vc), keys)
			for sh, key := range keys {
				switch {
				case sh == 0 && got[key]:
					t.Errorf("key %s of the lost shard is still there: the data cannot have survived the pod", key)
				case sh != 0 && !got[key]:
					t.Errorf("key %s of shard %d is gone: only shard 0 lost its data", key, sh)
				}
			}
			k.ForgottenEverywhere(ctx, t, vc, p.Status.NodeID)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestShardWithoutReplicaPersistence kills the pod of a 1x0 cluster with persistence
// (append-only file): the StatefulSet brings the pod back on the same volume, the server
// comes back with its node ID and its data, and no slot is reassigned.
func TestShardWithoutReplicaPersistence(t *testing.T) {
	f := framework.NewFeature(suite, "shard without replica lost, with persistence").
		Assess("the same volume brings the data back", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k, vc := newCluster(ctx, t, 1, 0, func(_ *framework.Cluster, vc *v1alpha1.ValkeyCluster) {
				vc.Spec.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("256Mi"), ReclaimPolicy: v1alpha1.ReclaimDelete}
				vc.Spec.Config = v1alpha1.Config{"appendonly": "yes"}
			})
			keys := map[int32]string{0: "{p}:before"}
			setKeys(ctx, t, k.MemberAddrs(ctx, t, vc), keys)
			time.Sleep(1500 * time.Millisecond) // appendfsync everysec
			p := k.Member(ctx, t, vc, 0, v1alpha1.RolePrimary)
			pod := k.PodOf(ctx, t, vc, p.Name)
			start := time.Now()
			if err := k.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
			k.WaitNotReadyThenReady(ctx, t, vc, start, 3*time.Minute)
			t.Logf("Ready %s after the pod was killed", time.Since(start).Round(100*time.Millisecond))
			if now := getMember(ctx, t, k, vc.Namespace, p.Name); now.Status.NodeID != p.Status.NodeID {
				t.Errorf("member %s: node %.8s -> %.8s, want the same node from its volume", p.Name, p.Status.NodeID, now.Status.NodeID)
			}
			if got := getKeys(ctx, t, k.MemberAddrs(ctx, t, vc), keys); !got[keys[0]] {
				t.Errorf("key %s is gone although the volume came back", keys[0])
			}
			if evs := k.Events(ctx, t, vc.Namespace, "SlotsReassigned"); len(evs) > 0 {
				t.Errorf("slots were reassigned although the data came back:\n%s", framework.DescribeEvents(evs))
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// setKeys writes each key (value "v") through a cluster client.
func setKeys(ctx context.Context, t *testing.T, addrs []string, keys map[int32]string) {
	t.Helper()
	c := framework.KeysClient(t, addrs)
	defer c.Close()
	for _, key := range keys {
		if err := c.Do(ctx, c.B().Set().Key(key).Value("v").Build()).Error(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
	}
}

// getKeys reports which keys exist.
func getKeys(ctx context.Context, t *testing.T, addrs []string, keys map[int32]string) map[string]bool {
	t.Helper()
	c := framework.KeysClient(t, addrs)
	defer c.Close()
	out := map[string]bool{}
	for _, key := range keys {
		_, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
		switch {
		case err == nil:
			out[key] = true
		case rueidis.IsRedisNil(err):
			out[key] = false
		default:
			t.Fatalf("GET %s: %v", key, err)
		}
	}
	return out
}
