package valkey_test

import (
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
