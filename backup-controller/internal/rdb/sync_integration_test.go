package rdb

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/valkey-operator/valkey-operator/backup-controller/internal/testvalkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

func backupOptions(s *valkeytest.Server) Options {
	o := Options{Addr: s.Addr(), Username: testvalkey.BackupUser, Password: testvalkey.BackupPassword}
	if s.CA != nil {
		o.TLS = s.CA.ClientTLS()
	}
	return o
}

// take reads a whole snapshot.
func take(t *testing.T, o Options) ([]byte, *Snapshot) {
	t.Helper()
	snap, err := Open(testvalkey.Ctx(t), o)
	if err != nil {
		t.Fatalf("open snapshot: %v", err)
	}
	defer snap.Close()
	b, err := io.ReadAll(snap)
	if err != nil {
		t.Fatalf("read snapshot: %v", err)
	}
	return b, snap
}

// loadCount starts a plain (non-cluster) valkey-server on the file and returns its
// DBSIZE: the snapshot loads where a restore Job loads it.
func loadCount(t *testing.T, rdb []byte) int64 {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), rdb, 0o600); err != nil {
		t.Fatal(err)
	}
	addr, _ := testvalkey.Plain(t, dir)
	var c rueidis.Client
	testvalkey.Wait(t, 15*time.Second, "the plain server to load", func() (bool, error) {
		var err error
		if c == nil {
			c, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true})
			if err != nil {
				c = nil
				return false, err
			}
		}
		return c.Do(testvalkey.Ctx(t), c.B().Ping().Build()).Error() == nil, nil
	})
	defer c.Close()
	return testvalkey.DBSize(t, c)
}

func TestSnapshotFromReplicaDiskless(t *testing.T) {
	servers := testvalkey.Shard(t, 1, valkeytest.Options{})
	primary := testvalkey.Single(t, servers[0])
	testvalkey.Populate(t, primary, "k:", 3000, 100)
	replica := testvalkey.Single(t, servers[1])
	testvalkey.Wait(t, 10*time.Second, "the replica to have every key", func() (bool, error) {
		return testvalkey.DBSize(t, replica) == 3000, nil
	})
	b, snap := take(t, backupOptions(servers[1]))
	if snap.Size != -1 {
		t.Errorf("size %d, want a diskless (EOF-marked) transfer", snap.Size)
	}
	if snap.Source.Replication.Role != "replica" || !snap.Source.Replication.LinkUp {
		t.Errorf("source %+v, want a replica with its link up", snap.Source.Replication)
	}
	h, err := snap.Header()
	if err != nil || !h.KeysKnown || h.Keys != 3000 || h.Expires != 1000 || h.Version != 11 {
		t.Errorf("header %+v, %v; want 3000 keys, 1000 with TTL", h, err)
	}
	if snap.BytesRead() != int64(len(b)) {
		t.Errorf("read %d, counted %d", len(b), snap.BytesRead())
	}
	if n := loadCount(t, b); n != 3000 {
		t.Errorf("a plain server loaded %d keys, want 3000", n)
	}
}

func TestSnapshotDiskBased(t *testing.T) {
	servers := testvalkey.Shard(t, 0, valkeytest.Options{Config: map[string]string{"repl-diskless-sync": "no"}})
	testvalkey.Populate(t, testvalkey.Single(t, servers[0]), "k:", 500, 10)
	b, snap := take(t, backupOptions(servers[0]))
	if snap.Size != int64(len(b)) {
		t.Errorf("announced %d, read %d", snap.Size, len(b))
	}
	if snap.Source.Replication.Role != "primary" {
		t.Errorf("role %q", snap.Source.Replication.Role)
	}
	if n := loadCount(t, b); n != 500 {
		t.Errorf("loaded %d keys, want 500", n)
	}
}

func TestSnapshotRefusals(t *testing.T) {
	servers := testvalkey.Shard(t, 0, valkeytest.Options{})
	o := backupOptions(servers[0])
	o.Password = "wrong"
	if _, err := Open(testvalkey.Ctx(t), o); !errors.Is(err, ErrAuth) {
		t.Errorf("wrong password: %v, want ErrAuth", err)
	}
	admin := servers[0].Dial(t)
	if err := admin.ACLSetUser(testvalkey.Ctx(t), "nosync", "on", ">pw", "-@all", "+info", "+replconf"); err != nil {
		t.Fatal(err)
	}
	o = backupOptions(servers[0])
	o.Username, o.Password = "nosync", "pw"
	if _, err := Open(testvalkey.Ctx(t), o); err == nil {
		t.Error("a user without +sync took a snapshot")
	}
	o = backupOptions(servers[0])
	o.Addr = "127.0.0.1:1"
	if _, err := Open(testvalkey.Ctx(t), o); !errors.Is(err, ErrUnreachable) {
		t.Errorf("dead address: %v, want ErrUnreachable", err)
	}
}

// A source that dies mid-transfer never yields a whole snapshot.
func TestSnapshotSourceLost(t *testing.T) {
	servers := testvalkey.Shard(t, 0, valkeytest.Options{Config: map[string]string{"rdbcompression": "no"}})
	testvalkey.Populate(t, testvalkey.Single(t, servers[0]), "k:", 60000, 1000)
	snap, err := Open(testvalkey.Ctx(t), backupOptions(servers[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	buf := make([]byte, 1<<20)
	if _, err := io.ReadFull(snap, buf); err != nil {
		t.Fatal(err)
	}
	servers[0].Stop()
	_, err = io.Copy(io.Discard, snap)
	if !errors.Is(err, ErrSourceLost) {
		t.Fatalf("after the source died: %v, want ErrSourceLost", err)
	}
}

func TestSnapshotTLS(t *testing.T) {
	ca, err := valkeytest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	servers := testvalkey.Shard(t, 1, valkeytest.Options{TLS: ca})
	testvalkey.Populate(t, testvalkey.Single(t, servers[0]), "k:", 100, 10)
	b, _ := take(t, backupOptions(servers[1]))
	if !bytes.HasPrefix(b, []byte("REDIS")) {
		t.Fatalf("not an RDB: %q", b[:min(len(b), 9)])
	}
}

// A flipped byte is caught by the RDB's own checksum.
func TestSnapshotChecksum(t *testing.T) {
	b, err := os.ReadFile("testdata/valkey-8.0.1-cluster.rdb")
	if err != nil {
		t.Fatal(err)
	}
	s := &Snapshot{crc: newCRC()}
	bad := append([]byte(nil), b...)
	bad[20] ^= 1
	s.account(bad)
	if err := s.finish(); !errors.Is(err, ErrChecksum) {
		t.Fatalf("corrupt file: %v, want ErrChecksum", err)
	}
	s = &Snapshot{crc: newCRC()}
	s.account(b[:30])
	s.account(b[30:])
	if err := s.finish(); err != io.EOF {
		t.Fatalf("intact file: %v", err)
	}
}
