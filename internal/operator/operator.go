// Package operator is the common start-up of the operator's controller binaries: flags,
// logger, scheme, the manager with leader election, health probes and metrics, and the
// namespaces to watch.
package operator

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/version"
)

// Flags are the settings every controller binary accepts.
type Flags struct {
	MetricsAddr string
	// MetricsSecure serves metrics over HTTPS to authenticated and authorized clients
	// only (MetricsOptions).
	MetricsSecure bool
	ProbeAddr     string
	// PprofAddr serves the Go runtime's profiles (/debug/pprof); "0" or empty: off.
	PprofAddr   string
	LeaderElect bool
	// LeaseDuration is how long a leader's Lease holds without a renewal; it renews
	// every sixth of it and gives up leading after three quarters without one.
	LeaseDuration           time.Duration
	WatchNamespaces         []string
	MaxConcurrentReconciles int
}

// DefaultLeaseDuration is the leader's Lease duration: a renewal every 10 s, so a Lease
// costs 6 API writes a minute at rest (controller-runtime's default renews every 2 s).
// A leader that stops cleanly releases its Lease at once; one that crashes is replaced
// after at most this long, while the Valkey servers keep serving.
const DefaultLeaseDuration = time.Minute

// PprofUsage is the usage of --pprof-bind-address (every component has it).
const PprofUsage = "address of the Go runtime's profiles, /debug/pprof (0 turns it off); they need no authentication: " +
	"bind it to 127.0.0.1 and reach it with kubectl port-forward"

// LeaseDurationUsage is the usage of --leader-elect-lease-duration.
const LeaseDurationUsage = "how long a leader's Lease holds without renewal (renewed every sixth of it)"

// Component describes one controller binary.
type Component struct {
	// Name is the component name: field manager, leader election ID suffix, event source.
	Name string
	// AddFlags registers the component's own flags.
	AddFlags func(fs *flag.FlagSet)
	// Setup registers the component's controllers on the manager.
	Setup func(ctx context.Context, mgr ctrl.Manager, f Flags) error
}

// Scheme returns a scheme with the Kubernetes types and the operator's API.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err) // registration of static types cannot fail at run time
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// ManagerOptions are what every component's manager shares: the operator's scheme, its
// cache policy (CacheOptions) and its client (NewClient), for the namespaces given (all
// when none).
func ManagerOptions(namespaces []string) ctrl.Options {
	return ctrl.Options{Scheme: Scheme(), Cache: CacheOptions(namespaces), NewClient: NewClient}
}

// Main runs the component until SIGTERM and exits the process.
func Main(c Component) { mainAlone(c, os.Args[1:]) }

// mainAlone runs the component with args until SIGTERM and exits the process.
func mainAlone(c Component, args []string) {
	if err := run(c.Name, []Component{c}, false, args); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.Name, err)
		os.Exit(1)
	}
}

