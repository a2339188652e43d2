// Package envtestenv gives the controllers' integration suites a real API server to
// reconcile against: envtest's kube-apiserver and etcd, built by the project itself,
// with the CRDs of config/crd installed. Only test code imports it.
//
// A test package shares one API server among all of its specs. The Ginkgo suite starts
// it in BeforeSuite and stops it in AfterSuite:
//
//	var cfg *rest.Config
//
//	var _ = BeforeSuite(func() {
//		var err error
//		cfg, err = envtestenv.Config()
//		Expect(err).NotTo(HaveOccurred())
//	})
//
//	var _ = AfterSuite(envtestenv.Stop)
//
// The binaries are taken from $KUBEBUILDER_ASSETS or, when it is unset, from
// .cache/k8s/v1.37.2/bin at the root of the repository (the directory that holds
// go.work), which `make local-build` fills. If etcd or kube-apiserver is not there, the
// suite fails and says where it looked: it is not skipped, so a run without the
// binaries cannot pass by testing nothing.
//
// With ENVTEST_LOG_DIR set to an existing directory, the output of kube-apiserver and
// etcd, which envtest otherwise throws away, is kept there in kube-apiserver.log and
// etcd.log.
package envtestenv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// kubernetesVersion is the version of the binaries `make local-build` caches.
const kubernetesVersion = "v1.37.2"

// Options are what a suite needs of its API server beyond the CRDs.
type Options struct {
	// ValidatingWebhooks are installed the way envtest installs webhooks: their service
	// references become URLs on a local address with a certificate envtest made, which
	// the suite's webhook server serves (see envtest.Environment.WebhookInstallOptions).
	ValidatingWebhooks []*admissionregistrationv1.ValidatingWebhookConfiguration
}

// shared is the API server of the test binary.
var shared struct {
	once sync.Once
	mu   sync.Mutex // guards env and logs against Stop
	env  *envtest.Environment
	logs []io.Closer // the files of ENVTEST_LOG_DIR
	err  error
}

// Config returns a client configuration for the package's API server, starting the
// server (without Options) on the first call of Config or Environment. Later calls
// return its outcome (a copy of the same configuration, or the same error), even after
// Stop.
func Config() (*rest.Config, error) {
	env, err := Environment(Options{})
	if err != nil {
		return nil, err
	}
	return rest.CopyConfig(env.Config), nil
}

// Environment starts the package's API server with o on the first call of Config or
// Environment (later calls' options are not looked at) and returns envtest's
// environment: its Config, and for a suite with webhooks its WebhookInstallOptions and
// AddUser. Callers must not change it.
func Environment(o Options) (*envtest.Environment, error) {
	shared.once.Do(func() { shared.err = start(o) })
	if shared.err != nil {
		return nil, shared.err
	}
	return shared.env, nil
}

// Stop stops the API server if a suite started it: AfterSuite calls it. A failure to
// stop is written to standard error, as the specs have already finished.
func Stop() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	var errs []error
	if shared.env != nil {
		errs = append(errs, shared.env.Stop())
		shared.env = nil
	}
	for _, f := range shared.logs {
		errs = append(errs, f.Close())
	}
	shared.logs = nil
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "stop the API server: %v\n", err)
	}
}

func start(o Options) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	assets, err := Assets("etcd", "kube-apiserver")
	if err != nil {
		return err
	}
	env := &envtest.Environment{
		// Never a real cluster, whatever USE_EXISTING_CLUSTER says.
		UseExistingCluster:    ptr.To(false),
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{ValidatingWebhooks: o.ValidatingWebhooks},
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if dir := os.Getenv("ENVTEST_LOG_DIR"); dir != "" {
		if err := keepLogs(env, dir); err != nil {
			return err
		}
	}
	shared.env = env
	_, err = env.Start()
	return err
}

// Assets returns the directory of the Kubernetes binaries ($KUBEBUILDER_ASSETS, or the
// cache `make local-build` fills), checking that it holds the binaries named (kubectl
// for a suite that runs it, besides the control plane's).
func Assets(binaries ...string) (string, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		assets = filepath.Join(root, ".cache", "k8s", kubernetesVersion, "bin")
	}
	for _, bin := range binaries {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return "", fmt.Errorf("envtest needs %s in %s (set KUBEBUILDER_ASSETS or run `make local-build`): %w", bin, assets, err)
		}
	}
	return assets, nil
}

// keepLogs points the output of kube-apiserver and etcd at files in dir.
func keepLogs(env *envtest.Environment, dir string) error {
	apiLog, err := os.Create(filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		return fmt.Errorf("keep the control plane's output (ENVTEST_LOG_DIR): %w", err)
	}
	etcdLog, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		_ = apiLog.Close()
		return fmt.Errorf("keep the control plane's output (ENVTEST_LOG_DIR): %w", err)
	}
	shared.logs = []io.Closer{apiLog, etcdLog}
	api := env.ControlPlane.GetAPIServer()
	api.Out, api.Err = apiLog, apiLog
	if env.ControlPlane.Etcd == nil {
		env.ControlPlane.Etcd = &envtest.Etcd{}
	}
	env.ControlPlane.Etcd.Out, env.ControlPlane.Etcd.Err = etcdLog, etcdLog
	return nil
}

// RepoRoot walks up from the working directory, which `go test` sets to the package's
// directory, to the directory that holds go.work.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find the repository root: no go.work in the working directory or above it")
		}
		dir = parent
	}
}
