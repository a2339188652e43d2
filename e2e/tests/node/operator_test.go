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

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// operator runs the node-controller for the features of this suite. Until the Helm
// chart exists it is processOperator; a chart-installing implementation can replace it
// without touching the features, which only call Start.
type operator interface {
	// Start makes the node-controller act on namespace ns until stop is called.
	Start(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) (stop func())
}

// theOperator is the implementation the features use.
var theOperator operator = &processOperator{}

// processOperator builds the node-controller binary of this checkout once, applies
// the CRDs, and runs one controller process per feature on this machine, with the
// cluster's admin kubeconfig and --watch-namespaces set to the feature's namespace. The
// host reaches pod IPs, which the controller needs to talk to the servers.
type processOperator struct {
	once sync.Once
	bin  string
	err  error
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
