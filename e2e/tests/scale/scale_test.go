//go:build e2e

package scale

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

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
			framework.WriteKeys(ctx, t, k.MemberAddrs(ctx, t, vc), keys)
			for _, shards := range []int32{5, 2} {
				ch := k.StartChecker(ctx, t, vc)
				start := time.Now()
				k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = shards })
				k.WaitClusterReady(ctx, t, vc, 10*time.Minute)
				t.Logf("%d shards: done %s after the change", shards, time.Since(start).Round(100*time.Millisecond))
				framework.StopChecker(ctx, t, ch, "", true)
				checkBalanced(ctx, t, k, vc, int(shards))
				checkMembers(ctx, t, k, vc, shards, 1)
				framework.ReadKeys(ctx, t, k.MemberAddrs(ctx, t, vc), keys)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// checkBalanced asks the servers: shards primaries each within one slot of an even share,
// every slot served (framework.CheckBalanced), no slot importing or migrating, and every
// member's slot map the same (a client may read it from any of them).
func checkBalanced(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, shards int) {
	t.Helper()
	k.CheckBalanced(ctx, t, vc, shards)
	maps := map[string][]string{} // slot map -> the members that show it
	for _, addr := range k.MemberAddrs(ctx, t, vc) {
		ns, err := k.Admin(ctx, t, vc, addr).ClusterNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var owners []string
		for _, n := range ns {
			if n.Myself && (len(n.Importing) > 0 || len(n.Migrating) > 0) {
				t.Errorf("%s has open slots: importing %v migrating %v", addr, n.Importing, n.Migrating)
			}
			if n.Primary && len(n.Slots) > 0 {
				owners = append(owners, n.ID[:8]+" "+valkey.FormatRanges(valkey.NormalizeRanges(n.Slots)))
			}
		}
		sort.Strings(owners)
		key := strings.Join(owners, "; ")
		maps[key] = append(maps[key], addr)
	}
	if len(maps) > 1 {
		for m, addrs := range maps {
			t.Errorf("%v show the slot map %s", addrs, m)
		}
	}
}
