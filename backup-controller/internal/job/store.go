package job

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/layout"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/objstore"
)

// storeStepTimeout bounds a store step (every request of it, its retries included)
// unless --timeout says otherwise; each request is bounded on its own too (objstore).
const storeStepTimeout = 2 * time.Minute

// storeStepFlags are the flags of the store steps.
type storeStepFlags struct {
	// prefix is where a probe lists (store-probe).
	prefix string
	// dir is the backup's folder (manifest-write, manifest-read, store-delete).
	dir string
	// manifestFile holds the manifest to write (manifest-write).
	manifestFile string
	timeout      time.Duration
}

func (f *storeStepFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.prefix, "prefix", "", "prefix a probe lists under")
	fs.StringVar(&f.dir, "dir", "", "folder of the backup")
	fs.StringVar(&f.manifestFile, "manifest-file", "", "file holding the manifest to write")
	fs.DurationVar(&f.timeout, "timeout", storeStepTimeout, "how long the step may take")
}

// runStoreStep runs one of the store steps within its timeout.
func runStoreStep(ctx context.Context, name string, s storeFlags, f storeStepFlags) jobapi.Result {
	if name != jobapi.CmdStoreProbe && f.dir == "" {
		return fail(jobapi.ReasonInvalid, errors.New("--dir is required"))
	}
	var body []byte
	if name == jobapi.CmdManifestWrite {
		var err error
		if body, err = readManifestFile(f.manifestFile); err != nil {
			return fail(jobapi.ReasonInvalid, err)
		}
	}
	cfg, err := s.config()
	if err != nil {
		return fail(jobapi.ReasonInvalid, err)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	bucket, err := objstore.Open(ctx, cfg)
	if err != nil {
		return fail(jobapi.ReasonStoreUnreachable, err)
	}
	defer bucket.Close()
	switch name {
	case jobapi.CmdStoreProbe:
		if err := objstore.Probe(ctx, bucket, f.prefix); err != nil {
			return fail(objstore.Reason(err), fmt.Errorf("list the bucket: %w", err))
		}
		return jobapi.Result{}
	case jobapi.CmdManifestWrite:
		if err := objstore.WriteManifest(ctx, bucket, f.dir, body); err != nil {
			return fail(objstore.Reason(err), err)
		}
		return jobapi.Result{Object: layout.ManifestKey(f.dir), Size: int64(len(body))}
	case jobapi.CmdManifestRead:
		m, err := objstore.ReadManifest(ctx, bucket, f.dir)
		switch {
		case errors.Is(err, layout.ErrCorrupt):
			return fail(jobapi.ReasonChecksumMismatch, err)
		case err != nil:
			return fail(objstore.Reason(err), err)
		}
		sum := m.Summary()
		return jobapi.Result{Object: layout.ManifestKey(f.dir), Manifest: &sum}
	default:
		n, err := objstore.DeleteBackup(ctx, bucket, f.dir)
		if errors.Is(err, objstore.ErrNotABackup) {
			return fail(jobapi.ReasonInvalid, err)
		}
		if err != nil {
			return fail(objstore.Reason(err), fmt.Errorf("after %d objects: %w", n, err))
		}
		return jobapi.Result{Objects: n}
	}
}

// readManifestFile reads the manifest to write, at most layout.MaxManifestSize bytes,
// and checks it decodes.
func readManifestFile(name string) ([]byte, error) {
	if name == "" {
		return nil, errors.New("--manifest-file is required")
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read the manifest: %w", err)
	}
	defer f.Close()
	body, err := io.ReadAll(io.LimitReader(f, layout.MaxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("read the manifest: %w", err)
	}
	if _, err := layout.DecodeManifest(body); err != nil {
		return nil, err
	}
	return body, nil
}
