package job

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/layout"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/objstore"
)

type fetchFlags struct {
	dir     string
	shard   int
	shards  int
	out     string
	timeout time.Duration
}

func (f *fetchFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dir, "dir", "", "folder of the backup (its status.path)")
	fs.IntVar(&f.shard, "shard", -1, "index of the backed-up shard to fetch")
	fs.IntVar(&f.shards, "shards", 0, "shard count of the manifest the controller read")
	fs.StringVar(&f.out, "out", "/data/dump.rdb", "where the snapshot is written")
	fs.DurationVar(&f.timeout, "manifest-timeout", storeStepTimeout, "how long reading the manifest may take")
}

// runFetch reads the backup's manifest, then downloads its shard's snapshot into the
// private server's data directory; the file appears there only once its size and
// digest matched the manifest's.
func runFetch(ctx context.Context, s storeFlags, f fetchFlags) jobapi.Result {
	if f.dir == "" || f.shard < 0 || f.shards < 1 || f.shard >= f.shards {
		return fail(jobapi.ReasonInvalid, errors.New("--dir, --shard and --shards (more than --shard) are required"))
	}
	cfg, err := s.config()
	if err != nil {
		return fail(jobapi.ReasonInvalid, err)
	}
	bucket, err := objstore.Open(ctx, cfg)
	if err != nil {
		return fail(jobapi.ReasonStoreUnreachable, err)
	}
	defer bucket.Close()
	mctx, cancel := context.WithTimeout(ctx, f.timeout)
	m, err := objstore.ReadManifest(mctx, bucket, f.dir)
	cancel()
	switch {
	case errors.Is(err, layout.ErrCorrupt):
		return fail(jobapi.ReasonChecksumMismatch, err)
	case err != nil:
		return fail(objstore.Reason(err), err)
	case len(m.Shards) != f.shards:
		return fail(jobapi.ReasonChecksumMismatch, fmt.Errorf("the manifest of %s names %d shards, %d when the restore started: it changed", f.dir, len(m.Shards), f.shards))
	}
	sh, _ := m.Shard(int32(f.shard))
	object := path.Join(f.dir, sh.Object)
	r, closer, err := objstore.OpenVerified(ctx, bucket, object, sh.Size, sh.SHA256)
	if err != nil {
		return fail(objstore.Reason(err), err)
	}
	defer closer.Close()
	tmp, err := os.CreateTemp(filepath.Dir(f.out), ".fetch-*")
	if err != nil {
		return fail(jobapi.ReasonInvalid, err)
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, r)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case errors.Is(err, layout.ErrCorrupt):
		return fail(jobapi.ReasonChecksumMismatch, err)
	case err != nil:
		return fail(objstore.Reason(err), fmt.Errorf("download %s after %d bytes: %w", object, n, err))
	}
	if err := os.Rename(tmp.Name(), f.out); err != nil {
		return fail(jobapi.ReasonInvalid, err)
	}
	return jobapi.Result{Object: object, Size: n, SHA256: sh.SHA256}
}

type loadFlags struct {
	server   serverFlags
	source   string
	cluster  string
	workers  int
	batch    int
	waitLoad time.Duration
}

func (f *loadFlags) register(fs *flag.FlagSet) {
	f.server.register(fs, v1alpha1.UserRestore)
	fs.StringVar(&f.source, "source", "127.0.0.1:6380", "host:port of the private server holding the snapshot")
	fs.StringVar(&f.cluster, "cluster", "", "host:port of the new cluster (its client Service)")
	fs.IntVar(&f.workers, "workers", 8, "batches restored in parallel")
	fs.IntVar(&f.batch, "batch", 500, "keys per batch")
	fs.DurationVar(&f.waitLoad, "load-timeout", 30*time.Minute, "how long the private server may take to load the snapshot")
}

// runLoad copies every key of the private server into the cluster.
func runLoad(ctx context.Context, f loadFlags) jobapi.Result {
	if f.cluster == "" {
		return fail(jobapi.ReasonInvalid, errors.New("--cluster is required"))
	}
	pw, err := f.server.password()
	if err != nil {
		return fail(jobapi.ReasonInvalid, err)
	}
	tlsCfg, err := f.server.tls()
	if err != nil {
		return fail(jobapi.ReasonInvalid, err)
	}
	src, err := waitLoaded(ctx, f.source, f.waitLoad)
	if err != nil {
		return fail(jobapi.ReasonLoadFailed, err)
	}
	defer src.Close()
	dst, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{f.cluster}, Username: f.server.user, Password: pw, TLSConfig: tlsCfg,
		DisableCache: true, AlwaysRESP2: true, ClientSetInfo: rueidis.DisableClientSetInfo,
		ShuffleInit: true, ConnWriteTimeout: 30 * time.Second,
	})
	if err != nil {
		return fail(jobapi.ReasonRestoreFailed, fmt.Errorf("connect to the cluster at %s: %w", f.cluster, err))
	}
	defer dst.Close()
	restored, expired, err := Copy(ctx, src, dst, f.workers, f.batch)
	if err != nil {
		return fail(jobapi.ReasonRestoreFailed, fmt.Errorf("after %d keys: %w", restored, err))
	}
	return jobapi.Result{Restored: restored, Expired: expired}
}

