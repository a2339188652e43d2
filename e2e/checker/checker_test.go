package checker

import (
	"context"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// TestCheckerOnARealCluster forms a three-primary cluster of real servers and checks that
// the checker writes to every shard and finds every acknowledged key, and that a key
// deleted behind its back counts as lost.
func TestCheckerOnARealCluster(t *testing.T) {
	servers := valkeytest.Start(t, 3, valkeytest.Options{})
	ctx := context.Background()
	formCluster(t, ctx, servers)
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, s.Addr())
	}
	ch, err := Start(ctx, Options{Addrs: addrs, Username: servers[0].Options().Username, Password: servers[0].Options().Password,
		Interval: time.Millisecond, RecordGapsOver: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	w := ch.writers[0]
	w.mu.Lock()
	victim := ch.key(w, w.acked[0])
	w.mu.Unlock()
	if err := ch.client.Do(ctx, ch.client.B().Del().Key(victim).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	r, err := ch.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	if len(r.LongestGap) != 3 || r.Acked < 30 {
		t.Fatalf("want 3 writers and many writes: %s", r)
	}
	if r.Lost != 1 || r.LostKeys[0] != victim {
		t.Fatalf("want exactly the deleted key lost: %s %v", r, r.LostKeys)
	}
	if lw := r.LostWrites; len(lw) != 1 || lw[0].Key != victim || lw[0].Slot != w.slot || lw[0].AckedAt.IsZero() {
		t.Fatalf("want the deleted key with its acknowledgement time: %+v", lw)
	}
	// One write per millisecond: gaps of a millisecond or more are recorded.
	if len(r.Gaps) == 0 {
		t.Fatal("no gap of 1 ms or more recorded")
	}
	for _, g := range r.Gaps {
		if g.Length < time.Millisecond || g.Start.IsZero() {
			t.Fatalf("gap %+v is below the threshold or has no start", g)
		}
	}
}

func formCluster(t *testing.T, ctx context.Context, servers []*valkeytest.Server) {
	t.Helper()
	ranges := valkey.EvenRanges(len(servers))
	var clients []*valkey.Client
	for _, s := range servers {
		clients = append(clients, s.Dial(t))
	}
	for i, c := range clients {
		if i > 0 {
			host, port := servers[i].Host, servers[i].Port
			if err := clients[0].Meet(ctx, host, port, port+10000); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.AddSlotsRange(ctx, ranges[i]); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, c := range clients {
		for {
			info, err := c.ClusterInfo(ctx)
			if err == nil && info["cluster_state"] == "ok" && info["cluster_known_nodes"] == "3" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster did not form: %v %v", info, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
