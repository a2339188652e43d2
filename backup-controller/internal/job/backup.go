package job

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/objstore"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/rdb"
	"github.com/valkey-operator/valkey-operator/valkey"
)

type backupFlags struct {
	server serverFlags
	addr   string
	object string
	// role is the role the controller chose the source for: a replica must still be
	// one, with its link up, when the transfer starts.
	role string
}

func (f *backupFlags) register(fs *flag.FlagSet) {
	f.server.register(fs, v1alpha1.UserBackup)
	fs.StringVar(&f.addr, "addr", "", "host:port of the source server")
	fs.StringVar(&f.object, "object", "", "object key of the snapshot")
	fs.StringVar(&f.role, "role", valkey.RoleReplica, "role the source must have: replica or primary")
}

// runBackup streams one snapshot into the store.
func runBackup(ctx context.Context, s storeFlags, f backupFlags) jobapi.Result {
	if f.addr == "" || f.object == "" {
		return fail(jobapi.ReasonInvalid, errors.New("--addr and --object are required"))
	}
	cfg, err := s.config()
	if err != nil {
		return fail(jobapi.ReasonInvalid, err)
	}
	pw, err := f.server.password()
	if err != nil {
		return fail(jobapi.ReasonInvalid, err)
	}
	tlsCfg, err := f.server.tls()
	if err != nil {
		return fail(jobapi.ReasonInvalid, err)
	}
	bucket, err := objstore.Open(ctx, cfg)
	if err != nil {
		return fail(jobapi.ReasonStoreUnreachable, err)
	}
	defer bucket.Close()
	// Fail on the store before the source forks a snapshot for nothing.
	pctx, cancel := context.WithTimeout(ctx, storeStepTimeout)
	err = objstore.Probe(pctx, bucket, f.object)
	cancel()
	if err != nil {
		return fail(objstore.Reason(err), fmt.Errorf("object store: %w", err))
	}
	snap, err := rdb.Open(ctx, rdb.Options{Addr: f.addr, Username: f.server.user, Password: pw, TLS: tlsCfg})
	if err != nil {
		return fail(snapshotReason(err), err)
	}
	defer snap.Close()
	repl := snap.Source.Replication
	if f.role == valkey.RoleReplica && (repl.Role != valkey.RoleReplica || !repl.LinkUp) {
		return fail(jobapi.ReasonSourceNotInSync, fmt.Errorf("%s is %s with its link %s: not a replica in sync", f.addr, repl.Role, linkState(repl.LinkUp)))
	}
	size, sum, err := objstore.Upload(ctx, bucket, f.object, snap)
	if err != nil {
		if errors.Is(err, rdb.ErrSourceLost) || errors.Is(err, rdb.ErrChecksum) {
			return fail(snapshotReason(err), err)
		}
		return fail(objstore.Reason(err), err)
	}
	h, _ := snap.Header()
	res := jobapi.Result{Object: f.object, Size: size, SHA256: sum, RDBVersion: h.Version, Role: repl.Role,
		ValkeyVersion: snap.Source.Version.String()}
	if h.KeysKnown {
		res.Keys = h.Keys
	}
	if h.ValkeyVersion != "" {
		res.ValkeyVersion = h.ValkeyVersion
	}
	return res
}

func snapshotReason(err error) string {
	switch {
	case errors.Is(err, rdb.ErrAuth):
		return jobapi.ReasonAuthFailed
	case errors.Is(err, rdb.ErrRefused):
		return jobapi.ReasonRefused
	default:
		return jobapi.ReasonSourceLost
	}
}

func linkState(up bool) string {
	if up {
		return "up"
	}
	return "down"
}
