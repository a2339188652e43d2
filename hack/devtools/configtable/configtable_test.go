package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// measured is the data folder, and generated the Go table rendered from it.
const (
	measured  = "../../../valkeyconf/measured"
	generated = "../../../valkeyconf/zz_generated.keys.go"
)

// TestDataMatchesServer measures the server on PATH (Valkey 8.0 here) as make
// config-table does, and compares every key's type and default with its data file.
func TestDataMatchesServer(t *testing.T) {
	if testing.Short() {
		t.Skip("measuring a server takes about half a minute")
	}
	bin, err := exec.LookPath("valkey-server")
	if err != nil {
		t.Skip("no valkey-server on PATH (make deps installs Valkey 8.0)")
	}
	servers, err := readServers(measured)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := serverCmd{bin}
	l, err := listKeys(ctx, c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var want *Server
	for i := range servers {
		if servers[i].Version == l.version {
			want = &servers[i]
		}
	}
	if want == nil {
		t.Skipf("valkey-server %s on PATH has no data file in %s", l.version, measured)
	}
	got, err := measure(ctx, c, t.TempDir(), l, dataKeys(measured))
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want.Keys {
		g, ok := got.Keys[name]
		if !ok {
			t.Errorf("%s: in the data of %s, not taken by the server", name, l.version)
			continue
		}
		if a, b := jsonText(t, g), jsonText(t, w); a != b {
			t.Errorf("%s: the server says %s, the data %s", name, a, b)
		}
	}
	for name := range got.Keys {
		if _, ok := want.Keys[name]; !ok {
			t.Errorf("%s: taken by the server %s, not in its data", name, l.version)
		}
	}
}

// TestRenderedTableIsCurrent: the committed Go table is what the data files render to
// (make generate).
func TestRenderedTableIsCurrent(t *testing.T) {
	servers, err := readServers(measured)
	if err != nil {
		t.Fatal(err)
	}
	src, err := render(servers)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(generated)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(src, have) {
		t.Errorf("%s is stale: run make generate", filepath.Base(generated))
	}
}

// TestRenderRefusesBadData: a bound past the Go table's types, or an unknown kind, stops
// the rendering instead of being cut.
func TestRenderRefusesBadData(t *testing.T) {
	for _, k := range []Key{{Kind: "float"}, {Kind: KindInteger, Min: "-9223372036854775809"}, {Kind: KindMemory, Max: "18446744073709551616"}} {
		if _, err := literal(k); err == nil {
			t.Errorf("literal(%+v) renders", k)
		}
	}
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
