//go:build e2e

package scale

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

const keys = 50000

func TestScaleOn80(t *testing.T) { testScale(t, 8, 0) }
func TestScaleOn91(t *testing.T) { testScale(t, 9, 1) }

func testScale(t *testing.T, major, minor int) {
	name := fmt.Sprintf("3 -> 5 -> 2 shards on %d.%d", major, minor)
	f := framework.NewFeature(suite, name).
		Assess("every key stays readable, shards balanced, no open slot", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			img, err := k.ValkeyImage(major, minor)
			if err != nil {
				t.Fatal(err)
			}
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			vc.Spec.Image = img.Ref
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			write(ctx, t, k.MemberAddrs(ctx, t, vc))
			for _, shards := range []int32{5, 2} {
				ch := k.StartChecker(ctx, t, vc)
				start := time.Now()
				k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = shards })
				k.WaitClusterReady(ctx, t, vc, 10*time.Minute)
				t.Logf("%d shards: done %s after the change", shards, time.Since(start).Round(100*time.Millisecond))
				checkNoneLost(ctx, t, ch)
				checkBalanced(ctx, t, k, vc, int(shards))
				checkMembers(ctx, t, k, vc, shards, 1)
				read(ctx, t, k.MemberAddrs(ctx, t, vc))
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func client(t *testing.T, addrs []string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, Username: framework.TestUser, Password: "any", DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func write(ctx context.Context, t *testing.T, addrs []string) {
	t.Helper()
	c := client(t, addrs)
	defer c.Close()
	cmds := make(rueidis.Commands, 0, keys)
	for i := 0; i < keys; i++ {
		cmds = append(cmds, c.B().Set().Key("data:"+strconv.Itoa(i)).Value(strconv.Itoa(i)).Build())
	}
	for i, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatalf("SET data:%d: %v", i, err)
		}
	}
}

func read(ctx context.Context, t *testing.T, addrs []string) {
	t.Helper()
	c := client(t, addrs)
	defer c.Close()
	cmds := make(rueidis.Commands, 0, keys)
	for i := 0; i < keys; i++ {
		cmds = append(cmds, c.B().Get().Key("data:"+strconv.Itoa(i)).Build())
	}
	missing := 0
	for i, r := range c.DoMulti(ctx, cmds...) {
		if v, err := r.ToString(); err != nil || v != strconv.Itoa(i) {
			if missing < 5 {
				t.Errorf("data:%d = %q, %v", i, v, err)
			}
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d keys not readable", missing, keys)
	}
	t.Logf("all %d keys readable", keys)
}

// checkBalanced asks the servers: shards primaries each within one slot of an even share,
// every slot served, no slot importing or migrating.
func checkBalanced(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, shards int) {
	t.Helper()
	c, err := k.AnyAdmin(ctx, vc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nodes, err := c.ClusterNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	even := valkey.SlotCount / shards
	var owners, total int
	for _, n := range nodes {
		if !n.Primary || len(n.Slots) == 0 {
			continue
		}
		owners++
		got := valkey.CountSlots(n.Slots)
		total += got
		if got < even || got > even+1 {
			t.Errorf("primary %s serves %d slots, want %d or %d", n.ID[:8], got, even, even+1)
		}
	}
	if owners != shards || total != valkey.SlotCount {
		t.Errorf("%d primaries serve %d slots, want %d primaries and %d slots", owners, total, shards, valkey.SlotCount)
	}
	for _, addr := range k.MemberAddrs(ctx, t, vc) {
		ns, err := k.Admin(ctx, t, vc, addr).ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range ns {
			if n.Myself && (len(n.Importing) > 0 || len(n.Migrating) > 0) {
				t.Errorf("%s has open slots: importing %v migrating %v", addr, n.Importing, n.Migrating)
			}
		}
	}
}