// MainAll runs several components in one process named name, with one manager (one
// cache, one Lease, one metrics endpoint) until SIGTERM, and exits the process. Each
// component's own flags take its name as a prefix (--cluster-controller.fast-failover);
// --controllers chooses which of them run (all by default). The components stay what
// they are alone: they share the cache and the API client, never state, and talk to
// each other only through the status of the objects.
//
// When the first argument names one of the components (manager cluster-controller
// --fast-failover), the process is that component alone, exactly as its own binary
// would run it (Main): its name, its Lease, its flags unprefixed. So the controllers of
// one image can all run one executable file, whose pages a node then holds once.
func MainAll(name string, cs ...Component) {
	args := os.Args[1:]
	if c, rest, ok := alone(cs, args); ok {
		mainAlone(c, rest)
		return
	}
	if err := run(name, cs, true, args); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// alone returns the component of cs that the first of args names, and the arguments
// after it; ok is false when the first argument names none (a flag, or nothing).
func alone(cs []Component, args []string) (c Component, rest []string, ok bool) {
	if len(args) == 0 {
		return Component{}, nil, false
	}
	i := slices.IndexFunc(cs, func(c Component) bool { return c.Name == args[0] })
	if i < 0 {
		return Component{}, nil, false
	}
	return cs[i], args[1:], true
}

// run parses args and runs the components cs as one manager; prefixed registers each
// component's flags under its name.
func run(name string, cs []Component, prefixed bool, args []string) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var f Flags
	var namespaces, enabled string
	fs.StringVar(&f.MetricsAddr, "metrics-bind-address", ":8080", "address of the metrics endpoint (0 disables it)")
	fs.BoolVar(&f.MetricsSecure, "metrics-secure", true, MetricsSecureUsage)
	fs.StringVar(&f.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.StringVar(&f.PprofAddr, "pprof-bind-address", "0", PprofUsage)
	fs.BoolVar(&f.LeaderElect, "leader-elect", false, "elect a leader so only one replica acts at a time")
	fs.DurationVar(&f.LeaseDuration, "leader-elect-lease-duration", DefaultLeaseDuration, LeaseDurationUsage)
	fs.StringVar(&namespaces, "watch-namespaces", "", "comma-separated namespaces to watch (all when empty)")
	fs.IntVar(&f.MaxConcurrentReconciles, "max-concurrent-reconciles", 4, "reconciles run in parallel per controller")
	printVersion := fs.Bool("version", false, "print the version and exit")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	applyPolicy := PolicyFlags(fs)
	if prefixed {
		names := strings.Join(componentNames(cs), ",")
		fs.StringVar(&enabled, "controllers", names, "comma-separated components to run, of "+names)
	}
	for _, c := range cs {
		if c.AddFlags == nil {
			continue
		}
		if !prefixed {
			c.AddFlags(fs)
			continue
		}
		own := flag.NewFlagSet(c.Name, flag.ContinueOnError)
		c.AddFlags(own)
		own.VisitAll(func(fl *flag.Flag) { fs.Var(fl.Value, c.Name+"."+fl.Name, fl.Usage) })
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return unexpectedArgument(fs.Arg(0), cs, prefixed)
	}
	if err := applyPolicy(); err != nil {
		return err
	}
	if *printVersion {
		fmt.Println(version.String(name))
		return nil
	}
	if prefixed {
		var err error
		if cs, err = choose(cs, enabled); err != nil {
			return err
		}
	}
	f.WatchNamespaces = splitList(namespaces)
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName(name)
	TuneRuntime(log)

	opts := ManagerOptions(f.WatchNamespaces)
	opts.Metrics = MetricsOptions(f.MetricsAddr, f.MetricsSecure)
	opts.HealthProbeBindAddress = f.ProbeAddr
	opts.PprofBindAddress = f.PprofAddr
	opts.LeaderElection = f.LeaderElect
	opts.LeaderElectionID = "valkey-operator-" + name
	opts.LeaderElectionNamespace = os.Getenv("POD_NAMESPACE")
	opts.LeaderElectionReleaseOnCancel = true
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = ptr.To(f.LeaseDuration), ptr.To(f.LeaseDuration*3/4), ptr.To(f.LeaseDuration/6)
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), opts)
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	for _, c := range cs {
		if err := c.Setup(ctx, mgr, f); err != nil {
			return fmt.Errorf("set up %s: %w", c.Name, err)
		}
	}
	log.Info("starting", "version", version.Version, "revision", version.Revision, "components", componentNames(cs),
		"watchNamespaces", f.WatchNamespaces, "leaderElection", f.LeaderElect)
	return mgr.Start(ctx)
}

// unexpectedArgument is the error for a positional argument run does not take: only the
// first argument of the manager, naming one component, is one.
func unexpectedArgument(arg string, cs []Component, prefixed bool) error {
	if prefixed {
		return fmt.Errorf("unexpected argument %q: the first argument may name one component to run alone (%s), flags come after it",
			arg, strings.Join(componentNames(cs), ", "))
	}
	return fmt.Errorf("unexpected argument %q: %s takes flags only", arg, cs[0].Name)
}

// choose returns the components of cs named in the comma-separated list.
func choose(cs []Component, list string) ([]Component, error) {
	var out []Component
	for _, n := range splitList(list) {
		i := slices.IndexFunc(cs, func(c Component) bool { return c.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("--controllers: no component %q (have %s)", n, strings.Join(componentNames(cs), ", "))
		}
		out = append(out, cs[i])
	}
	if len(out) == 0 {
		return nil, errors.New("--controllers: no component chosen")
	}
	return out, nil
}

func componentNames(cs []Component) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// DefaultSecretPropagationDelay is how long the kubelet may take to bring a changed Secret
// into the pods that mount it: its sync period (1 min) plus its cache, with margin. The
// acl- and tls-controllers rely on a mounted copy only once this has passed.
const DefaultSecretPropagationDelay = 2 * time.Minute

// SecretPropagationFlag registers --secret-propagation-delay into d; what explains what
// the component waits for.
func SecretPropagationFlag(fs *flag.FlagSet, d *time.Duration, what string) {
	fs.DurationVar(d, "secret-propagation-delay", DefaultSecretPropagationDelay,
		"how long mounted copies of a Secret may lag behind it (kubelet sync); "+what)
}
