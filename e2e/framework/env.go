package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/support"

	"github.com/valkey-operator/valkey-operator/images"
)

// LabelSuite is the feature label naming a feature's suite; namespaces made for a
// feature carry it too (as NamespaceSuiteLabel).
const LabelSuite = "suite"

// Cluster is what a suite's steps get from the context (ClusterFrom): the provider, the
// clients and the paths, with helpers as methods.
type Cluster struct {
	// Suite is the name of the running suite.
	Suite string
	// Provider made the cluster.
	Provider Provider
	// Paths locates the repository, cache and programs.
	Paths Paths
	// Runner runs kubectl and the other programs.
	Runner Runner
	// Kubeconfig is the admin kubeconfig file.
	Kubeconfig string
	// REST is the admin client configuration.
	REST *rest.Config
	// Client is a controller-runtime client (typed objects, any kind).
	Client client.Client
	// Clientset is the client-go clientset (logs, subresources).
	Clientset kubernetes.Interface

	mu        sync.Mutex
	manifest  *images.Manifest
	failed    bool
	finishErr error
	artifacts string // artifactsDir, once known
}

type clusterKey struct{}

// ClusterFrom returns the suite's Cluster from a step's context; it fails the test when
// the environment was not made by NewEnv.
func ClusterFrom(ctx context.Context, t testing.TB) *Cluster {
	t.Helper()
	k, ok := ctx.Value(clusterKey{}).(*Cluster)
	if !ok {
		t.Fatal("no cluster in the context: build the environment with framework.NewEnv")
	}
	return k
}

// clusterFrom returns the Cluster of ctx, or nil.
func clusterFrom(ctx context.Context) *Cluster {
	k, _ := ctx.Value(clusterKey{}).(*Cluster)
	return k
}

// markFailed records that a feature failed, so Finish exports the cluster's logs.
func (k *Cluster) markFailed() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.failed = true
}

func (k *Cluster) anyFailed() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.failed
}

// NewEnv returns the test environment of a suite: e2e-framework's flags (after -args),
// the provider chosen by E2E_PROVIDER, a Setup that creates or reuses the cluster and
// puts a Cluster in the context, and a Finish that waits for the suite's namespaces to
// go, exports the cluster's logs when a feature failed, and destroys the cluster when
// the provider brought it up (unless E2E_KEEP_CLUSTER is set).
func NewEnv(suite string) (env.Environment, error) {
	cfg, err := envconf.NewFromFlags()
	if err != nil {
		return nil, fmt.Errorf("e2e flags: %w", err)
	}
	k, err := newCluster(suite, os.Getenv)
	if err != nil {
		return nil, err
	}
	e := env.NewWithConfig(cfg)
	e.Setup(k.setup)
	e.Finish(k.finish)
	return &suiteEnv{Environment: e, k: k}, nil
}

// suiteEnv makes a failure of the Finish step (a cluster that would not come down,
// namespaces that would not go) fail the suite: e2e-framework only logs it at -v=2.
// Call Run on the value NewEnv returned (Setup, Finish and the other builders return
// the inner environment).
type suiteEnv struct {
	env.Environment
	k *Cluster
}

