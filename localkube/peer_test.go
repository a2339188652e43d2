package localkube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPeerCommit(t *testing.T) {
	cases := []struct {
		name, file string
		want       string // "" when an error is expected
	}{
		{"a full commit with a newline", "c33988f58364d6850380cabd926871d5f39d6c45\n", "c33988f58364d6850380cabd926871d5f39d6c45"},
		{"a short commit", "c33988f\n", ""},
		{"a branch name", "main\n", ""},
		{"no file", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{RepoRoot: t.TempDir(), CacheDir: "/cache"}
			if c.file != "" {
				dir := filepath.Join(cfg.RepoRoot, PeerSource)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "COMMIT"), []byte(c.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := cfg.PeerCommit()
			if c.want == "" {
				if err == nil {
					t.Errorf("PeerCommit() = %q, want an error", got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("PeerCommit() = %q, %v; want %q", got, err, c.want)
			}
			if bin := cfg.PeerBinary(got); bin != "/cache/peer/"+c.want+"/manager" {
				t.Errorf("PeerBinary = %s", bin)
			}
		})
	}
}

// TestPeerImportRecorded checks that the imported source's COMMIT is the commit
// third_party/README.md names, so the two cannot drift apart.
func TestPeerImportRecorded(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	commit, err := Config{RepoRoot: root}.PeerCommit()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "third_party", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), commit) {
		t.Errorf("third_party/README.md does not name %s, the commit in %s/COMMIT", commit, PeerSource)
	}
}
