// Package objstore reaches the object store of a backup: it opens an S3-compatible
// bucket through gocloud.dev/blob (whose drivers also serve Google Cloud Storage and
// Azure Blob Storage, so another provider is one driver away), streams snapshots with
// their SHA-256, and reads and writes the manifest (whose layout is package layout).
// Only the Jobs' program uses it: the controller never reaches a store (an import rule
// of hack/devtools/importrules keeps internal/backup from depending on it).
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
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"

	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/layout"
)

// Config is an S3-compatible bucket and the secrets to reach it.
type Config struct {
	Bucket, Endpoint, Region string
	ForcePathStyle           bool
	AccessKeyID              string
	SecretAccessKey          string
	// CABundle, when set, are the PEM roots the endpoint's certificate is checked with.
	CABundle []byte
	// Policy is the operator's object-store endpoint policy, applied to every address
	// a request connects to, after DNS resolution. The zero policy is the default one.
	Policy validation.EndpointPolicy
}

// Timeouts of every request to a store.
const (
	// DialTimeout bounds connecting and the TLS handshake.
	DialTimeout = 5 * time.Second
	// ResponseTimeout bounds the wait for a response's headers once a request is sent.
	ResponseTimeout = 30 * time.Second
)

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
	// Every request is bounded: connecting, the TLS handshake, and the wait for the
	// response's headers. A body (a snapshot streamed for minutes) is bounded by the
	// caller's context and the Job's deadline. Every connection goes to an address the
	// endpoint policy admits.
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.DialContext = policyDialer(c.Policy)
		t.TLSClientConfig = tlsCfg
		t.TLSHandshakeTimeout = DialTimeout
		t.ResponseHeaderTimeout = ResponseTimeout
		t.ExpectContinueTimeout = time.Second
		t.IdleConnTimeout = 90 * time.Second
	})
	cfg := aws.Config{
		Region:           c.Region,
		Credentials:      credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, ""),
		HTTPClient:       httpClient,
		RetryMaxAttempts: 3,
		// A refused address stays refused: no new attempt.
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(notRefused)}, o.Retryables...)
			})
		},
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

// DialRefusedError is a connection the endpoint policy refused: the address a name
// resolved to (or the endpoint named) is one the operator does not let a Job reach.
type DialRefusedError struct {
	// Target is what the request asked for (host:port); Address what it resolved to.
	Target, Address string
	// Err is the policy's refusal (*validation.EndpointRefusedError).
	Err error
}

func (e *DialRefusedError) Error() string {
	if e.Target == e.Address {
		return fmt.Sprintf("connect to %s: %v", e.Address, e.Err)
	}
	return fmt.Sprintf("connect to %s (resolved to %s): %v", e.Target, e.Address, e.Err)
}

func (e *DialRefusedError) Unwrap() error { return e.Err }

// policyDialer connects only to addresses the policy admits. It checks each address
// just before connecting to it (net.Dialer's Control), after DNS resolution, so a name
// that resolves, or is pointed later, to the metadata service or the loopback is
// refused like the address itself; the host name is passed on for the allow-list's
// suffixes.
func policyDialer(p validation.EndpointPolicy) func(ctx context.Context, network, target string) (net.Conn, error) {
	return func(ctx context.Context, network, target string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(target)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", target, err)
		}
		if _, err := netip.ParseAddr(host); err == nil {
			host = "" // the endpoint names the address itself
		}
		d := &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second,
			Control: func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return fmt.Errorf("parse the address %s: %w", address, err)
				}
				if err := p.CheckAddress(host, ap.Addr()); err != nil {
					return &DialRefusedError{Target: target, Address: address, Err: err}
				}
				return nil
			}}
		return d.DialContext(ctx, network, target)
	}
}

// Refusal returns the endpoint policy's refusal of a connection that err holds, if any.
func Refusal(err error) (*DialRefusedError, bool) {
	var r *DialRefusedError
	return r, errors.As(err, &r)
}

// notRefused tells the SDK's retryer that a refused connection is not worth a retry.
func notRefused(err error) aws.Ternary {
	if _, ok := Refusal(err); ok {
		return aws.FalseTernary
	}
	return aws.UnknownTernary
}

