package localkube

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// kubeCommands are the Kubernetes binaries built from hack/k8sbin.
var kubeCommands = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kubelet", "kube-proxy"}

// Build compiles the binaries of the local cluster into the cache, once per version:
// Kubernetes and etcd from hack/k8sbin (the Go module proxy), CoreDNS and the
// NetworkPolicy engine (kube-network-policies) with go install.
func Build(ctx context.Context, c Config) error {
	c, err := c.WithDefaults()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.BinDir(), 0o755); err != nil {
		return err
	}
	var missing []string
	for _, name := range kubeCommands {
		if _, err := os.Stat(c.bin(name)); err != nil {
			missing = append(missing, "k8s.io/kubernetes/cmd/"+name)
		}
	}
	ld := KubeLDFlags()
	if len(missing) > 0 {
		c.Log("building %s (a cold build takes about 8 minutes)", strings.Join(missing, " "))
		args := append([]string{"build", "-trimpath", "-ldflags=" + ld, "-o", c.BinDir() + "/"}, missing...)
		if err := c.goCmd(ctx, filepath.Join(c.RepoRoot, "hack", "k8sbin"), nil, args...); err != nil {
			return err
		}
	}
	if _, err := os.Stat(c.bin("etcd")); err != nil {
		c.Log("building etcd")
		if err := c.goCmd(ctx, filepath.Join(c.RepoRoot, "hack", "k8sbin"), nil,
			"build", "-trimpath", "-ldflags=-s -w", "-o", c.bin("etcd"), "go.etcd.io/etcd/server/v3"); err != nil {
			return err
		}
	}
	if _, err := os.Stat(c.CoreDNSBinary()); err != nil {
		c.Log("building CoreDNS %s", CoreDNSVersion)
		gobin := filepath.Dir(c.CoreDNSBinary())
		if err := c.goCmd(ctx, c.RepoRoot, []string{"GOBIN=" + gobin},
			"install", "-trimpath", "-ldflags=-s -w", "github.com/coredns/coredns@"+CoreDNSVersion); err != nil {
			return err
		}
	}
	if _, err := os.Stat(c.NetpolBinary()); err != nil {
		c.Log("building kube-network-policies %s", NetpolVersion)
		gobin := filepath.Join(filepath.Dir(c.NetpolBinary()), "gobin")
		if err := c.goCmd(ctx, c.RepoRoot, []string{"GOBIN=" + gobin},
			"install", "-trimpath", "-ldflags=-s -w", "sigs.k8s.io/kube-network-policies/cmd@"+NetpolVersion); err != nil {
			return err
		}
		// The module's main package is its cmd folder: go install names the binary cmd.
		if err := os.Rename(filepath.Join(gobin, "cmd"), c.NetpolBinary()); err != nil {
			return err
		}
		_ = os.Remove(gobin)
	}
	return nil
}

// KubeLDFlags are the linker flags of the Kubernetes binaries: stripped, with the version
// they report (without them they say v0.0.0-master).
func KubeLDFlags() string {
	ld := "-s -w"
	for _, p := range []string{"k8s.io/client-go/pkg/version", "k8s.io/component-base/version"} {
		ld += fmt.Sprintf(" -X %[1]s.gitVersion=%[2]s -X %[1]s.gitMajor=1 -X %[1]s.gitMinor=37 -X %[1]s.gitTreeState=clean", p, KubernetesVersion)
	}
	return ld
}

func (c Config) goCmd(ctx context.Context, dir string, env []string, args ...string) error {
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"CGO_ENABLED=0", "GOWORK=off"}, env...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args[:1], " "), err)
	}
	c.Log("go %s done in %s", args[0], time.Since(start).Round(time.Second))
	return nil
}
