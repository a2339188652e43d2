package framework

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/rueidis"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// KeysClient is a cluster client of addrs as the test user.
func KeysClient(t testing.TB, addrs []string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, Username: TestUser, Password: "any", DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// WriteKeys writes n keys data:<i> = <i> through a cluster client.
func WriteKeys(ctx context.Context, t testing.TB, addrs []string, n int) {
	t.Helper()
	c := KeysClient(t, addrs)
	defer c.Close()
	cmds := make(rueidis.Commands, 0, n)
	for i := range n {
		cmds = append(cmds, c.B().Set().Key("data:"+strconv.Itoa(i)).Value(strconv.Itoa(i)).Build())
	}
	for i, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatalf("SET data:%d: %v", i, err)
		}
	}
}

// ReadKeys reads back the n keys WriteKeys wrote and fails the test on any missing or
// wrong one.
func ReadKeys(ctx context.Context, t testing.TB, addrs []string, n int) {
	t.Helper()
	c := KeysClient(t, addrs)
	defer c.Close()
	cmds := make(rueidis.Commands, 0, n)
	for i := range n {
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
		t.Fatalf("%d of %d keys not readable", missing, n)
	}
	t.Logf("all %d keys readable", n)
}

// CheckBalanced checks, from the servers' view, that exactly shards primaries serve all
// the slots, each an even share within one slot, and logs the shares.
func (k *Cluster) CheckBalanced(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, shards int) {
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
	var shares []int
	for _, n := range nodes {
		if !n.Primary || len(n.Slots) == 0 {
			continue
		}
		got := valkey.CountSlots(n.Slots)
		owners, total, shares = owners+1, total+got, append(shares, got)
		if got < even || got > even+1 {
			t.Errorf("primary %.8s serves %d slots, want %d or %d", n.ID, got, even, even+1)
		}
	}
	t.Logf("slots per primary: %v", shares)
	if owners != shards || total != valkey.SlotCount {
		t.Errorf("%d primaries serve %d slots, want %d primaries and %d slots", owners, total, shards, valkey.SlotCount)
	}
}
