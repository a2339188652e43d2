//go:build e2e

package clusterform

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// TestShapes creates clusters of several shapes and checks what a user would: Ready,
// every slot served, replicas linked, data written and read across all shards.
func TestShapes(t *testing.T) {
	shapes := []struct{ shards, replicas int32 }{{3, 1}, {1, 0}, {2, 2}, {5, 1}}
	for _, sh := range shapes {
		name := fmt.Sprintf("%dx%d", sh.shards, sh.replicas)
		f := framework.NewFeature(suite, "cluster "+name).
			Assess("reaches Ready with every slot served and replicas linked", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
				k := framework.ClusterFrom(ctx, t)
				vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", sh.shards, sh.replicas)
				start := time.Now()
				if err := k.Client.Create(ctx, vc); err != nil {
					t.Fatal(err)
				}
				k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
				t.Logf("%s Ready %s after apply", name, time.Since(start).Round(10*time.Millisecond))
				checkTopology(ctx, t, k, vc, sh.shards, sh.replicas)
				return ctx
			}).
			Assess("a cluster client writes and reads 10k keys across all shards", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
				k := framework.ClusterFrom(ctx, t)
				vc := &v1alpha1.ValkeyCluster{}
				if err := k.Client.Get(ctx, key(ctx, "vk"), vc); err != nil {
					t.Fatal(err)
				}
				writeAndRead(ctx, t, k.MemberAddrs(ctx, t, vc), 10000, int(sh.shards))
				return ctx
			}).
			Assess("members of one shard run on different nodes", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
				k := framework.ClusterFrom(ctx, t)
				vc := &v1alpha1.ValkeyCluster{}
				if err := k.Client.Get(ctx, key(ctx, "vk"), vc); err != nil {
					t.Fatal(err)
				}
				checkSpread(ctx, t, k, vc)
				return ctx
			}).Feature()
		testenv.Test(t, f)
	}
}

func key(ctx context.Context, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: framework.Namespace(ctx), Name: name}
}

// checkTopology asks every server for its view and compares it with the spec.
func checkTopology(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, shards, replicas int32) {
	t.Helper()
	members := k.Members(ctx, t, vc)
	if want := int(shards * (1 + replicas)); len(members) != want {
		t.Fatalf("%d members, want %d", len(members), want)
	}
	ids := map[string]bool{}
	for _, m := range members {
		ids[m.Status.NodeID] = true
	}
	for _, m := range members {
		c := k.Admin(ctx, t, vc, m.Status.PodIP+":6379")
		info, err := c.ClusterInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info["cluster_state"] != "ok" || info["cluster_slots_assigned"] != "16384" || info["cluster_known_nodes"] != strconv.Itoa(len(members)) {
			t.Errorf("%s: cluster info %v", m.Name, info)
		}
		nodes, err := c.ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if !ids[n.ID] {
				t.Errorf("%s knows node %s that no member is", m.Name, n.ID)
			}
		}
		repl, err := c.ReplicationInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if repl.Role == valkey.RolePrimary && repl.ConnectedReplicas != int(replicas) {
			t.Errorf("%s: primary with %d replicas, want %d", m.Name, repl.ConnectedReplicas, replicas)
		}
		if repl.Role == valkey.RoleReplica && !repl.LinkUp {
			t.Errorf("%s: replica link down", m.Name)
		}
	}
	if got := len(vc.Status.Shards); got != int(shards) {
		t.Errorf("status lists %d shards, want %d", got, shards)
	}
	for _, s := range vc.Status.Shards {
		if s.Primary == "" || len(s.Replicas) != int(replicas) || len(s.Slots) == 0 {
			t.Errorf("status of shard %d: %+v", s.Index, s)
		}
	}
}

// writeAndRead writes n keys through a cluster client and reads them back, and checks
// every shard got some.
func writeAndRead(ctx context.Context, t *testing.T, addrs []string, n, shards int) {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, Username: framework.TestUser, Password: "any", DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	cmds := make(rueidis.Commands, 0, n)
	for i := 0; i < n; i++ {
		cmds = append(cmds, c.B().Set().Key(fmt.Sprintf("k:%d", i)).Value(strconv.Itoa(i)).Build())
	}
	for i, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatalf("SET k:%d: %v", i, err)
		}
	}
	gets := make(rueidis.Commands, 0, n)
	for i := 0; i < n; i++ {
		gets = append(gets, c.B().Get().Key(fmt.Sprintf("k:%d", i)).Build())
	}
	for i, r := range c.DoMulti(ctx, gets...) {
		if v, err := r.ToString(); err != nil || v != strconv.Itoa(i) {
			t.Fatalf("GET k:%d = %q, %v", i, v, err)
		}
	}
	perShard := map[string]int{}
	for i := 0; i < n; i++ {
		perShard[strconv.Itoa(valkey.KeySlot(fmt.Sprintf("k:%d", i))*shards/valkey.SlotCount)]++
	}
	if len(perShard) != shards {
		t.Errorf("keys landed in %d of %d shards", len(perShard), shards)
	}
	t.Logf("wrote and read %d keys in %s", n, time.Since(start).Round(time.Millisecond))
}

// checkSpread checks that no two members of a shard share a Kubernetes node when there
// are enough nodes (anti-affinity is preferred, not required).
func checkSpread(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) {
	t.Helper()
	nodes, err := k.WorkerNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byPod := map[string]corev1.Pod{}
	for _, p := range k.Pods(ctx, t, vc) {
		byPod[p.Labels[v1alpha1.LabelNode]] = p
	}
	perShard := map[int32]map[string]bool{}
	sizes := map[int32]int{}
	for _, m := range k.Members(ctx, t, vc) {
		p, ok := byPod[m.Name]
		if !ok {
			t.Fatalf("no pod for member %s", m.Name)
		}
		if perShard[m.Spec.ShardIndex] == nil {
			perShard[m.Spec.ShardIndex] = map[string]bool{}
		}
		perShard[m.Spec.ShardIndex][p.Spec.NodeName] = true
		sizes[m.Spec.ShardIndex]++
	}
	for sh, hosts := range perShard {
		if want := min(sizes[sh], len(nodes)); len(hosts) != want {
			t.Errorf("shard %d: %d members on %d nodes, want %d nodes", sh, sizes[sh], len(hosts), want)
		}
	}
}
