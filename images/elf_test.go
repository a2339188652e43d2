package images

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestELFClosureMatchesLdd computes the closure of a host binary against
// the host root and compares the real files with what ldd reports.
func TestELFClosureMatchesLdd(t *testing.T) {
	bin := "/usr/bin/apt-get" // dynamically linked on every Debian host
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no %s: %v", bin, err)
	}
	paths, err := elfClosure(rootFS("/"), []string{bin}, debianLibDirs)
	if err != nil {
		t.Fatalf("elfClosure: %v", err)
	}
	got := realFiles(t, paths)
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		t.Skipf("ldd: %v", err)
	}
	want := realFiles(t, append(lddPaths(string(out)), bin))
	if !slices.Equal(got, want) {
		t.Errorf("closure files\n got %v\nwant %v", got, want)
	}
	if !slices.Contains(paths, "/lib64") && !slices.Contains(paths, "/usr/lib64/ld-linux-x86-64.so.2") {
		t.Errorf("closure %v lacks the way to the interpreter /lib64/ld-linux-x86-64.so.2", paths)
	}
}

// lddPaths returns the absolute paths in ldd output.
func lddPaths(out string) []string {
	var paths []string
	for _, line := range strings.Split(out, "\n") {
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "/") {
				paths = append(paths, f)
			}
		}
	}
	return paths
}

// realFiles returns the sorted set of regular files the paths resolve to.
func realFiles(t *testing.T, paths []string) []string {
	t.Helper()
	set := map[string]bool{}
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatalf("resolve %s: %v", p, err)
		}
		if fi, err := os.Stat(real); err == nil && fi.Mode().IsRegular() {
			set[real] = true
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestELFClosureStagingTree resolves a binary's libraries inside a staging
// tree only: a library the host has but the tree lacks is an error.
func TestELFClosureStagingTree(t *testing.T) {
	bin := "/usr/bin/apt-get"
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no %s: %v", bin, err)
	}
	root, err := newStaging(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	copyHostFile(t, root, bin, "/usr/bin/apt-get")
	if _, err := elfClosure(root, []string{"/usr/bin/apt-get"}, debianLibDirs); err == nil {
		t.Fatal("elfClosure found libraries that are not in the tree")
	}
	// Give the tree the host's closure, symlinks kept (Debian 12's libc6
	// reaches the loader through an absolute symlink): the closure must now
	// be found inside the tree.
	hostPaths, err := elfClosure(rootFS("/"), []string{bin}, debianLibDirs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range hostPaths {
		copyHostPath(t, root, p)
	}
	ld := "/usr/lib64/ld-linux-x86-64.so.2"
	got, err := elfClosure(root, []string{"/usr/bin/apt-get"}, debianLibDirs)
	if err != nil {
		t.Fatalf("elfClosure in tree: %v", err)
	}
	for _, p := range []string{"/lib64", ld, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/usr/lib/x86_64-linux-gnu/libc.so.6"} {
		if !slices.Contains(got, p) {
			t.Errorf("closure %v lacks %s", got, p)
		}
	}
}

// copyHostPath copies a host file or symlink to the same path in the tree.
func copyHostPath(t *testing.T, root rootFS, p string) {
	t.Helper()
	if slices.Contains(mergedDirs, p) {
		return
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		copyHostFile(t, root, p, usrMerged(p))
		return
	}
	target, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	mustMkdir(t, filepath.Dir(root.host(usrMerged(p))))
	if err := os.Symlink(target, root.host(usrMerged(p))); err != nil {
		t.Fatal(err)
	}
}

// copyHostFile copies a host file into the tree.
func copyHostFile(t *testing.T, root rootFS, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(root.host(dst)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root.host(dst), data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestResolveStaysInRoot checks that symlinks, absolute or with "..",
// resolve inside the tree.
func TestResolveStaysInRoot(t *testing.T) {
	root := rootFS(t.TempDir())
	mustMkdir(t, root.host("/usr/lib"))
	mustWrite(t, root.host("/usr/lib/libx.so.1.2"))
	links := map[string]string{
		"/lib":                 "usr/lib",
		"/usr/lib/libx.so.1":   "libx.so.1.2",
		"/usr/lib/abs.so":      "/lib/libx.so.1",
		"/usr/lib/escape.so":   "../../../../../../usr/lib/libx.so.1.2",
		"/usr/lib/loop1":       "loop2",
		"/usr/lib/loop2":       "loop1",
		"/usr/lib/hostetc.txt": "/etc/hostname",
	}
	for l, target := range links {
		if err := os.Symlink(target, root.host(l)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		path, final string
		links       []string
		wantErr     bool
	}{
		{path: "/usr/lib/libx.so.1.2", final: "/usr/lib/libx.so.1.2"},
		{path: "/lib/libx.so.1", final: "/usr/lib/libx.so.1.2", links: []string{"/lib", "/usr/lib/libx.so.1"}},
		{path: "/usr/lib/abs.so", final: "/usr/lib/libx.so.1.2", links: []string{"/usr/lib/abs.so", "/lib", "/usr/lib/libx.so.1"}},
		{path: "/usr/lib/escape.so", final: "/usr/lib/libx.so.1.2", links: []string{"/usr/lib/escape.so"}},
		{path: "/usr/lib/loop1", wantErr: true},
		{path: "/usr/lib/hostetc.txt", wantErr: true}, // /etc/hostname of the tree, which does not exist
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			links, final, err := root.resolve(tt.path)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("resolve = %s, want an error", final)
				}
				return
			}
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			if final != tt.final || !slices.Equal(links, tt.links) {
				t.Errorf("resolve = %v %s, want %v %s", links, final, tt.links, tt.final)
			}
		})
	}
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p string) {
	t.Helper()
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}
