// Package layout is what a backup is in the object store: the folder of a backup, the
// object of each shard, and the manifest written last, with its bounds. It says nothing
// of how the store is reached and imports no store SDK, so the controller, which never
// talks to a store itself, can name objects and read the Jobs' summaries with it.
//
// Invariants: a manifest holds at most MaxManifestSize bytes; a manifest that decodes
// names shards 0..n-1 exactly once each, every one with a plain object name in the
// backup's folder, a size and a SHA-256; Summary is everything the controller needs of
// it to start a restore.
package layout

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// ManifestName is the object, in a backup's folder, written last.
const ManifestName = "manifest.json"

// ManifestFormat is the format this code writes and reads.
const ManifestFormat = 1

// MaxManifestSize bounds a manifest, written or read: 1 MiB holds the manifest of the
// largest cluster (1000 shards) many times over, and a ConfigMap carries it.
const MaxManifestSize = 1 << 20

// MaxShards bounds the shards of a manifest: the most a ValkeyCluster may have.
const MaxShards = 1000

// ErrCorrupt says an object, or the manifest itself, is not what the manifest says.
var ErrCorrupt = errors.New("backup object corrupt")

// BackupPath is the folder of a backup: <prefix>/<namespace>/<cluster>/<backup>-<uid8>.
// The UID part keeps a recreated ValkeyBackup of the same name from overwriting a
// retained one.
func BackupPath(prefix, namespace, cluster, backup, uid string) string {
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return path.Join(prefix, namespace, cluster, backup+"-"+uid)
}

// ShardObject is the object name of shard i's snapshot, relative to the backup's folder.
func ShardObject(i int32) string { return "shard-" + strconv.Itoa(int(i)) + ".rdb" }

// ManifestKey is the manifest's object key in the backup at dir.
func ManifestKey(dir string) string { return path.Join(dir, ManifestName) }

// Manifest describes a complete backup.
type Manifest struct {
	// Format of this file (1).
	Format    int    `json:"format"`
	Namespace string `json:"namespace"`
	Cluster   string `json:"cluster"`
	Backup    string `json:"backup"`
	// StartedAt is when the first transfer started; CompletedAt when the last ended.
	StartedAt   time.Time `json:"startedAt"`
	CompletedAt time.Time `json:"completedAt"`
	// ValkeyVersion is the highest version of the sources.
	ValkeyVersion string          `json:"valkeyVersion"`
	Shards        []ManifestShard `json:"shards"`
}

// ManifestShard is one shard's snapshot.
type ManifestShard struct {
	Index  int32  `json:"index"`
	Object string `json:"object"`
	Size   int64  `json:"size"`
	// SHA256 is the hex digest of the object.
	SHA256        string   `json:"sha256"`
	Keys          int64    `json:"keys"`
	Slots         []string `json:"slots,omitempty"`
	RDBVersion    int      `json:"rdbVersion"`
	ValkeyVersion string   `json:"valkeyVersion"`
	Source        string   `json:"source,omitempty"`
	SourceRole    string   `json:"sourceRole,omitempty"`
}

// EncodeManifest is the manifest's object content (indented JSON, as people read it).
// It refuses a manifest that would not decode again, or is larger than MaxManifestSize.
func EncodeManifest(m Manifest) ([]byte, error) {
	m.Format = ManifestFormat
	if err := m.Validate(); err != nil {
		return nil, err
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	body = append(body, '\n')
	if len(body) > MaxManifestSize {
		return nil, fmt.Errorf("the manifest would take %d bytes, more than the limit of %d", len(body), MaxManifestSize)
	}
	return body, nil
}

// DecodeManifest reads and checks a manifest; any fault is ErrCorrupt.
func DecodeManifest(body []byte) (Manifest, error) {
	var m Manifest
	if len(body) > MaxManifestSize {
		return m, fmt.Errorf("%w: the manifest has more than %d bytes", ErrCorrupt, MaxManifestSize)
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("%w: the manifest is not JSON: %w", ErrCorrupt, err)
	}
	if m.Format != ManifestFormat {
		return m, fmt.Errorf("%w: the manifest has format %d, this operator reads %d", ErrCorrupt, m.Format, ManifestFormat)
	}
	if err := m.Validate(); err != nil {
		return m, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return m, nil
}

// Validate checks the shards: 1 to MaxShards of them, indexed 0..n-1 once each, each
// with a plain object name, a size and a SHA-256.
func (m Manifest) Validate() error {
	n := len(m.Shards)
	if n == 0 || n > MaxShards {
		return fmt.Errorf("the manifest names %d shards, want 1 to %d", n, MaxShards)
	}
	seen := make([]bool, n)
	for i, sh := range m.Shards {
		switch {
		case sh.Index < 0 || int(sh.Index) >= n:
			return fmt.Errorf("shards[%d]: index %d is not between 0 and %d", i, sh.Index, n-1)
		case seen[sh.Index]:
			return fmt.Errorf("shards[%d]: index %d appears twice", i, sh.Index)
		case sh.Object == "" || len(sh.Object) > 128 || strings.ContainsAny(sh.Object, "/\\") || sh.Object == "." || sh.Object == "..":
			return fmt.Errorf("shards[%d]: object %q is not a plain name in the backup's folder", i, trim(sh.Object))
		case sh.Size < 0:
			return fmt.Errorf("shards[%d]: size %d is negative", i, sh.Size)
		case !isSHA256(sh.SHA256):
			return fmt.Errorf("shards[%d]: sha256 %q is not 64 hex digits", i, trim(sh.SHA256))
		}
		seen[sh.Index] = true
	}
	return nil
}

// Shard returns shard i of the manifest.
func (m Manifest) Shard(i int32) (ManifestShard, bool) {
	for _, sh := range m.Shards {
		if sh.Index == i {
			return sh, true
		}
	}
	return ManifestShard{}, false
}

// Summary is what the controller needs of a manifest to start a restore; a Job that read
// the manifest reports it (it fits a termination message whatever the shard count), and
// each restore Job reads its own shard's entry from the manifest itself.
type Summary struct {
	// Shards is the shard count; they are indexed 0..Shards-1.
	Shards int32 `json:"shards"`
	// Keys and Size are the totals of the snapshots.
	Keys int64 `json:"keys"`
	Size int64 `json:"size"`
	// MaxObjectSize is the largest snapshot: the memory a restore Job's private server
	// asks for is twice it.
	MaxObjectSize int64 `json:"maxObjectSize"`
	// RDBVersion is the newest snapshot format of the shards, RDBShard the first shard
	// in it and ValkeyVersion the version that shard was taken from.
	RDBVersion    int    `json:"rdbVersion"`
	RDBShard      int32  `json:"rdbShard"`
	ValkeyVersion string `json:"valkeyVersion,omitempty"`
}

// Summary sums a valid manifest up.
func (m Manifest) Summary() Summary {
	s := Summary{Shards: int32(len(m.Shards)), RDBShard: -1}
	for _, sh := range m.Shards {
		s.Keys += sh.Keys
		s.Size += sh.Size
		s.MaxObjectSize = max(s.MaxObjectSize, sh.Size)
		if sh.RDBVersion > s.RDBVersion || s.RDBShard < 0 || (sh.RDBVersion == s.RDBVersion && sh.Index < s.RDBShard) {
			s.RDBVersion, s.RDBShard, s.ValkeyVersion = sh.RDBVersion, sh.Index, trim(sh.ValkeyVersion)
		}
	}
	return s
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// trim keeps a value read from a manifest short enough for a message.
func trim(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}
