package localkube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// PeerSource is where the official valkey-io operator's source lives in the repository
// (hack/peer-import.sh brings it in): the peer that `BENCH_PEER=1 make bench` measures
// next to ours. It is a module of its own, outside go.work, whose dependencies come
// from the Go module proxy.
const PeerSource = "third_party/valkey-operator"

// peerCommitPattern is a full git commit ID.
var peerCommitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// PeerCommit reads the commit the peer's source was imported at (its COMMIT file).
func (c Config) PeerCommit() (string, error) {
	b, err := os.ReadFile(filepath.Join(c.RepoRoot, PeerSource, "COMMIT"))
	if err != nil {
		return "", fmt.Errorf("read the peer's commit: %w (import it with hack/peer-import.sh)", err)
	}
	commit := strings.TrimSpace(string(b))
	if !peerCommitPattern.MatchString(commit) {
		return "", fmt.Errorf("%s/COMMIT: %q is not a full commit ID", PeerSource, commit)
	}
	return commit, nil
}

// PeerBinary is the peer's manager binary built from the source at commit.
func (c Config) PeerBinary(commit string) string {
	return filepath.Join(c.CacheDir, "peer", commit, "manager")
}

// BuildPeer builds the peer's manager from PeerSource, once per imported commit, as its
// own Dockerfile does (cmd/main.go, static, the version variables its Makefile sets),
// into PeerBinary. Its modules come from the module proxy (GOFLAGS=-mod=mod with
// GOWORK=off: it is not part of the workspace).
func BuildPeer(ctx context.Context, c Config) error {
	c, err := c.WithDefaults()
	if err != nil {
		return err
	}
	commit, err := c.PeerCommit()
	if err != nil {
		return err
	}
	bin := c.PeerBinary(commit)
	if _, err := os.Stat(bin); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	c.Log("building the valkey-io operator at %s", commit[:12])
	ld := "-X github.com/prometheus/common/version.Version=" + commit[:12] +
		" -X github.com/prometheus/common/version.Revision=" + commit
	tmp := bin + ".tmp"
	if err := c.goCmd(ctx, filepath.Join(c.RepoRoot, PeerSource), []string{"GOFLAGS=-mod=mod -buildvcs=false"},
		"build", "-trimpath", "-ldflags="+ld, "-o", tmp, "./cmd"); err != nil {
		return fmt.Errorf("build the valkey-io operator: %w", err)
	}
	return os.Rename(tmp, bin)
}
