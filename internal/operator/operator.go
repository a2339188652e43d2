// Package operator is the common start-up of the operator's controller binaries: flags,
// logger, scheme, the manager with leader election, health probes and metrics, and the
// namespaces to watch.
package operator

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	MetricsSecure           bool
	ProbeAddr               string
	LeaderElect             bool
	WatchNamespaces         []string
	MaxConcurrentReconciles int
}

// Component describes one controller binary.
type Component struct {
	// Name is the component name: field manager, leader election ID suffix, event source.
	Name string
	// AddFlags registers the component's own flags.
	AddFlags func(fs *flag.FlagSet)
	// ByObject restricts what the manager's cache holds per type (for example only the
	// Secrets the operator created).
	ByObject map[client.Object]cache.ByObject
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

// Main runs the component until SIGTERM and exits the process.
func Main(c Component) {
	if err := run(c, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.Name, err)
		os.Exit(1)
	}
}

func run(c Component, args []string) error {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	var f Flags
	var namespaces string
	fs.StringVar(&f.MetricsAddr, "metrics-bind-address", ":8080", "address of the metrics endpoint (0 disables it)")
	fs.BoolVar(&f.MetricsSecure, "metrics-secure", true, MetricsSecureUsage)
	fs.StringVar(&f.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.BoolVar(&f.LeaderElect, "leader-elect", false, "elect a leader so only one replica acts at a time")
	fs.StringVar(&namespaces, "watch-namespaces", "", "comma-separated namespaces to watch (all when empty)")
	fs.IntVar(&f.MaxConcurrentReconciles, "max-concurrent-reconciles", 4, "reconciles run in parallel per controller")
	printVersion := fs.Bool("version", false, "print the version and exit")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	applyPolicy := PolicyFlags(fs)
	if c.AddFlags != nil {
		c.AddFlags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := applyPolicy(); err != nil {
		return err
	}
	if *printVersion {
		fmt.Println(version.String(c.Name))
		return nil
	}
	for _, ns := range strings.Split(namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			f.WatchNamespaces = append(f.WatchNamespaces, ns)
		}
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName(c.Name)

	cacheOpts := cache.Options{ByObject: c.ByObject}
	if len(f.WatchNamespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range f.WatchNamespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                        Scheme(),
		Cache:                         cacheOpts,
		Metrics:                       MetricsOptions(f.MetricsAddr, f.MetricsSecure),
		HealthProbeBindAddress:        f.ProbeAddr,
		LeaderElection:                f.LeaderElect,
		LeaderElectionID:              "valkey-operator-" + c.Name,
		LeaderElectionNamespace:       os.Getenv("POD_NAMESPACE"),
		LeaderElectionReleaseOnCancel: true,
	})
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
	if err := c.Setup(ctx, mgr, f); err != nil {
		return fmt.Errorf("set up controllers: %w", err)
	}
	log.Info("starting", "version", version.Version, "revision", version.Revision, "watchNamespaces", f.WatchNamespaces, "leaderElection", f.LeaderElect)
	return mgr.Start(ctx)
}

// ManagedSecrets restricts a cache to the Secrets the operator created, for components
// that must not hold users' Secrets in memory.
func ManagedSecrets() cache.ByObject {
	return cache.ByObject{Label: ManagedBySelector()}
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
