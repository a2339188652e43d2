package job

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/layout"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/objstore"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/tests3"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/testvalkey"
)

// step runs a store step against s with extra flags.
func step(t *testing.T, s *tests3.Server, cmd string, flags ...string) jobapi.Result {
	t.Helper()
	return Run(testvalkey.Ctx(t), append(append([]string{cmd}, flags...), storeArgs(t, s)...))
}

// manifestOf is a valid manifest of n shards.
func manifestOf(n int) layout.Manifest {
	m := layout.Manifest{Namespace: "ns", Cluster: "demo", Backup: "b", ValkeyVersion: "8.0.1"}
	for i := range int32(n) {
		m.Shards = append(m.Shards, layout.ManifestShard{Index: i, Object: layout.ShardObject(i), Size: int64(1000 + i),
			SHA256: strings.Repeat("ab", 32), Keys: 10, Slots: []string{"0-5460"}, RDBVersion: 11, ValkeyVersion: "8.0.1",
			Source: fmt.Sprintf("demo-%05d", i), SourceRole: "replica"})
	}
	m.Shards[n/2].RDBVersion, m.Shards[n/2].ValkeyVersion = 80, "9.1.2"
	return m
}

func encode(t *testing.T, m layout.Manifest) string {
	t.Helper()
	body, err := layout.EncodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, string(body))
}

