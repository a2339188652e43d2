//go:build e2e

package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// operator is how the suite gets a node-controller to act on its features' nodes.
type operator interface {
	// Setup is the environment step that installs the operator (nil: none).
	Setup() env.Func
	// Start makes the node-controller act on namespace ns until stop is called.
	Start(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) (stop func())
	// Writer is the client the features create and change ValkeyNodes with, as the
	// cluster-controller would.
	Writer(t *testing.T, k *framework.Cluster) client.Client
}

// chooseOperator reads E2E_NODE_OPERATOR: "chart" (default) installs the operator with
// the project's chart, as every suite does; "process" runs the node-controller of this
// checkout as a process per feature, for working on the controller without building
// images (on a cluster where the chart is not installed).
func chooseOperator(getenv func(string) string) (operator, error) {
	switch v := getenv("E2E_NODE_OPERATOR"); v {
	case "", "chart":
		return chartOperator{}, nil
	case "process":
		return &processOperator{}, nil
	default:
		return nil, fmt.Errorf("E2E_NODE_OPERATOR=%q: want chart or process", v)
	}
}

// chartOperator is the operator installed by the chart (all its components, in
// framework.OperatorNamespace). Its webhook admits ValkeyNode writes only from the
// operator's service accounts, so the features write nodes as the cluster-controller's.
type chartOperator struct{}

// Setup installs or upgrades the chart.
func (chartOperator) Setup() env.Func { return framework.InstallOperator() }

// Start has nothing to start: the installed node-controller watches every namespace.
func (chartOperator) Start(context.Context, *testing.T, *framework.Cluster, string) func() {
	return func() {}
}

// Writer impersonates the cluster-controller's service account.
func (chartOperator) Writer(t *testing.T, k *framework.Cluster) client.Client {
	t.Helper()
	rc := rest.CopyConfig(k.REST)
	rc.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s",
		framework.OperatorNamespace, framework.OperatorDeployment("cluster-controller"))}
	c, err := client.New(rc, client.Options{Scheme: scheme(t)})
	must(t, err, "impersonating client")
	return c
}

// processOperator builds the node-controller binary of this checkout once, applies
// the CRDs, and runs one controller process per feature on this machine, with the
// cluster's admin kubeconfig and --watch-namespaces set to the feature's namespace. The
// host reaches pod IPs, which the controller needs to talk to the servers.
type processOperator struct {
	once sync.Once
	bin  string
	err  error
}

// Setup installs nothing: the CRDs are applied when the first feature starts.
func (o *processOperator) Setup() env.Func { return nil }

// Writer is the admin client (no webhook runs without the chart).
func (o *processOperator) Writer(t *testing.T, k *framework.Cluster) client.Client {
	t.Helper()
	c, err := client.New(k.REST, client.Options{Scheme: scheme(t)})
	must(t, err, "client")
	return c
}

// prepare builds the binary and installs the CRDs, once per suite.
func (o *processOperator) prepare(ctx context.Context, k *framework.Cluster) error {
	o.once.Do(func() {
		o.bin = filepath.Join(k.Paths.CacheDir, "e2e", "bin", "node-controller")
		start := time.Now()
		_, o.err = k.Runner.Run(ctx, framework.Command{
			Name: "go", Args: []string{"build", "-o", o.bin, "."},
			Dir: filepath.Join(k.Paths.RepoRoot, "node-controller"), Env: []string{"GOWORK=off", "CGO_ENABLED=0"},
		})
		if o.err != nil {
			o.err = fmt.Errorf("build the node-controller: %w", o.err)
			return
		}
		fmt.Fprintf(os.Stderr, "e2e: node-controller built in %s\n", time.Since(start).Round(100*time.Millisecond))
		o.err = installCRDs(ctx, k)
	})
	return o.err
}

// installCRDs applies the project's CRDs and waits until the API serves them.
func installCRDs(ctx context.Context, k *framework.Cluster) error {
	dir := filepath.Join(k.Paths.RepoRoot, "config", "crd")
	if _, err := k.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "--field-manager", "e2e-"+suite, "-f", dir); err != nil {
		return fmt.Errorf("apply CRDs: %w", err)
	}
	if _, err := k.Kubectl(ctx, "wait", "--for", "condition=Established", "--timeout", "60s",
		"crd/valkeynodes.valkey.io", "crd/valkeyclusters.valkey.io"); err != nil {
		return fmt.Errorf("wait for CRDs: %w", err)
	}
	return nil
}

// Start runs a controller process for ns; its log goes to a file, whose tail is shown
// when the feature failed.
func (o *processOperator) Start(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) func() {
	t.Helper()
	must(t, o.prepare(ctx, k), "prepare the node-controller")
	logPath := filepath.Join(k.Paths.CacheDir, "e2e", "logs", ns+"-node-controller.log")
	must(t, os.MkdirAll(filepath.Dir(logPath), 0o755), "create log folder")
	logFile, err := os.Create(logPath)
	must(t, err, "create controller log")
	cmd := exec.Command(o.bin, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--watch-namespaces="+ns, "--max-concurrent-reconciles=2")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.Kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	must(t, cmd.Start(), "start the node-controller")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Logf("node-controller pid %d for %s, log %s", cmd.Process.Pid, ns, logPath)
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill() // this process only, by its handle
			<-exited
		}
		_ = logFile.Close()
		if t.Failed() {
			t.Logf("node-controller log (tail):\n%s", tail(logPath, 60))
		}
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
