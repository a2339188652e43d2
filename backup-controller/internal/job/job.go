// Package job is the program of the backup-controller's Jobs (subcommands of the
// backup-controller binary, which the Jobs run from the operator image, in the
// namespace of the cluster): every byte the operator reads from or writes to an object
// store passes here, never through the controller's own process.
//
//   - backup: take one shard's snapshot from a server over the replication protocol
//     and stream it into the object store with its SHA-256;
//   - restore-fetch: read the backup's manifest, then download one shard's snapshot,
//     checking its size and SHA-256, into the data directory of a private valkey-server;
//   - restore-load: once that server has loaded it, copy every key with its TTL into
//     the new cluster (DUMP / PTTL there, RESTORE ... REPLACE here) through a
//     cluster-aware client;
//   - store-probe, manifest-write, manifest-read, store-delete: the store steps of a
//     backup's life (check the store before a backup, write its manifest last, read
//     and check it for a restore, delete its objects), each bounded by --timeout.
//
// A Job talks to Kubernetes not at all: its inputs are flags, mounted files (the
// password of the one user it logs in as, a manifest to write), the store's credentials
// (environment), and its outcome is a jobapi.Result, written as the container's
// termination message, which the backup-controller reads. No secret is ever part of a
// Result.
//
// A Job connects to a store only at addresses the operator's object-store endpoint
// policy admits (its flags, which the backup-controller passes on from its own): each
// address is checked after DNS resolution, just before connecting, and a refused one
// fails the step with EndpointRefused (objstore.Refusal).
package job

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/objstore"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// IsJob reports whether args (without the program name) start a Job's subcommand.
func IsJob(args []string) bool {
	return len(args) > 0 && slices.Contains(jobapi.Commands, args[0])
}

// Main runs a subcommand and exits: 0 on success, 1 on failure (with the Result).
func Main(args []string) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	res := Run(ctx, args)
	stop()
	out := res.Encode()
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

// Run runs a subcommand and returns its Result. The Result's message never holds the
// store's credentials or the server password the Job read, and is cut to
// jobapi.MaxMessage characters; the whole message goes to the log (stderr).
func Run(ctx context.Context, args []string) jobapi.Result {
	if !IsJob(args) {
		return fail(jobapi.ReasonInvalid, fmt.Errorf("unknown subcommand %q", strings.Join(args[:min(1, len(args))], "")))
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("result-file", "/dev/termination-log", "where the result is written (the termination message)")
	var store storeFlags
	store.register(fs)
	run := subcommand(args[0], fs, &store)
	var res jobapi.Result
	if err := fs.Parse(args[1:]); err != nil {
		res = fail(jobapi.ReasonInvalid, err)
	} else {
		res = run(ctx)
	}
	if res.Reason != "" {
		res.Message = objstore.Tidy(jobapi.Redact(res.Message, secrets(fs)...))
		fmt.Fprintf(os.Stderr, "%s failed: %s: %s\n", args[0], res.Reason, res.Message)
		res.Message = jobapi.CleanMessage(res.Message)
	}
	return res
}

// subcommand registers the flags of a subcommand and returns its work.
// store is read when the work runs, after the flags were parsed.
func subcommand(name string, fs *flag.FlagSet, store *storeFlags) func(context.Context) jobapi.Result {
	switch name {
	case jobapi.CmdBackup:
		var f backupFlags
		f.register(fs)
		return func(ctx context.Context) jobapi.Result { return runBackup(ctx, *store, f) }
	case jobapi.CmdRestoreFetch:
		var f fetchFlags
		f.register(fs)
		return func(ctx context.Context) jobapi.Result { return runFetch(ctx, *store, f) }
	case jobapi.CmdRestoreLoad:
		var f loadFlags
		f.register(fs)
		return func(ctx context.Context) jobapi.Result { return runLoad(ctx, f) }
	default:
		var f storeStepFlags
		f.register(fs)
		return func(ctx context.Context) jobapi.Result { return runStoreStep(ctx, name, *store, f) }
	}
}

// secrets are the values a Result must not show: the store's credentials and the
// password of the server user, if the Job read one.
func secrets(fs *flag.FlagSet) []string {
	out := []string{os.Getenv(jobapi.EnvAccessKeyID), os.Getenv(jobapi.EnvSecretAccessKey)}
	if f := fs.Lookup("password-file"); f != nil && f.Value.String() != "" {
		if pw, err := (serverFlags{passwordFile: f.Value.String()}).password(); err == nil {
			out = append(out, pw)
		}
	}
	return out
}

// fail builds a failed Result. A connection the endpoint policy refused fails with
// EndpointRefused and the refusal alone as the message, whatever the step was doing.
func fail(reason string, err error) jobapi.Result {
	if refusal, ok := objstore.Refusal(err); ok {
		return jobapi.Result{Reason: jobapi.ReasonEndpointRefused, Message: refusal.Error()}
	}
	return jobapi.Result{Reason: reason, Message: err.Error()}
}

// storeFlags say where the object store is, and which addresses the Job may connect to
// (the operator's endpoint policy, which the backup-controller passes on); the
// credentials come from the environment.
type storeFlags struct {
	bucket, endpoint, region, caFile string
	pathStyle                        bool
	allowedEndpoints, apiAddresses   string
}

func (s *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.bucket, "bucket", "", "bucket")
	fs.StringVar(&s.endpoint, "endpoint", "", "S3 endpoint URL (empty: AWS)")
	fs.StringVar(&s.region, "region", "us-east-1", "region")
	fs.BoolVar(&s.pathStyle, "path-style", false, "path-style addressing")
	fs.StringVar(&s.caFile, "ca-bundle-file", "", "PEM roots of the endpoint's certificate")
	fs.StringVar(&s.allowedEndpoints, validation.FlagAllowedEndpoints, "",
		"host name suffixes and CIDRs the store's addresses must be in (the operator's policy)")
	fs.StringVar(&s.apiAddresses, validation.FlagKubernetesAPIAddresses, "",
		"addresses of the Kubernetes API server, never connected to (the operator's policy)")
}

func (s storeFlags) config() (objstore.Config, error) {
	c := objstore.Config{Bucket: s.bucket, Endpoint: s.endpoint, Region: s.region, ForcePathStyle: s.pathStyle,
		AccessKeyID: os.Getenv(jobapi.EnvAccessKeyID), SecretAccessKey: os.Getenv(jobapi.EnvSecretAccessKey)}
	if s.bucket == "" {
		return c, errors.New("--bucket is required")
	}
	policy, err := validation.ParseEndpointPolicy(s.allowedEndpoints, s.apiAddresses)
	if err != nil {
		return c, err
	}
	c.Policy = policy
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
