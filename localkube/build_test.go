package localkube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The cache folders of the modules built from hack/ are named after a version constant:
// each must be the version its module requires, or a bump of one without the other would
// name a cache by a version it does not hold (the build refuses it too, after compiling).
func TestBuiltModuleVersions(t *testing.T) {
	for _, tc := range []struct {
		dir, module, version string
	}{
		{"promop", prometheusOperatorModule, PrometheusOperatorVersion},
		{"certmanager", certManagerModule, CertManagerVersion},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "hack", tc.dir, "go.mod"))
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for line := range strings.Lines(string(b)) {
				f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
				if len(f) >= 2 && f[0] == tc.module {
					got = f[1]
				}
			}
			if got != tc.version {
				t.Errorf("hack/%s/go.mod requires %s %q, the constant says %s", tc.dir, tc.module, got, tc.version)
			}
		})
	}
}

// TestSourceDigest: the digest that decides whether the cert-manager program is built
// again follows its Go files, go.mod and go.sum, and not its tests.
func TestSourceDigest(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module m\n")
	write("go.sum", "")
	write("main.go", "package main\n")
	digest := func() string {
		t.Helper()
		d, err := sourceDigest(dir)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := digest()
	write("main_test.go", "package main\n")
	if got := digest(); got != first {
		t.Errorf("a test file changed the digest")
	}
	for _, f := range []string{"main.go", "webhook.go", "go.sum", "go.mod"} {
		before := digest()
		write(f, "package main\n// changed\n")
		if digest() == before {
			t.Errorf("a change of %s left the digest as it was", f)
		}
	}
}
