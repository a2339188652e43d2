// Package envtestenv gives the controllers' integration tests a real API server to
// reconcile against: envtest's kube-apiserver and etcd, built by the project itself,
// with the CRDs of config/crd installed. Only test code imports it.
//
// A test package shares one API server among all of its tests. The first test that asks
// for it starts it; TestMain stops it once the last test has finished:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		envtestenv.Stop()
//		os.Exit(code)
//	}
//
//	func TestReconcile(t *testing.T) {
//		cfg := envtestenv.Start(t)
//		...
//	}
//
// The binaries are taken from $KUBEBUILDER_ASSETS or, when it is unset, from
// .cache/k8s/v1.37.2/bin at the root of the repository (the directory that holds
// go.work), which `make local-build` fills. If etcd or kube-apiserver is not there, every
// test that asks for the API server fails and says where it looked: the tests are not
// skipped, so a run without the binaries cannot pass by testing nothing.
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
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// kubernetesVersion is the version of the binaries `make local-build` caches.
const kubernetesVersion = "v1.37.2"

// shared is the API server of the test binary.
var shared struct {
	once sync.Once
	mu   sync.Mutex // guards env and logs against Stop
	env  *envtest.Environment
	logs []io.Closer // the files of ENVTEST_LOG_DIR
	cfg  *rest.Config
	err  error
}

// Start returns a client configuration for the package's API server, starting the
// server on the first call. If it cannot be started (most often because the binaries
// are missing), Start fails t with the reason.
func Start(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := Config()
	if err != nil {
		t.Fatalf("start the API server: %v", err)
	}
	return cfg
}

// Config is Start for callers without a testing.TB: it returns the error instead of
// failing a test. Only the first call starts anything; later calls return its outcome
// (a copy of the same configuration, or the same error), even after Stop.
func Config() (*rest.Config, error) {
	shared.once.Do(func() { shared.cfg, shared.err = start() })
	if shared.err != nil {
		return nil, shared.err
	}
	return rest.CopyConfig(shared.cfg), nil
}

// Stop stops the API server if a test started it. TestMain calls it after m.Run; a
// failure to stop is written to standard error, as the tests have already finished.
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

func start() (*rest.Config, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, ".cache", "k8s", kubernetesVersion, "bin")
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("envtest needs %s in %s (set KUBEBUILDER_ASSETS or run `make local-build`): %w", bin, assets, err)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd")},
		ErrorIfCRDPathMissing: true,
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if dir := os.Getenv("ENVTEST_LOG_DIR"); dir != "" {
		if err := keepLogs(env, dir); err != nil {
			return nil, err
		}
	}
	shared.env = env
	return env.Start()
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

// repoRoot walks up from the working directory, which `go test` sets to the package's
// directory, to the directory that holds go.work.
func repoRoot() (string, error) {
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