// The store steps a backup's life needs, against a real S3 server: a probe, the
// manifest written from a file and read back as a summary that fits a termination
// message even for the largest cluster, and the backup's objects deleted, manifest
// first.
func TestStoreSteps(t *testing.T) {
	s3 := tests3.Start(t, true)
	if r := step(t, s3, jobapi.CmdStoreProbe, "--prefix", "prod"); r.Reason != "" {
		t.Fatalf("probe: %+v", r)
	}
	const dir = "prod/ns/demo/b-0123abcd"
	if r := step(t, s3, jobapi.CmdManifestRead, "--dir", dir); r.Reason != jobapi.ReasonNotFound {
		t.Fatalf("read before the manifest is written: %+v, want NotFound", r)
	}

	m := manifestOf(layout.MaxShards)
	if r := step(t, s3, jobapi.CmdManifestWrite, "--dir", dir, "--manifest-file", encode(t, m)); r.Reason != "" || r.Object != dir+"/manifest.json" {
		t.Fatalf("manifest-write: %+v", r)
	}
	r := step(t, s3, jobapi.CmdManifestRead, "--dir", dir)
	want := layout.Summary{Shards: 1000, Keys: 10000, Size: 1000*1000 + 999*1000/2, MaxObjectSize: 1999, RDBVersion: 80, RDBShard: 500, ValkeyVersion: "9.1.2"}
	if r.Reason != "" || r.Manifest == nil || *r.Manifest != want {
		t.Fatalf("manifest-read: %+v (summary %+v), want %+v", r, r.Manifest, want)
	}
	if n := len(r.Encode()); n > jobapi.MaxTerminationMessage {
		t.Fatalf("the summary of a %d-shard manifest takes %d bytes, more than a termination message", layout.MaxShards, n)
	}
	back, err := jobapi.ParseResult(string(r.Encode()))
	if err != nil || *back.Manifest != want {
		t.Fatalf("the controller reads %+v, %v", back.Manifest, err)
	}

	// Shard objects next to the manifest, and one of another backup that stays.
	b := openBucket(t, s3)
	for _, key := range []string{dir + "/shard-0.rdb", dir + "/shard-1.rdb", dir + "-other/shard-0.rdb"} {
		if err := b.WriteAll(testvalkey.Ctx(t), key, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if r := step(t, s3, jobapi.CmdStoreDelete, "--dir", dir); r.Reason != "" || r.Objects != 3 {
		t.Fatalf("store-delete: %+v, want 3 objects deleted", r)
	}
	left := list(t, b, "prod/")
	if strings.Join(left, " ") != dir+"-other/shard-0.rdb" {
		t.Fatalf("left after the deletion: %v", left)
	}
	if r := step(t, s3, jobapi.CmdStoreDelete, "--dir", dir); r.Reason != "" || r.Objects != 0 {
		t.Fatalf("a second deletion: %+v, want success with nothing deleted", r)
	}
	if r := step(t, s3, jobapi.CmdStoreDelete, "--dir", "/"); r.Reason == "" {
		t.Fatal("a deletion of the bucket's root was run")
	}
}

// A manifest is bounded both ways: one larger than 1 MiB is neither written nor read
// (it is reported corrupt, which fails a restore for good), and neither is one that
// does not name its shards properly.
func TestManifestBounds(t *testing.T) {
	s3 := tests3.Start(t, false)
	big := manifestOf(3)
	big.Shards[0].Slots = make([]string, 120000)
	for i := range big.Shards[0].Slots {
		big.Shards[0].Slots[i] = "16383-16383"
	}
	if _, err := layout.EncodeManifest(big); err == nil {
		t.Fatal("a manifest over 1 MiB was encoded")
	}
	raw := writeFile(t, `{"format":1,"shards":[{"index":0,"object":"shard-0.rdb","size":1,"sha256":"`+strings.Repeat("ab", 32)+`"}],"pad":"`+strings.Repeat("x", layout.MaxManifestSize)+`"}`)
	if r := step(t, s3, jobapi.CmdManifestWrite, "--dir", "d", "--manifest-file", raw); r.Reason != jobapi.ReasonInvalid || !strings.Contains(r.Message, "more than 1048576 bytes") {
		t.Fatalf("write of a 1 MiB manifest: %+v", r)
	}
	b := openBucket(t, s3)
	if err := b.WriteAll(testvalkey.Ctx(t), "big/manifest.json", bytes.Repeat([]byte(" "), layout.MaxManifestSize+1), nil); err != nil {
		t.Fatal(err)
	}
	if r := step(t, s3, jobapi.CmdManifestRead, "--dir", "big"); r.Reason != jobapi.ReasonChecksumMismatch || !strings.Contains(r.Message, "more than 1048576") {
		t.Fatalf("read of a manifest over 1 MiB: %+v", r)
	}
	for name, body := range map[string]string{
		"gaps":    `{"format":1,"shards":[{"index":0,"object":"shard-0.rdb","sha256":"` + strings.Repeat("ab", 32) + `"},{"index":2,"object":"shard-2.rdb","sha256":"` + strings.Repeat("ab", 32) + `"}]}`,
		"escape":  `{"format":1,"shards":[{"index":0,"object":"../other/shard-0.rdb","sha256":"` + strings.Repeat("ab", 32) + `"}]}`,
		"format":  `{"format":2,"shards":[]}`,
		"garbage": `not json`,
	} {
		if err := b.WriteAll(testvalkey.Ctx(t), name+"/manifest.json", []byte(body), nil); err != nil {
			t.Fatal(err)
		}
		if r := step(t, s3, jobapi.CmdManifestRead, "--dir", name); r.Reason != jobapi.ReasonChecksumMismatch {
			t.Errorf("read of a manifest with %s: %+v, want ChecksumMismatch", name, r)
		}
	}
}

// A store that refuses the credentials, one that does not exist, and one that never
// answers: each step ends with the reason the controller reports, within its timeout,
// and its message is short and holds no credential.
func TestStoreFailuresAndTimeouts(t *testing.T) {
	s3 := tests3.Start(t, false)
	t.Run("wrong secret", func(t *testing.T) {
		args := storeArgs(t, s3)
		t.Setenv(jobapi.EnvSecretAccessKey, "wrong-secret-VALUE")
		r := Run(testvalkey.Ctx(t), append([]string{jobapi.CmdStoreProbe}, args...))
		if r.Reason != jobapi.ReasonAccessDenied {
			t.Fatalf("probe with a wrong secret: %+v", r)
		}
		for _, secret := range []string{"wrong-secret-VALUE", tests3.AccessKey} {
			if strings.Contains(r.Message, secret) {
				t.Errorf("the message shows a credential: %q", r.Message)
			}
		}
		if n := len([]rune(r.Message)); n > jobapi.MaxMessage {
			t.Errorf("a message of %d characters", n)
		}
	})
	t.Run("missing bucket", func(t *testing.T) {
		args := storeArgs(t, s3)
		args[1] = "nobucket"
		if r := Run(testvalkey.Ctx(t), append([]string{jobapi.CmdStoreProbe}, args...)); r.Reason != jobapi.ReasonNotFound {
			t.Fatalf("probe of a missing bucket: %+v", r)
		}
	})
	t.Run("no server", func(t *testing.T) {
		args := append([]string{jobapi.CmdStoreDelete, "--dir", "d"}, storeArgs(t, s3)...)
		args = append(args, "--endpoint", "http://127.0.0.1:1")
		if r := Run(testvalkey.Ctx(t), args); r.Reason != jobapi.ReasonStoreUnreachable {
			t.Fatalf("deletion on a dead endpoint: %+v", r)
		}
	})
	t.Run("a store that never answers", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close() // held open, never answered
			}
		}()
		args := append([]string{jobapi.CmdManifestRead, "--dir", "d", "--timeout", "2s"}, storeArgs(t, s3)...)
		args = append(args, "--endpoint", "http://"+l.Addr().String())
		start := time.Now()
		r := Run(testvalkey.Ctx(t), args)
		if r.Reason != jobapi.ReasonStoreUnreachable || time.Since(start) > 10*time.Second {
			t.Fatalf("read from a silent store: %+v after %s, want ObjectStoreUnreachable within the 2 s timeout", r, time.Since(start))
		}
	})
}

