package job

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/layout"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/tests3"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/testvalkey"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func storeArgs(t *testing.T, s *tests3.Server) []string {
	t.Setenv(jobapi.EnvAccessKeyID, tests3.AccessKey)
	t.Setenv(jobapi.EnvSecretAccessKey, tests3.SecretKey)
	args := []string{"--bucket", tests3.Bucket, "--endpoint", s.Endpoint, "--path-style", "--result-file", filepath.Join(t.TempDir(), "result")}
	args = append(args, s.Policy().Args()...)
	if s.CA != nil {
		args = append(args, "--ca-bundle-file", writeFile(t, string(s.CA)))
	}
	return args
}

// The whole data path without Kubernetes: a snapshot of a replica into the store,
// fetched and checked, loaded by a private server, restored into three primaries with
// every key and TTL.
func TestBackupAndRestoreIntoMoreShards(t *testing.T) {
	const keys = 5000
	ca, err := valkeytest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	s3 := tests3.Start(t, true)
	source := testvalkey.Shard(t, 1, valkeytest.Options{TLS: ca})
	primary := testvalkey.Single(t, source[0])
	testvalkey.Populate(t, primary, "key:", keys, 100)
	replica := testvalkey.Single(t, source[1])
	testvalkey.Wait(t, 10*time.Second, "the replica to have every key", func() (bool, error) {
		return testvalkey.DBSize(t, replica) == keys, nil
	})
	caFile := writeFile(t, string(ca.PEM))
	backup := "ns/demo/b-1"
	object := backup + "/" + layout.ShardObject(0)
	res := Run(testvalkey.Ctx(t), append([]string{jobapi.CmdBackup, "--addr", source[1].Addr(), "--password-file", writeFile(t, testvalkey.BackupPassword+"\n"),
		"--tls-ca-file", caFile, "--object", object}, storeArgs(t, s3)...))
	if res.Reason != "" || res.Keys != keys || res.Role != "replica" || res.RDBVersion != 11 || res.Size == 0 {
		t.Fatalf("backup: %+v", res)
	}
	shard := layout.ManifestShard{Index: 0, Object: layout.ShardObject(0), Size: res.Size, SHA256: res.SHA256, Keys: res.Keys,
		RDBVersion: res.RDBVersion, ValkeyVersion: res.ValkeyVersion}
	writeManifest := func(sh layout.ManifestShard) {
		t.Helper()
		body, err := layout.EncodeManifest(layout.Manifest{Namespace: "ns", Cluster: "demo", Backup: "b", Shards: []layout.ManifestShard{sh}})
		if err != nil {
			t.Fatal(err)
		}
		if w := Run(testvalkey.Ctx(t), append([]string{jobapi.CmdManifestWrite, "--dir", backup, "--manifest-file", writeFile(t, string(body))}, storeArgs(t, s3)...)); w.Reason != "" {
			t.Fatalf("manifest-write: %+v", w)
		}
	}
	fetch := func(dir string, shards int, out string) jobapi.Result {
		return Run(testvalkey.Ctx(t), append([]string{jobapi.CmdRestoreFetch, "--dir", dir, "--shard", "0", "--shards", strconv.Itoa(shards),
			"--out", out}, storeArgs(t, s3)...))
	}

	// A manifest whose digest is not the object's fails the fetch, and nothing is written.
	dir := t.TempDir()
	wrong := shard
	wrong.SHA256 = "00" + shard.SHA256[2:]
	writeManifest(wrong)
	if bad := fetch(backup, 1, filepath.Join(dir, "dump.rdb")); bad.Reason != jobapi.ReasonChecksumMismatch {
		t.Fatalf("fetch with a wrong digest: %+v", bad)
	}
	if _, err := os.Stat(filepath.Join(dir, "dump.rdb")); !os.IsNotExist(err) {
		t.Fatalf("a corrupt snapshot was left in place: %v", err)
	}
	if missing := fetch("ns/demo/nope", 1, filepath.Join(dir, "dump.rdb")); missing.Reason != jobapi.ReasonNotFound {
		t.Fatalf("fetch from a backup without a manifest: %+v", missing)
	}
	writeManifest(shard)
	if changed := fetch(backup, 2, filepath.Join(dir, "dump.rdb")); changed.Reason != jobapi.ReasonChecksumMismatch || !strings.Contains(changed.Message, "it changed") {
		t.Fatalf("fetch of a manifest with another shard count than the restore's: %+v", changed)
	}
	got := fetch(backup, 1, filepath.Join(dir, "dump.rdb"))
	if got.Reason != "" || got.Size != res.Size || got.Object != object {
		t.Fatalf("fetch: %+v", got)
	}

	private, _ := testvalkey.Plain(t, dir)
	target := testvalkey.Primaries(t, 3, valkeytest.Options{TLS: ca})
	// One shard's slots are unassigned for the first second: the cluster answers
	// CLUSTERDOWN for them, as a cluster whose assignment is still spreading does, and
	// the load waits for it.
	third := valkey.EvenRanges(3)[2]
	admin := target[2].Dial(t)
	if err := admin.DelSlotsRange(testvalkey.Ctx(t), third); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(time.Second)
		_ = admin.AddSlotsRange(context.Background(), third)
	}()
	start := time.Now()
	loaded := Run(testvalkey.Ctx(t), []string{jobapi.CmdRestoreLoad, "--source", private, "--cluster", target[1].Addr(),
		"--password-file", writeFile(t, testvalkey.RestorePassword), "--tls-ca-file", caFile, "--result-file", filepath.Join(t.TempDir(), "r")})
	if loaded.Reason != "" || loaded.Restored != keys {
		t.Fatalf("load: %+v", loaded)
	}
	t.Logf("restored %d keys in %s", loaded.Restored, time.Since(start))

	dst := testvalkey.ClusterClient(t, target)
	ctx := testvalkey.Ctx(t)
	var total int64
	for _, s := range target {
		n := testvalkey.DBSize(t, testvalkey.Single(t, s))
		if n == 0 {
			t.Errorf("shard %s got no key", s.Addr())
		}
		total += n
	}
	if total != keys {
		t.Fatalf("the cluster holds %d keys, want %d", total, keys)
	}
	for i := 0; i < keys; i += 97 {
		k := "key:" + strconv.Itoa(i)
		want, _ := primary.Do(ctx, primary.B().Get().Key(k).Build()).ToString()
		v, err := dst.Do(ctx, dst.B().Get().Key(k).Build()).ToString()
		if err != nil || v != want {
			t.Fatalf("%s = %q, %v", k, v, err)
		}
		ttl, err := dst.Do(ctx, dst.B().Pttl().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case i%3 == 0 && (ttl < int64(59*time.Minute/time.Millisecond) || ttl > int64(time.Hour/time.Millisecond)):
			t.Fatalf("%s has TTL %d ms, want about an hour", k, ttl)
		case i%3 != 0 && ttl != -1:
			t.Fatalf("%s has TTL %d, want none", k, ttl)
		}
	}
}

// A snapshot a server cannot load leaves the private server without data: the load
// fails with LoadFailed instead of restoring nothing as success.
func TestLoadFailsWhenTheServerDoesNotStart(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), []byte("VALKEY099garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, _ := testvalkey.Plain(t, dir)
	res := Run(testvalkey.Ctx(t), []string{jobapi.CmdRestoreLoad, "--source", addr, "--cluster", "127.0.0.1:1", "--load-timeout", "3s",
		"--result-file", filepath.Join(t.TempDir(), "r")})
	if res.Reason != jobapi.ReasonLoadFailed {
		t.Fatalf("load of an unreadable snapshot: %+v", res)
	}
}