// waitLoaded connects to the private server and waits until it has loaded its
// snapshot; a server that exits (a snapshot it cannot load) is reported with its error.
func waitLoaded(ctx context.Context, addr string, timeout time.Duration) (rueidis.Client, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true,
			DisableCache: true, AlwaysRESP2: true, ClientSetInfo: rueidis.DisableClientSetInfo})
		if err == nil {
			info, ierr := c.Do(ctx, c.B().Info().Section("persistence").Build()).ToString()
			if ierr == nil && strings.Contains(info, "loading:0") {
				return c, nil
			}
			c.Close()
			err = ierr
			if err == nil {
				err = errors.New("still loading")
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("the private server at %s did not load the snapshot within %s (it refuses a snapshot it cannot read; see its log): %w", addr, timeout, last)
}

// Copy moves every key of src into dst: SCAN, then per batch DUMP and PTTL on src and
// RESTORE key ttl payload REPLACE on dst (REPLACE makes a retried Job idempotent).
// Keys that expire between SCAN and DUMP are counted as expired.
func Copy(ctx context.Context, src, dst rueidis.Client, workers, batch int) (restored, expired int64, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []string, workers)
	var firstErr error
	var once sync.Once
	setErr := func(e error) {
		once.Do(func() { firstErr = e; cancel() })
	}
	var nRestored, nExpired atomic.Int64
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for keys := range batches {
				r, e, err := copyBatch(ctx, src, dst, keys)
				nRestored.Add(r)
				nExpired.Add(e)
				if err != nil {
					setErr(err)
				}
			}
		}()
	}
	cursor := uint64(0)
	var pending []string
scan:
	for {
		entry, serr := src.Do(ctx, src.B().Scan().Cursor(cursor).Count(int64(batch)).Build()).AsScanEntry()
		if serr != nil {
			setErr(fmt.Errorf("scan the snapshot: %w", serr))
			break
		}
		pending = append(pending, entry.Elements...)
		for len(pending) >= batch {
			select {
			case batches <- pending[:batch]:
			case <-ctx.Done():
				break scan
			}
			pending = pending[batch:]
		}
		cursor = entry.Cursor
		if cursor == 0 {
			break
		}
	}
	if len(pending) > 0 && ctx.Err() == nil {
		batches <- pending
	}
	close(batches)
	wg.Wait()
	return nRestored.Load(), nExpired.Load(), firstErr
}

func copyBatch(ctx context.Context, src, dst rueidis.Client, keys []string) (restored, expired int64, err error) {
	cmds := make(rueidis.Commands, 0, 2*len(keys))
	for _, k := range keys {
		cmds = append(cmds, src.B().Dump().Key(k).Build(), src.B().Pttl().Key(k).Build())
	}
	replies := src.DoMulti(ctx, cmds...)
	restores := make(rueidis.Commands, 0, len(keys))
	for i, k := range keys {
		payload, derr := replies[2*i].ToString()
		if rueidis.IsRedisNil(derr) {
			expired++
			continue
		}
		if derr != nil {
			return 0, expired, fmt.Errorf("dump %q: %w", k, derr)
		}
		ttl, terr := replies[2*i+1].AsInt64()
		if terr != nil {
			return 0, expired, fmt.Errorf("pttl %q: %w", k, terr)
		}
		switch {
		case ttl == -2: // gone between DUMP and PTTL
			expired++
			continue
		case ttl < 0:
			ttl = 0 // no expiry
		}
		// Pinned: a command refused with a transient error is sent again.
		restores = append(restores, dst.B().Restore().Key(k).Ttl(ttl).SerializedValue(payload).Replace().Build().Pin())
	}
	n, err := restoreWithRetry(ctx, dst, restores, transientFor)
	return n, expired, err
}

// transientFor is how long a batch keeps being retried while the cluster answers with
// transient errors: a cluster whose every slot is assigned may still say CLUSTERDOWN
// until every member has heard of the assignment.
const transientFor = 2 * time.Minute

// restoreWithRetry sends the RESTOREs and sends again those refused by a transient
// error (CLUSTERDOWN, TRYAGAIN, LOADING, a dropped connection), with a growing pause,
// for at most within; REPLACE makes a repeated RESTORE harmless.
func restoreWithRetry(ctx context.Context, dst rueidis.Client, cmds rueidis.Commands, within time.Duration) (int64, error) {
	deadline := time.Now().Add(within)
	var done int64
	pending := cmds
	for attempt := 1; ; attempt++ {
		var again rueidis.Commands
		var last error
		for i, r := range dst.DoMulti(ctx, pending...) {
			err := r.Error()
			switch {
			case err == nil:
				done++
			case transient(err):
				again = append(again, pending[i])
				last = err
			default:
				return done, fmt.Errorf("restore: %w", err)
			}
		}
		if len(again) == 0 {
			return done, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return done, fmt.Errorf("restore: the cluster kept refusing for %s: %w", within, last)
		}
		select {
		case <-ctx.Done():
			return done, ctx.Err()
		case <-time.After(time.Duration(min(attempt, 8)) * 250 * time.Millisecond):
		}
		pending = again
	}
}

// transient reports whether a RESTORE may pass if sent again.
func transient(err error) bool {
	if ve, ok := rueidis.IsRedisErr(err); ok {
		msg := ve.Error()
		for _, p := range []string{"CLUSTERDOWN", "TRYAGAIN", "LOADING", "MASTERDOWN"} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	return !errors.Is(err, context.Canceled)
}
