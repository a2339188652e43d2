package modsync

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestRepoIsInSync runs the check on this checkout: every sibling at the VERSION, every
// third-party module at one version.
func TestRepoIsInSync(t *testing.T) {
	r, err := Sync("../../..", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Skews {
		t.Error(s)
	}
	if len(r.Stale) > 0 {
		t.Errorf("out of date (make tidy): %v", r.Stale)
	}
}

// TestSyncAlignsTheFixture runs the check and then the sync on a fixture whose module a
// imports b without requiring it and requires example.com/x at v1.2.0 where b requires
// v1.10.0.
func TestSyncAlignsTheFixture(t *testing.T) {
	root := copyFixture(t)

	r, err := Sync(root, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []Skew{{Path: "example.com/x", Uses: []Use{{"v1.10.0", []string{"b"}}, {"v1.2.0", []string{"a"}}}}}
	if !reflect.DeepEqual(r.Skews, want) {
		t.Errorf("skews %+v, want %+v", r.Skews, want)
	}
	if msg := r.Skews[0].String(); msg != "example.com/x at 2 versions: v1.10.0 in b/go.mod; v1.2.0 in a/go.mod" {
		t.Errorf("message %q", msg)
	}
	if !reflect.DeepEqual(r.Stale, []string{"a"}) {
		t.Errorf("stale %v, want [a]", r.Stale)
	}
	if got := read(t, root, "a/go.mod"); strings.Contains(got, "fx/b") {
		t.Errorf("the check wrote a/go.mod:\n%s", got)
	}

	if _, err := Sync(root, false); err != nil {
		t.Fatal(err)
	}
	a := read(t, root, "a/go.mod")
	for _, line := range []string{
		"example.com/x v1.10.0\n",
		"example.com/y v0.1.0\n",
		"example.com/fx/b v0.3.0\n",
		"replace example.com/fx/b => ../b\n",
	} {
		if !strings.Contains(a, line) {
			t.Errorf("a/go.mod lacks %q:\n%s", line, a)
		}
	}
	if b := read(t, root, "b/go.mod"); !strings.Contains(b, "example.com/x v1.10.0 // indirect\n") {
		t.Errorf("b/go.mod changed:\n%s", b)
	}

	r, err = Sync(root, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Skews) > 0 || len(r.Stale) > 0 {
		t.Errorf("after the sync: %+v", r)
	}
}

// TestSyncMovesSiblingsToTheVersion: a new VERSION moves every sibling require.
func TestSyncMovesSiblingsToTheVersion(t *testing.T) {
	root := copyFixture(t)
	if _, err := Sync(root, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "VERSION"), []byte("0.4.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Sync(root, true)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Stale, []string{"a"}) {
		t.Errorf("stale %v, want [a]", r.Stale)
	}
	if _, err := Sync(root, false); err != nil {
		t.Fatal(err)
	}
	if a := read(t, root, "a/go.mod"); !strings.Contains(a, "example.com/fx/b v0.4.0\n") {
		t.Errorf("a/go.mod:\n%s", a)
	}
}

func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		file, want, err string
	}{
		{"0.2.0\n", "v0.2.0", ""},
		{"1.0.0-rc.1", "v1.0.0-rc.1", ""},
		{"0.2", "", `VERSION "0.2" is not a semantic version`},
		{"1.0.0+build", "", "is not a semantic version"},
	} {
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, "VERSION"), []byte(tc.file), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Version(root)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("VERSION %q: %q, %v; want %q, %q", tc.file, got, err, tc.want, tc.err)
		}
	}
}

// copyFixture copies testdata/fixture into a temporary folder.
func copyFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("testdata/fixture")); err != nil {
		t.Fatal(err)
	}
	return root
}

func read(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