// A Job's message is cut before it becomes the termination message.
func TestResultBounds(t *testing.T) {
	r := Run(context.Background(), []string{jobapi.CmdStoreProbe, "--no-such-flag-" + strings.Repeat("x", 1000)})
	if r.Reason != jobapi.ReasonInvalid || len([]rune(r.Message)) > jobapi.MaxMessage {
		t.Fatalf("%+v", r)
	}
	if n := len(r.Encode()); n > jobapi.MaxTerminationMessage {
		t.Fatalf("a termination message of %d bytes", n)
	}
}

func openBucket(t *testing.T, s *tests3.Server) *blob.Bucket {
	t.Helper()
	b, err := objstore.Open(testvalkey.Ctx(t), s.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func list(t *testing.T, b *blob.Bucket, prefix string) []string {
	t.Helper()
	var out []string
	it := b.List(&blob.ListOptions{Prefix: prefix})
	for {
		o, err := it.Next(testvalkey.Ctx(t))
		if err != nil {
			return out
		}
		out = append(out, o.Key)
	}
}

// A Job applies the endpoint policy the backup-controller passes it to the address it
// connects to. Without the policy flags (the operator's defaults) the store on
// 127.0.0.1 is refused: EndpointRefused, with a message that names the address and the
// rule and no more; a name resolving to it is refused although the allow-list names
// it; with 127.0.0.1/32 listed the same steps reach the store.
func TestStoreStepsApplyTheEndpointPolicy(t *testing.T) {
	s3 := tests3.Start(t, false)
	port := s3.Endpoint[strings.LastIndex(s3.Endpoint, ":")+1:]
	run := func(endpoint string, policy ...string) jobapi.Result {
		t.Setenv(jobapi.EnvAccessKeyID, tests3.AccessKey)
		t.Setenv(jobapi.EnvSecretAccessKey, tests3.SecretKey)
		args := append([]string{jobapi.CmdStoreProbe, "--bucket", tests3.Bucket, "--endpoint", endpoint, "--path-style",
			"--result-file", filepath.Join(t.TempDir(), "result")}, policy...)
		return Run(testvalkey.Ctx(t), args)
	}
	cases := []struct {
		name     string
		endpoint string
		policy   []string
		message  string
	}{
		{name: "the address, default policy", endpoint: s3.Endpoint,
			message: "connect to 127.0.0.1:" + port + ": loopback address (127.0.0.0/8) refused by the operator's object-store endpoint policy"},
		{name: "a listed name resolving to a refused address", endpoint: "http://localhost:" + port,
			policy:  []string{"--object-store-allowed-endpoints=localhost"},
			message: "connect to localhost:" + port + " (resolved to "},
		// The loopback listed whole admits 127.0.0.1 as a loopback address, but not as
		// the API server's, which the entry is wider than.
		{name: "the API server's address", endpoint: s3.Endpoint,
			policy:  []string{"--object-store-allowed-endpoints=127.0.0.0/8", "--kubernetes-api-addresses=127.0.0.1"},
			message: "the Kubernetes API server's address (127.0.0.1) refused by the operator's object-store endpoint policy"},
		{name: "127.0.0.1 listed", endpoint: s3.Endpoint, policy: []string{"--object-store-allowed-endpoints=127.0.0.1/32"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(tc.endpoint, tc.policy...)
			if tc.message == "" {
				if r.Reason != "" {
					t.Fatalf("probe: %+v", r)
				}
				return
			}
			if r.Reason != jobapi.ReasonEndpointRefused || !strings.Contains(r.Message, tc.message) {
				t.Fatalf("got %+v, want reason EndpointRefused and a message with %q", r, tc.message)
			}
			if !strings.HasPrefix(r.Message, "connect to ") {
				t.Errorf("the message is more than the refusal: %q", r.Message)
			}
		})
	}
	if r := run(s3.Endpoint, "--kubernetes-api-addresses=kubernetes"); r.Reason != jobapi.ReasonInvalid ||
		!strings.Contains(r.Message, "--kubernetes-api-addresses: ") {
		t.Errorf("a bad policy flag: %+v", r)
	}
}
