package valkeytest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// TestValkeyDefaults starts the installed valkey-server without any config and checks
// that every live key has the value valkeyconf says Valkey gives it: the value the
// node-controller sets when a live key leaves a spec.
func TestValkeyDefaults(t *testing.T) {
	bin := Binary(t)
	version := BinaryVersion(t, bin)
	port, err := freePortPair("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--dir", dir)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Kill); _ = cmd.Wait() })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var c *valkey.Client
	for c == nil {
		if c, err = valkey.Dial(ctx, valkey.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), DialTimeout: time.Second}); err != nil {
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	defer c.Close()
	got, err := c.ConfigGet(ctx, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range valkeyconf.LiveKeys(valkeyconf.Version(version)) {
		want, _ := valkeyconf.ValkeyDefault(key)
		if have, ok := got[key]; !ok || have != want {
			t.Errorf("%s on %s: the server says %q, valkeyconf %q", key, version, have, want)
		}
	}
}