// Reason classifies a store error: EndpointRefused (the endpoint policy refused the
// address), AccessDenied (refused credentials or permission), NotFound (no such object
// or bucket), or ObjectStoreUnreachable (anything else: the endpoint does not answer,
// TLS fails, the store errs).
func Reason(err error) string {
	if _, ok := Refusal(err); ok {
		return jobapi.ReasonEndpointRefused
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "Forbidden", "InvalidToken", "ExpiredToken":
			return jobapi.ReasonAccessDenied
		case "NoSuchBucket", "NoSuchKey", "NotFound":
			return jobapi.ReasonNotFound
		}
	}
	switch gcerrors.Code(err) {
	case gcerrors.PermissionDenied:
		return jobapi.ReasonAccessDenied
	case gcerrors.NotFound:
		return jobapi.ReasonNotFound
	}
	return jobapi.ReasonStoreUnreachable
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

// WriteManifest writes body, an encoded manifest (layout.EncodeManifest), as the
// manifest of the backup at dir.
func WriteManifest(ctx context.Context, b *blob.Bucket, dir string, body []byte) error {
	if _, err := layout.DecodeManifest(body); err != nil {
		return fmt.Errorf("write manifest %s: %w", layout.ManifestKey(dir), err)
	}
	if err := b.WriteAll(ctx, layout.ManifestKey(dir), body, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("write manifest %s: %w", layout.ManifestKey(dir), err)
	}
	return nil
}

// ReadManifest reads and checks the manifest of the backup at dir, reading at most
// layout.MaxManifestSize bytes of it: a larger one is ErrCorrupt.
func ReadManifest(ctx context.Context, b *blob.Bucket, dir string) (layout.Manifest, error) {
	key := layout.ManifestKey(dir)
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		return layout.Manifest{}, fmt.Errorf("read manifest %s: %w", key, err)
	}
	defer r.Close()
	if r.Size() > layout.MaxManifestSize {
		return layout.Manifest{}, fmt.Errorf("%w: manifest %s has %d bytes, more than %d", layout.ErrCorrupt, key, r.Size(), layout.MaxManifestSize)
	}
	body, err := io.ReadAll(io.LimitReader(r, layout.MaxManifestSize+1))
	if err != nil {
		return layout.Manifest{}, fmt.Errorf("read manifest %s: %w", key, err)
	}
	m, err := layout.DecodeManifest(body)
	if err != nil {
		return m, fmt.Errorf("manifest %s: %w", key, err)
	}
	return m, nil
}

// ErrCorrupt says an object is not what its manifest says.
var ErrCorrupt = layout.ErrCorrupt

// ErrNotABackup refuses a deletion of a folder that cannot be a backup's (the bucket's
// root, a path with "..").
var ErrNotABackup = errors.New("not the folder of a backup")

// noise is what the SDK's errors repeat that says nothing to a user: request IDs, and
// the wrapping of gocloud.dev/blob (the key is in the caller's own words).
var noise = regexp.MustCompile(`(RequestID|HostID): [^,]*, |https response error |blob (\(key "[^"]*"\) )?\(code=\w+\): `)

// Tidy shortens a store error's text for a message: without request IDs and the
// library's wrapping, the store's own code and words (at the end) fit a condition.
func Tidy(msg string) string { return noise.ReplaceAllString(msg, "") }

// DeleteBackup deletes the backup at dir: the manifest first (from then on it is no
// backup), then every other object under the folder. It returns how many objects it
// deleted.
func DeleteBackup(ctx context.Context, b *blob.Bucket, dir string) (int64, error) {
	dir = strings.Trim(dir, "/")
	if dir == "" || dir == "." || strings.Contains("/"+dir+"/", "/../") {
		return 0, fmt.Errorf("%w: %q", ErrNotABackup, dir)
	}
	var n int64
	err := b.Delete(ctx, layout.ManifestKey(dir))
	switch {
	case err == nil:
		n++
	case gcerrors.Code(err) != gcerrors.NotFound:
		return n, fmt.Errorf("delete manifest: %w", err)
	}
	it := b.List(&blob.ListOptions{Prefix: dir + "/"})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("list %s: %w", dir, err)
		}
		err = b.Delete(ctx, obj.Key)
		switch {
		case err == nil:
			n++
		case gcerrors.Code(err) != gcerrors.NotFound:
			return n, fmt.Errorf("delete %s: %w", obj.Key, err)
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
