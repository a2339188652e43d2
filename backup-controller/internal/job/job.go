// Package job is the program of the backup and restore Jobs (subcommands of the
// backup-controller binary, which the Jobs run from the operator image):
//
//   - backup: take one shard's snapshot from a server over the replication protocol
//     and stream it into the object store with its SHA-256;
//   - restore-fetch: download one shard's snapshot, checking its size and SHA-256
//     against the manifest, into the data directory of a private valkey-server;
//   - restore-load: once that server has loaded it, copy every key with its TTL into
//     the new cluster (DUMP / PTTL there, RESTORE ... REPLACE here) through a
//     cluster-aware client.
//
// A Job talks to Kubernetes not at all: its inputs are flags, the password of the one
// user it logs in as (a mounted file), the store's credentials (environment), and its
// outcome is a Result, written as the container's termination message, which the
// backup-controller reads. No secret is ever part of a Result.
package job

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/valkey-operator/valkey-operator/backup-controller/internal/objstore"
	"github.com/valkey-operator/valkey-operator/valkey"

	"crypto/tls"
)

// Subcommands of the backup-controller binary that run a Job's work.
const (
	CmdBackup       = "backup"
	CmdRestoreFetch = "restore-fetch"
	CmdRestoreLoad  = "restore-load"
)

// IsJob reports whether args (without the program name) start a Job's subcommand.
func IsJob(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case CmdBackup, CmdRestoreFetch, CmdRestoreLoad:
		return true
	}
	return false
}

// Environment variables of the store's credentials (from the user's Secret).
const (
	EnvAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
)

// Reasons of a Result beyond the object store's (objstore.Reason*).
const (
	// ReasonSourceLost: the server went away or broke the link mid-transfer; another
	// member may serve a new attempt.
	ReasonSourceLost = "SourceLost"
	// ReasonSourceNotInSync: the replica's own link to its primary is down.
	ReasonSourceNotInSync = "SourceNotInSync"
	// ReasonAuthFailed: the server refused the user's password (for example during a
	// rotation of the system passwords); a new attempt may pass.
	ReasonAuthFailed = "AuthenticationFailed"
	// ReasonRefused: the server refused the handshake (ACL).
	ReasonRefused = "Refused"
	// ReasonChecksumMismatch: an object is not what the manifest says.
	ReasonChecksumMismatch = "ChecksumMismatch"
	// ReasonLoadFailed: the private server did not load the snapshot.
	ReasonLoadFailed = "LoadFailed"
	// ReasonRestoreFailed: the cluster refused keys.
	ReasonRestoreFailed = "RestoreFailed"
	// ReasonInvalid: the Job's own arguments are wrong (an operator bug).
	ReasonInvalid = "InvalidArguments"
)

// Result is a Job's outcome, its container's termination message (at most 4 KiB).
type Result struct {
	// Reason is empty on success.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Of a backup.
	Object        string `json:"object,omitempty"`
	Size          int64  `json:"size,omitempty"`
	SHA256        string `json:"sha256,omitempty"`
	Keys          int64  `json:"keys,omitempty"`
	RDBVersion    int    `json:"rdbVersion,omitempty"`
	ValkeyVersion string `json:"valkeyVersion,omitempty"`
	Role          string `json:"role,omitempty"`
	// Of a restore: keys written, and keys that expired before they could be.
	Restored int64 `json:"restored,omitempty"`
	Expired  int64 `json:"expired,omitempty"`
}

// ParseResult reads a termination message.
func ParseResult(msg string) (Result, error) {
	var r Result
	err := json.Unmarshal([]byte(strings.TrimSpace(msg)), &r)
	return r, err
}

// Main runs a subcommand and exits: 0 on success, 1 on failure (with the Result).
func Main(args []string) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	res := Run(ctx, args)
	stop()
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	if f := resultFile(args); f != "" {
		if err := os.WriteFile(f, out, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "write the result to %s: %v\n", f, err)
		}
	}
	if res.Reason != "" {
		os.Exit(1)
	}
}