// Run runs the suite and returns its exit code.
func (e *suiteEnv) Run(m *testing.M) int {
	code := e.Environment.Run(m)
	if err := e.k.finishError(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: FAIL: the suite did not clean up: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// newCluster builds the Cluster and its provider from the environment variables.
func newCluster(suite string, getenv func(string) string) (*Cluster, error) {
	paths, err := DiscoverPaths(getenv)
	if err != nil {
		return nil, err
	}
	name, err := ProviderFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	workers, err := workersFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	runner := ExecRunner{}
	p, err := NewProvider(name, ProviderOptions{
		Paths: paths, Runner: runner, Workers: workers, Keep: getenv("E2E_KEEP_CLUSTER") != "", Getenv: getenv,
	})
	if err != nil {
		return nil, err
	}
	return &Cluster{Suite: suite, Provider: p, Paths: paths, Runner: runner}, nil
}

// setup is the environment's Setup: create or reuse the cluster, wait until it is
// usable, and make the clients.
func (k *Cluster) setup(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	start := time.Now()
	p := k.Provider
	p.SetDefaults()
	kubeconfig, err := p.Create(ctx)
	if err != nil {
		k.markFailed()
		return ctx, fmt.Errorf("create the %s cluster: %w", p.ProviderName(), err)
	}
	ctx, err = k.use(ctx, cfg, kubeconfig)
	if err != nil {
		k.markFailed() // Finish exports the logs of a cluster that came up unusable
		return ctx, err
	}
	fmt.Fprintf(os.Stderr, "e2e: %s cluster usable after %s (kubeconfig %s)\n", p.ProviderName(), time.Since(start).Round(10*time.Millisecond), kubeconfig)
	return ctx, nil
}

// use waits until the created cluster is usable, makes the clients and puts the
// provider and the Cluster in the context.
func (k *Cluster) use(ctx context.Context, cfg *envconf.Config, kubeconfig string) (context.Context, error) {
	p := k.Provider
	cfg.WithKubeconfigFile(kubeconfig)
	kc, err := cfg.NewClient()
	if err != nil {
		return ctx, fmt.Errorf("client for %s: %w", kubeconfig, err)
	}
	cfg.WithClient(kc)
	if err := p.WaitForControlPlane(ctx, kc); err != nil {
		return ctx, fmt.Errorf("wait for the cluster: %w", err)
	}
	if err := k.connect(kubeconfig, kc.RESTConfig()); err != nil {
		return ctx, err
	}
	if err := k.slowAPI(ctx, os.Getenv("E2E_SLOW_API")); err != nil {
		return ctx, err
	}
	if err := k.deleteLeftNamespaces(ctx); err != nil {
		return ctx, err
	}
	ctx = context.WithValue(ctx, support.ClusterNameContextKey(k.Suite), p)
	return context.WithValue(ctx, clusterKey{}, k), nil
}

// connect makes the clients of the cluster.
func (k *Cluster) connect(kubeconfig string, rc *rest.Config) error {
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = 50, 100
	c, err := client.New(rc, client.Options{})
	if err != nil {
		return fmt.Errorf("controller-runtime client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("clientset: %w", err)
	}
	k.Kubeconfig, k.REST, k.Client, k.Clientset = kubeconfig, rc, c, cs
	return nil
}

// finish is the environment's Finish: it waits for the suite's namespaces to go,
// exports the cluster's logs when a feature failed, and destroys the cluster if the
// provider owns it. Its error is kept for suiteEnv.Run.
func (k *Cluster) finish(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	var errs []error
	if k.Client != nil {
		errs = append(errs, k.waitSuiteNamespacesGone(ctx, 3*time.Minute))
	}
	if k.anyFailed() {
		k.exportLogs(ctx)
	}
	if err := k.Provider.Destroy(ctx); err != nil {
		errs = append(errs, fmt.Errorf("destroy the cluster: %w", err))
	}
	err := errors.Join(errs...)
	k.mu.Lock()
	k.finishErr = err
	k.mu.Unlock()
	return ctx, err
}

func (k *Cluster) finishError() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.finishErr
}

// artifactsDir is where the suite keeps what a failure leaves: E2E_ARTIFACTS, or a
// folder of the cache named after the suite and the time of its first failure.
func (k *Cluster) artifactsDir() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.artifacts == "" {
		k.artifacts = os.Getenv("E2E_ARTIFACTS")
		if k.artifacts == "" {
			k.artifacts = filepath.Join(k.Paths.CacheDir, "e2e", "artifacts", k.Suite+"-"+time.Now().Format("20060102-150405"))
		}
	}
	return k.artifacts
}

// exportLogs copies the cluster's logs to the artifacts folder.
func (k *Cluster) exportLogs(ctx context.Context) {
	dest := k.artifactsDir()
	if err := k.Provider.ExportLogs(ctx, dest); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: export cluster logs: %v\n", err)
		return
	}
	fmt.Fprintf(os.Stderr, "e2e: a feature failed; cluster logs are in %s\n", dest)
}

// suiteNamespaces selects the namespaces the suite's features make, but those kept for
// inspection (E2E_KEEP_NAMESPACES).
func (k *Cluster) suiteNamespaces() (client.MatchingLabelsSelector, error) {
	sel, err := labels.Parse(fmt.Sprintf("%s=%s,!%s", NamespaceSuiteLabel, Slug(k.Suite, 63), NamespaceKeptLabel))
	return client.MatchingLabelsSelector{Selector: sel}, err
}

// deleteLeftNamespaces deletes the namespaces of the suite that a run interrupted
// before its end left behind (a kept cluster, a killed run), so that the suite starts
// from a known state and waits only for what it made; finish waits for them too.
func (k *Cluster) deleteLeftNamespaces(ctx context.Context) error {
	sel, err := k.suiteNamespaces()
	if err != nil {
		return err
	}
	var list corev1.NamespaceList
	if err := k.Client.List(ctx, &list, sel); err != nil {
		return fmt.Errorf("list the namespaces an earlier run of suite %s left: %w", k.Suite, err)
	}
	for i := range list.Items {
		ns := &list.Items[i]
		fmt.Fprintf(os.Stderr, "e2e: deleting namespace %s, left by an earlier run of suite %s that did not end\n", ns.Name, k.Suite)
		if err := k.Client.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete namespace %s: %w", ns.Name, err)
		}
	}
	return nil
}

// waitSuiteNamespacesGone waits until the namespaces the suite's features made are
// deleted, so the next suite starts on a clean cluster.
func (k *Cluster) waitSuiteNamespacesGone(ctx context.Context, timeout time.Duration) error {
	start := time.Now()
	sel, err := k.suiteNamespaces()
	if err != nil {
		return err
	}
	var list corev1.NamespaceList
	err = WaitForList(ctx, k.Client, &list, timeout, "the namespaces of suite "+k.Suite+" to be deleted",
		func(l *corev1.NamespaceList) (bool, string) {
			if len(l.Items) == 0 {
				return true, ""
			}
			names := make([]string, 0, len(l.Items))
			for _, ns := range l.Items {
				names = append(names, ns.Name+"("+string(ns.Status.Phase)+")")
			}
			return false, fmt.Sprint(names)
		}, sel)
	if err == nil {
		fmt.Fprintf(os.Stderr, "e2e: namespaces of suite %s gone after %s\n", k.Suite, time.Since(start).Round(10*time.Millisecond))
	}
	return err
}
