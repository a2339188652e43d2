// Command webhooks serves the validating admission webhooks of the valkey operator:
// ValkeyCluster objects must pass the api/validation rules, and ValkeyNode objects may
// be created and changed only by the operator's own service accounts.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/version"
	"github.com/valkey-operator/valkey-operator/webhooks/internal/handlers"
	"github.com/valkey-operator/valkey-operator/webhooks/internal/server"
)

// The metrics endpoint checks its clients (internal/operator.MetricsOptions).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

func main() {
	opts, zapOpts, err := parseFlags(flag.CommandLine, os.Args[1:])
	if errors.Is(err, errPrintVersion) {
		fmt.Println(version.String("webhooks"))
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("webhooks")
	operator.TuneRuntime(log)
	mgr, err := server.NewManager(ctrl.GetConfigOrDie(), opts)
	if err != nil {
		log.Error(err, "set up the webhooks")
		os.Exit(1)
	}
	log.Info("starting", "version", version.Version, "revision", version.Revision, "certMode", opts.CertMode, "operators", opts.Operators.String())
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "run the webhooks")
		os.Exit(1)
	}
}

// errPrintVersion is parseFlags' answer to --version: print it, check nothing else.
var errPrintVersion = errors.New("print the version")

// parseFlags reads the command line into the server options and the logger options.
func parseFlags(fs *flag.FlagSet, args []string) (server.Options, zap.Options, error) {
	var (
		o                             server.Options
		zapOpts                       zap.Options
		certMode, certSecret, service string
		operators                     string
	)
	fs.StringVar(&certMode, "cert-mode", string(server.CertModeExternal),
		"where the serving certificate comes from: external (tls.crt and tls.key in --cert-dir, e.g. from cert-manager) "+
			"or self-signed (issued, stored in --cert-secret and rotated by this binary)")
	fs.StringVar(&o.CertDir, "cert-dir", "", "directory holding tls.crt and tls.key in external mode "+
		"(default: controller-runtime's <tmp>/k8s-webhook-server/serving-certs)")
	fs.StringVar(&certSecret, "cert-secret", "", "<namespace>/<name> of the Secret self-signed mode keeps its CA and certificate in")
	fs.StringVar(&o.WebhookConfiguration, "webhook-config-name", "",
		"ValidatingWebhookConfiguration whose caBundle self-signed mode sets")
	fs.StringVar(&service, "webhook-service", "", "<namespace>/<name> of the webhook Service; "+
		"self-signed certificates cover <name>.<namespace>.svc and <name>.<namespace>.svc.cluster.local "+
		"(namespace defaults to that of --cert-secret)")
	fs.StringVar(&o.Host, "webhook-host", "", "address the webhook server listens on (all when empty)")
	fs.IntVar(&o.Port, "webhook-port", 9443, "port the webhook server listens on")
	fs.StringVar(&operators, "operator-service-accounts", "",
		"comma-separated <namespace>:<name> service accounts allowed to create and update ValkeyNodes "+
			"(<namespace>:* allows every service account of the namespace)")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "address of the metrics endpoint (0 turns it off)")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", true, operator.MetricsSecureUsage)
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "0", operator.PprofUsage)
	fs.BoolVar(&o.LeaderElection, "leader-elect", false,
		"elect one replica to issue and rotate certificates (needed with more than one replica in self-signed mode)")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "",
		"namespace of the leader election Lease (default: the pod's namespace)")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", operator.DefaultLeaseDuration, operator.LeaseDurationUsage)
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", server.DefaultLeaderElectionID, "name of the leader election Lease")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", false, "allow HTTP/2 on the webhook server")
	printVersion := fs.Bool("version", false, "print the version and exit")
	applyPolicy := operator.PolicyFlags(fs)
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, zapOpts, fmt.Errorf("parse flags: %w", err)
	}
	if *printVersion {
		return o, zapOpts, errPrintVersion
	}
	if err := applyPolicy(); err != nil {
		return o, zapOpts, err
	}
	o.CertMode = server.CertMode(certMode)
	var err error
	if o.CertSecret, err = namespacedName(certSecret, ""); err != nil {
		return o, zapOpts, fmt.Errorf("--cert-secret: %w", err)
	}
	if o.Service, err = namespacedName(service, o.CertSecret.Namespace); err != nil {
		return o, zapOpts, fmt.Errorf("--webhook-service: %w", err)
	}
	if o.Operators, err = handlers.ParseServiceAccounts(operators); err != nil {
		return o, zapOpts, fmt.Errorf("--operator-service-accounts: %w", err)
	}
	return o, zapOpts, o.Validate()
}

// namespacedName parses "<namespace>/<name>", or "<name>" with defaultNamespace.
func namespacedName(s, defaultNamespace string) (types.NamespacedName, error) {
	if s == "" {
		return types.NamespacedName{}, nil
	}
	ns, name, ok := strings.Cut(s, "/")
	if !ok {
		ns, name = defaultNamespace, s
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("want <namespace>/<name>, got %q", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}