// resultFile finds --result-file in args (default /dev/termination-log).
func resultFile(args []string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--result-file="); ok {
			return v
		}
		if a == "--result-file" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return "/dev/termination-log"
}

// Run runs a subcommand and returns its Result.
func Run(ctx context.Context, args []string) Result {
	if !IsJob(args) {
		return fail(ReasonInvalid, fmt.Errorf("unknown subcommand %q", strings.Join(args[:min(1, len(args))], "")))
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.String("result-file", "/dev/termination-log", "where the result is written (the termination message)")
	var store storeFlags
	store.register(fs)
	switch args[0] {
	case CmdBackup:
		var f backupFlags
		f.register(fs)
		if err := fs.Parse(args[1:]); err != nil {
			return fail(ReasonInvalid, err)
		}
		return runBackup(ctx, store, f)
	case CmdRestoreFetch:
		var f fetchFlags
		f.register(fs)
		if err := fs.Parse(args[1:]); err != nil {
			return fail(ReasonInvalid, err)
		}
		return runFetch(ctx, store, f)
	default:
		var f loadFlags
		f.register(fs)
		if err := fs.Parse(args[1:]); err != nil {
			return fail(ReasonInvalid, err)
		}
		return runLoad(ctx, f)
	}
}

// fail builds a failed Result; the message is cut to fit a termination message.
func fail(reason string, err error) Result {
	msg := err.Error()
	if len(msg) > 1500 {
		msg = msg[:1500] + "..."
	}
	return Result{Reason: reason, Message: msg}
}

// storeFlags say where the object store is; the credentials come from the environment.
type storeFlags struct {
	bucket, endpoint, region, caFile string
	pathStyle                        bool
}

func (s *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.bucket, "bucket", "", "bucket")
	fs.StringVar(&s.endpoint, "endpoint", "", "S3 endpoint URL (empty: AWS)")
	fs.StringVar(&s.region, "region", "us-east-1", "region")
	fs.BoolVar(&s.pathStyle, "path-style", false, "path-style addressing")
	fs.StringVar(&s.caFile, "ca-bundle-file", "", "PEM roots of the endpoint's certificate")
}

func (s storeFlags) config() (objstore.Config, error) {
	c := objstore.Config{Bucket: s.bucket, Endpoint: s.endpoint, Region: s.region, ForcePathStyle: s.pathStyle,
		AccessKeyID: os.Getenv(EnvAccessKeyID), SecretAccessKey: os.Getenv(EnvSecretAccessKey)}
	if s.bucket == "" {
		return c, errors.New("--bucket is required")
	}
	if s.caFile != "" {
		b, err := os.ReadFile(s.caFile)
		if err != nil {
			return c, fmt.Errorf("read the CA bundle: %w", err)
		}
		c.CABundle = b
	}
	return c, nil
}

// serverFlags say how to log in to a Valkey server.
type serverFlags struct {
	user, passwordFile, tlsCAFile string
}

func (s *serverFlags) register(fs *flag.FlagSet, user string) {
	fs.StringVar(&s.user, "user", user, "Valkey user")
	fs.StringVar(&s.passwordFile, "password-file", "", "file holding the user's password")
	fs.StringVar(&s.tlsCAFile, "tls-ca-file", "", "CA of the members' certificates (TLS clusters)")
}

func (s serverFlags) password() (string, error) {
	if s.passwordFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(s.passwordFile)
	if err != nil {
		return "", fmt.Errorf("read the password: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// tls returns the client TLS configuration, nil without a CA file. Members are
// identified by the CA: their certificates name the Services, not the pod IPs.
func (s serverFlags) tls() (*tls.Config, error) {
	if s.tlsCAFile == "" {
		return nil, nil
	}
	b, err := os.ReadFile(s.tlsCAFile)
	if err != nil {
		return nil, fmt.Errorf("read the TLS CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no certificate", s.tlsCAFile)
	}
	return valkey.VerifyChainOnly(pool), nil
}
