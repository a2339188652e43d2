package valkey_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// TestIsClusterDown: a server that holds every slot alone serves its keys, while a new
// server that has met nobody sees the cluster down; both its own refusal and a MIGRATE
// towards it report CLUSTERDOWN, and IsClusterDown recognises them, and nothing else.
func TestIsClusterDown(t *testing.T) {
	ctx := ctxT(t)
	servers := valkeytest.Start(t, 2, valkeytest.Options{})
	src, dst := servers[0].Dial(t), servers[1].Dial(t)
	if err := src.AddSlotsRange(ctx, []valkey.SlotRange{{Start: 0, End: valkey.SlotCount - 1}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the lone primary to see the cluster ok", func() (bool, error) {
		info, err := src.ClusterInfo(ctx)
		return info["cluster_state"] == "ok", err
	})
	if _, err := src.Do(ctx, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if valkey.IsClusterDown(nil) {
		t.Error("IsClusterDown(nil) = true")
	}
	_, err := dst.Do(ctx, "GET", "k")
	if !valkey.IsClusterDown(err) {
		t.Errorf("GET on a server that met nobody: %v, IsClusterDown = false", err)
	}
	err = src.Migrate(ctx, valkey.MigrateArgs{Host: servers[1].Host, Port: servers[1].Port, Keys: []string{"k"},
		Username: valkeytest.AdminUser, Password: servers[1].AdminPassword})
	if !valkey.IsClusterDown(err) {
		t.Errorf("MIGRATE to a server that sees the cluster down: %v, IsClusterDown = false", err)
	}
	if _, err := src.Do(ctx, "NOSUCHCOMMAND"); err == nil || valkey.IsClusterDown(err) {
		t.Errorf("an unknown command: %v, want an error IsClusterDown does not match", err)
	}
}

// TestBumpEpoch: a node takes a config epoch above every epoch it knows (the two may
// already have settled their equal epochs by themselves, in which case it keeps its own);
// asked again, it keeps it; the other node, asked next, goes above it.
func TestBumpEpoch(t *testing.T) {
	ctx := ctxT(t)
	servers := valkeytest.Start(t, 2, valkeytest.Options{})
	a, b := servers[0].Dial(t), servers[1].Dial(t)
	if err := a.Meet(ctx, servers[1].Host, servers[1].Port, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the two nodes to know each other", func() (bool, error) {
		nodes, err := b.ClusterNodes(ctx)
		return len(nodes) == 2, err
	})
	_, first, err := a.BumpEpoch(ctx)
	if err != nil || first < 1 {
		t.Fatalf("BumpEpoch = %d, %v; want an epoch above 0", first, err)
	}
	bumped, again, err := a.BumpEpoch(ctx)
	if err != nil || bumped || again != first {
		t.Errorf("BumpEpoch again = %v, %d, %v; want STILL at %d", bumped, again, err, first)
	}
	waitFor(t, 10*time.Second, "b to see a's epoch", func() (bool, error) {
		info, err := b.ClusterInfo(ctx)
		if err != nil {
			return false, err
		}
		cur, _ := strconv.ParseInt(info["cluster_current_epoch"], 10, 64)
		return cur >= first, nil
	})
	bumped, other, err := b.BumpEpoch(ctx)
	if err != nil || !bumped || other <= first {
		t.Errorf("b's BumpEpoch = %v, %d, %v; want a new epoch above %d", bumped, other, err, first)
	}
}
