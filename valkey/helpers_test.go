package valkey_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

var captureSeeds = flag.Bool("capture", false, "write real server replies to testdata/real (fuzz seed corpus)")

// realDir holds replies captured from real servers with -capture.
const realDir = "testdata/real"

// capture stores a real reply as a seed for the parsers' fuzz tests. The file
// name starts with the server version.
func capture(t *testing.T, v valkey.Version, name string, data []byte) {
	t.Helper()
	if !*captureSeeds {
		return
	}
	if err := os.MkdirAll(realDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(realDir, v.String()+"-"+name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// captureRaw captures the exact RESP bytes of a reply, in RESP2 and RESP3.
func captureRaw(t *testing.T, s *valkeytest.Server, name string, args ...string) {
	t.Helper()
	if !*captureSeeds {
		return
	}
	for _, proto := range []int{2, 3} {
		b, err := valkeytest.RawReply(s.Addr(), valkeytest.AdminUser, s.AdminPassword, proto, args...)
		if err != nil {
			t.Fatalf("raw %v: %v", args, err)
		}
		capture(t, s.Version, name+"-resp"+string(rune('0'+proto))+".resp", b)
	}
}

// realSeeds returns the captured replies whose names contain part.
func realSeeds(t testing.TB, part string) [][]byte {
	t.Helper()
	entries, err := os.ReadDir(realDir)
	if err != nil {
		t.Fatalf("read %s: %v (run the integration tests with -capture)", realDir, err)
	}
	var out [][]byte
	for _, e := range entries {
		if strings.Contains(e.Name(), part) {
			b, err := os.ReadFile(filepath.Join(realDir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no captured reply matching %q in %s", part, realDir)
	}
	return out
}

// ctxT returns a context bounded by a generous per-step timeout.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it returns true, failing the test after timeout
// with the last error.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
}
