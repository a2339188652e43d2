package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/layout"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/objstore"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/tests3"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func open(t *testing.T, c objstore.Config) *blob.Bucket {
	t.Helper()
	b, err := objstore.Open(ctx(t), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// failingReader yields n bytes, then an error: a snapshot whose source died.
type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("source lost")
	}
	k := min(len(p), f.n)
	f.n -= k
	return k, nil
}

func TestBackupLifecycle(t *testing.T) {
	for _, withTLS := range []bool{false, true} {
		name := "http"
		if withTLS {
			name = "https with a private CA"
		}
		t.Run(name, func(t *testing.T) {
			s := tests3.Start(t, withTLS)
			b := open(t, s.Config())
			if err := objstore.Probe(ctx(t), b, "x"); err != nil {
				t.Fatalf("probe: %v", err)
			}
			dir := layout.BackupPath("prod", "ns", "demo", "nightly", "0123456789abcdef")
			if dir != "prod/ns/demo/nightly-01234567" {
				t.Fatalf("path %s", dir)
			}
			payload := bytes.Repeat([]byte("valkey"), 6<<20) // 36 MiB: a multipart upload
			n, sum, err := objstore.Upload(ctx(t), b, dir+"/"+layout.ShardObject(0), bytes.NewReader(payload))
			if err != nil || n != int64(len(payload)) {
				t.Fatalf("upload: %d, %v", n, err)
			}
			// A stream that breaks leaves no object.
			if _, _, err := objstore.Upload(ctx(t), b, dir+"/"+layout.ShardObject(1), &failingReader{n: 20 << 20}); err == nil {
				t.Fatal("a broken stream was stored")
			}
			if ok, _ := b.Exists(ctx(t), dir+"/"+layout.ShardObject(1)); ok {
				t.Fatal("a broken stream left an object")
			}
			m := layout.Manifest{Namespace: "ns", Cluster: "demo", Backup: "nightly", ValkeyVersion: "8.0.1",
				Shards: []layout.ManifestShard{{Index: 0, Object: layout.ShardObject(0), Size: n, SHA256: sum, Keys: 3}}}
			if _, err := objstore.ReadManifest(ctx(t), b, dir); objstore.Reason(err) != jobapi.ReasonNotFound {
				t.Fatalf("manifest before it is written: %v (%s)", err, objstore.Reason(err))
			}
			body, err := layout.EncodeManifest(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := objstore.WriteManifest(ctx(t), b, dir, body); err != nil {
				t.Fatal(err)
			}
			got, err := objstore.ReadManifest(ctx(t), b, dir)
			if err != nil || got.Shards[0].SHA256 != sum || got.Format != layout.ManifestFormat {
				t.Fatalf("manifest %+v, %v", got, err)
			}
			r, closer, err := objstore.OpenVerified(ctx(t), b, dir+"/"+layout.ShardObject(0), n, sum)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, r); err != nil {
				t.Fatalf("verified read: %v", err)
			}
			closer.Close()
			r, closer, _ = objstore.OpenVerified(ctx(t), b, dir+"/"+layout.ShardObject(0), n, strings.Repeat("0", 64))
			if _, err := io.Copy(io.Discard, r); !errors.Is(err, objstore.ErrCorrupt) {
				t.Fatalf("read with a wrong digest: %v, want ErrCorrupt", err)
			}
			closer.Close()
			if n, err := objstore.DeleteBackup(ctx(t), b, dir); err != nil || n != 2 {
				t.Fatalf("deleted %d objects, %v; want the manifest and the shard", n, err)
			}
			it := b.List(&blob.ListOptions{Prefix: dir})
			if obj, err := it.Next(ctx(t)); err != io.EOF {
				t.Fatalf("left after delete: %+v, %v", obj, err)
			}
		})
	}
}

func TestReasons(t *testing.T) {
	s := tests3.Start(t, false)
	bad := s.Config()
	bad.SecretAccessKey = "wrong"
	if err := objstore.Probe(ctx(t), open(t, bad), ""); objstore.Reason(err) != jobapi.ReasonAccessDenied {
		t.Errorf("wrong secret: %v -> %s, want AccessDenied", err, objstore.Reason(err))
	}
	gone := s.Config()
	gone.Endpoint = "http://127.0.0.1:1"
	if err := objstore.Probe(ctx(t), open(t, gone), ""); err == nil || objstore.Reason(err) != jobapi.ReasonStoreUnreachable {
		t.Errorf("dead endpoint: %v -> %s, want ObjectStoreUnreachable", err, objstore.Reason(err))
	}
	nob := s.Config()
	nob.Bucket = "nobucket"
	if err := objstore.Probe(ctx(t), open(t, nob), ""); objstore.Reason(err) != jobapi.ReasonNotFound {
		t.Errorf("missing bucket: %v -> %s, want NotFound", err, objstore.Reason(err))
	}
	wrongCA := s.Config()
	wrongCA.CABundle = []byte("not pem")
	if _, err := objstore.Open(ctx(t), wrongCA); err == nil {
		t.Error("a CA bundle without certificates was accepted")
	}
}

// Connections go only where the operator's endpoint policy lets them, checked on the
// address the endpoint resolved to: the server on 127.0.0.1 is refused under the
// default policy, by its address and by a name that resolves to it (even a name the
// allow-list lists), at once and without retries; an allow-list naming 127.0.0.1
// admits it.
func TestEndpointPolicyAtTheDial(t *testing.T) {
	s := tests3.Start(t, false)
	port := s.Endpoint[strings.LastIndex(s.Endpoint, ":")+1:]
	listed, err := validation.ParseEndpointAllowList("localhost")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, endpoint string
		policy         validation.EndpointPolicy
		want           []string
	}{
		{name: "the address, default policy", endpoint: s.Endpoint,
			want: []string{"connect to 127.0.0.1:" + port + ": loopback address (127.0.0.0/8) refused by the operator's object-store endpoint policy"}},
		{name: "a name resolving to it, default policy", endpoint: "http://localhost:" + port,
			want: []string{"connect to localhost:" + port + " (resolved to ", "loopback address", "refused by the operator's object-store endpoint policy"}},
		{name: "a listed name resolving to it", endpoint: "http://localhost:" + port, policy: validation.EndpointPolicy{Allowed: listed},
			want: []string{"connect to localhost:" + port + " (resolved to ", "loopback address"}},
		{name: "an allow-list naming 127.0.0.1", endpoint: s.Endpoint, policy: s.Policy()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := s.Config()
			c.Endpoint, c.Policy = tc.endpoint, tc.policy
			err := objstore.Probe(ctx(t), open(t, c), "")
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("probe: %v", err)
				}
				return
			}
			refusal, ok := objstore.Refusal(err)
			if !ok || objstore.Reason(err) != jobapi.ReasonEndpointRefused {
				t.Fatalf("got %v (%s), want a refusal by the policy", err, objstore.Reason(err))
			}
			for _, w := range tc.want {
				if !strings.Contains(refusal.Error(), w) {
					t.Errorf("refusal %q lacks %q", refusal.Error(), w)
				}
			}
			if strings.Contains(err.Error(), "exceeded maximum number of attempts") {
				t.Errorf("a refused connection was tried again: %v", err)
			}
		})
	}
}
