package images

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyringFallback gives sid a keyring that cannot verify it (bullseye's
// key only) and checks that the resolution fetches debian-archive-keyring
// through the verified bookworm lists and verifies sid with it
// (IMAGES_E2E=1: needs the Debian mirror).
func TestKeyringFallback(t *testing.T) {
	if os.Getenv("IMAGES_E2E") != "1" {
		t.Skip("set IMAGES_E2E=1 to reach the Debian mirror")
	}
	oldKey := "/usr/share/keyrings/debian-archive-bullseye-automatic.gpg"
	if _, err := os.Stat(oldKey); err != nil {
		t.Skipf("no %s: %v", oldKey, err)
	}
	cache := t.TempDir()
	var repos []*repo
	for _, d := range []dist{bookworm, sid} {
		r := &repo{dist: d, dir: filepath.Join(cache, "debian", d.name), keyring: HostKeyring, log: t.Logf}
		if d.name == sid.name {
			r.keyring = oldKey
		}
		if err := r.setup(); err != nil {
			t.Fatal(err)
		}
		repos = append(repos, r)
	}
	requests := map[string][]string{bookworm.name: {"busybox-static"}, sid.name: {"liblzf1"}}
	res, err := resolveRepos(context.Background(), repos, requests, false, cache)
	if err != nil {
		t.Fatalf("resolveRepos: %v", err)
	}
	if _, ok := res[sid.name].find("liblzf1"); !ok {
		t.Errorf("sid resolution lacks liblzf1: %+v", res[sid.name])
	}
	if got := currentKeyring(cache); got != keyringPath(cache) {
		t.Errorf("currentKeyring = %s, want the fetched %s", got, keyringPath(cache))
	}
	sources, err := os.ReadFile(filepath.Join(cache, "debian", "sid", "sources.list"))
	if err != nil || !strings.Contains(string(sources), "signed-by="+keyringPath(cache)) {
		t.Errorf("sid sources.list = %q, %v", sources, err)
	}
}
