// Package objstore reaches the object store of a backup: it opens an S3-compatible
// bucket through gocloud.dev/blob (whose drivers also serve Google Cloud Storage and
// Azure Blob Storage, so another provider is one driver away), lays out a backup's
// objects, streams snapshots with their SHA-256, and reads and writes the manifest.
//
// Invariants: a backup exists when, and only when, its manifest exists. The manifest is
// written after every shard's object is in place, and deleted before them; a failed
// stream is aborted, so no object is left that a manifest could name wrongly.
package objstore

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"
)

// Config is an S3-compatible bucket and the secrets to reach it.
type Config struct {
	Bucket, Endpoint, Region string
	ForcePathStyle           bool
	AccessKeyID              string
	SecretAccessKey          string
	// CABundle, when set, are the PEM roots the endpoint's certificate is checked with.
	CABundle []byte
}

// Open opens the bucket. It does not talk to the store: Probe does.
func Open(ctx context.Context, c Config) (*blob.Bucket, error) {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(c.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(c.CABundle) {
			return nil, errors.New("the CA bundle holds no PEM certificate")
		}
		tlsCfg.RootCAs = pool
	}
	httpClient := awshttp.NewBuildableClient().WithDialerOptions(func(d *net.Dialer) {
		d.Timeout = 5 * time.Second
	}).WithTransportOptions(func(t *http.Transport) {
		t.TLSClientConfig = tlsCfg
		t.TLSHandshakeTimeout = 5 * time.Second
		t.ResponseHeaderTimeout = 30 * time.Second
	})
	cfg := aws.Config{
		Region:           c.Region,
		Credentials:      credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, ""),
		HTTPClient:       httpClient,
		RetryMaxAttempts: 3,
		// Third-party S3 stores expect no trailing checksums (aws-chunked uploads).
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.ForcePathStyle
	})
	return s3blob.OpenBucket(ctx, client, c.Bucket, &s3blob.Options{
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
	})
}

// Reasons of a store error, as condition reasons.
const (
	ReasonUnreachable  = "ObjectStoreUnreachable"
	ReasonAccessDenied = "AccessDenied"
	ReasonNotFound     = "NotFound"
)

// Reason classifies a store error: AccessDenied (refused credentials or permission),
// NotFound (no such object or bucket), or ObjectStoreUnreachable (anything else: the
// endpoint does not answer, TLS fails, the store errs).
func Reason(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "Forbidden", "InvalidToken", "ExpiredToken":
			return ReasonAccessDenied
		case "NoSuchBucket", "NoSuchKey", "NotFound":
			return ReasonNotFound
		}
	}
	switch gcerrors.Code(err) {
	case gcerrors.PermissionDenied:
		return ReasonAccessDenied
	case gcerrors.NotFound:
		return ReasonNotFound
	}
	return ReasonUnreachable
}

// Probe checks that the bucket answers to these credentials by listing one object
// under prefix.
func Probe(ctx context.Context, b *blob.Bucket, prefix string) error {
	it := b.List(&blob.ListOptions{Prefix: prefix})
	_, err := it.Next(ctx)
	if err == io.EOF {
		return nil
	}
	return err
}

// ManifestName is the object, in a backup's folder, written last.
const ManifestName = "manifest.json"

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

// ManifestFormat is the format this code writes and reads.
const ManifestFormat = 1

// WriteManifest writes the manifest of the backup at dir.
func WriteManifest(ctx context.Context, b *blob.Bucket, dir string, m Manifest) error {
	m.Format = ManifestFormat
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := b.WriteAll(ctx, path.Join(dir, ManifestName), append(body, '\n'), &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("write manifest %s: %w", path.Join(dir, ManifestName), err)
	}
	return nil
}

// ReadManifest reads the manifest of the backup at dir.
func ReadManifest(ctx context.Context, b *blob.Bucket, dir string) (Manifest, error) {
	var m Manifest
	body, err := b.ReadAll(ctx, path.Join(dir, ManifestName))
	if err != nil {
		return m, fmt.Errorf("read manifest %s: %w", path.Join(dir, ManifestName), err)
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("%w: manifest %s: %w", ErrCorrupt, path.Join(dir, ManifestName), err)
	}
	if m.Format != ManifestFormat {
		return m, fmt.Errorf("%w: manifest %s has format %d, this operator reads %d", ErrCorrupt, path.Join(dir, ManifestName), m.Format, ManifestFormat)
	}
	return m, nil
}

// ErrCorrupt says an object is not what its manifest says.
var ErrCorrupt = errors.New("backup object corrupt")

// DeleteBackup deletes the backup at dir: the manifest first (from then on it is no
// backup), then every other object under the folder.
func DeleteBackup(ctx context.Context, b *blob.Bucket, dir string) error {
	if err := b.Delete(ctx, path.Join(dir, ManifestName)); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("delete manifest: %w", err)
	}
	it := b.List(&blob.ListOptions{Prefix: dir + "/"})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", dir, err)
		}
		if err := b.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return fmt.Errorf("delete %s: %w", obj.Key, err)
		}
	}
}

// Upload streams r into key. The object exists only if r ended with io.EOF and the
// store accepted it: any error aborts the upload. It returns the size and the hex
// SHA-256 of what was stored.
func Upload(ctx context.Context, b *blob.Bucket, key string, r io.Reader) (int64, string, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.NewWriter(wctx, key, &blob.WriterOptions{
		ContentType: "application/octet-stream",
		// 16 MiB parts, two in flight: memory stays bounded whatever the snapshot size.
		BufferSize: 16 << 20, MaxConcurrency: 2,
	})
	if err != nil {
		return 0, "", fmt.Errorf("open %s: %w", key, err)
	}
	h := sha256.New()
	n, err := io.Copy(w, io.TeeReader(r, h))
	if err != nil {
		cancel() // aborts the multipart upload: nothing is stored
		_ = w.Close()
		return n, "", fmt.Errorf("upload %s after %d bytes: %w", key, n, err)
	}
	if err := w.Close(); err != nil {
		return n, "", fmt.Errorf("complete %s: %w", key, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// VerifyingReader reads an object and fails at its end unless its size and SHA-256 are
// the manifest's.
type VerifyingReader struct {
	r      io.Reader
	h      hash.Hash
	n      int64
	size   int64
	sha256 string
	key    string
}

// OpenVerified opens key for reading with the size and digest it must have.
func OpenVerified(ctx context.Context, b *blob.Bucket, key string, size int64, sha string) (*VerifyingReader, io.Closer, error) {
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", key, err)
	}
	return &VerifyingReader{r: r, h: sha256.New(), size: size, sha256: strings.ToLower(sha), key: key}, r, nil
}

// Read implements io.Reader; the last read returns ErrCorrupt instead of io.EOF on a
// mismatch.
func (v *VerifyingReader) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if err == io.EOF {
		if v.n != v.size {
			return n, fmt.Errorf("%w: %s has %d bytes, the manifest says %d", ErrCorrupt, v.key, v.n, v.size)
		}
		if got := hex.EncodeToString(v.h.Sum(nil)); got != v.sha256 {
			return n, fmt.Errorf("%w: %s has SHA-256 %s, the manifest says %s", ErrCorrupt, v.key, got, v.sha256)
		}
	}
	return n, err
}
