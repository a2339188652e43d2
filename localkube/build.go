package localkube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// prometheusOperatorModule is the Prometheus Operator's main module; hack/promop requires
// it and builds its commands.
const prometheusOperatorModule = "github.com/prometheus-operator/prometheus-operator"

// MonitoringCommands are the binaries BuildMonitoring makes, by the names the images use.
var MonitoringCommands = map[string]string{
	"prometheus-operator":        prometheusOperatorModule + "/cmd/operator",
	"prometheus-config-reloader": prometheusOperatorModule + "/cmd/prometheus-config-reloader",
}

// BuildMonitoring builds, once per version, what the e2e monitoring suite runs besides
// Prometheus itself (whose image comes from Debian's package): the Prometheus Operator
// and its config reloader from hack/promop, into MonitoringDir()/bin, and copies the
// operator's CRDs from its module into MonitoringDir()/crds. Nothing else needs them, so
// plain local-build leaves them out.
func BuildMonitoring(ctx context.Context, c Config) error {
	c, err := c.WithDefaults()
	if err != nil {
		return err
	}
	dir := filepath.Join(c.RepoRoot, "hack", "promop")
	bin := filepath.Join(c.MonitoringDir(), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	version := strings.TrimPrefix(PrometheusOperatorVersion, "v")
	ld := "-s -w -X github.com/prometheus/common/version.Version=" + version +
		" -X github.com/prometheus/common/version.Branch=release-" + version[:strings.LastIndex(version, ".")]
	for name, pkg := range MonitoringCommands {
		if _, err := os.Stat(filepath.Join(bin, name)); err == nil {
			continue
		}
		c.Log("building %s %s", name, PrometheusOperatorVersion)
		if err := c.goCmd(ctx, dir, nil, "build", "-trimpath", "-ldflags="+ld, "-o", filepath.Join(bin, name), pkg); err != nil {
			return err
		}
	}
	return copyModuleCRDs(ctx, dir, prometheusOperatorModule, PrometheusOperatorVersion,
		filepath.Join("example", "prometheus-operator-crd"), filepath.Join(c.MonitoringDir(), "crds"))
}

// certManagerModule is cert-manager's main module; hack/certmanager requires it and wires
// its controllers into one program.
const certManagerModule = "github.com/cert-manager/cert-manager"

// BuildCertManager builds the cert-manager program of hack/certmanager (its controller,
// cainjector and webhook, for the e2e suites that use cert-manager) into
// CertManagerBinary(), again whenever the program's source changes (a digest beside the
// binary says which source it was built from), and copies cert-manager's CRDs from its
// module into CertManagerDir()/crds. Nothing else needs them, so plain local-build leaves
// them out.
func BuildCertManager(ctx context.Context, c Config) error {
	c, err := c.WithDefaults()
	if err != nil {
		return err
	}
	dir := filepath.Join(c.RepoRoot, "hack", "certmanager")
	digest, err := sourceDigest(dir)
	if err != nil {
		return err
	}
	stamp := c.CertManagerBinary() + ".source"
	built, _ := os.ReadFile(stamp)
	if _, err := os.Stat(c.CertManagerBinary()); err != nil || string(built) != digest {
		if err := os.MkdirAll(filepath.Dir(c.CertManagerBinary()), 0o755); err != nil {
			return err
		}
		c.Log("building cert-manager %s", CertManagerVersion)
		ld := "-s -w -X " + certManagerModule + "/pkg/util.AppVersion=" + CertManagerVersion
		if err := c.goCmd(ctx, dir, nil, "build", "-trimpath", "-ldflags="+ld, "-o", c.CertManagerBinary(), "."); err != nil {
			return err
		}
		if err := os.WriteFile(stamp, []byte(digest), 0o644); err != nil {
			return err
		}
	}
	return copyModuleCRDs(ctx, dir, certManagerModule, CertManagerVersion,
		filepath.Join("deploy", "crds"), filepath.Join(c.CertManagerDir(), "crds"))
}

// copyModuleCRDs copies the YAML files of folder sub of module, as the module in dir
// requires it, into dst, unless dst exists; the module must be at version, the one the
// cache folder is named after.
func copyModuleCRDs(ctx context.Context, dir, module, version, sub, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", module)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("find the %s module: %w", module, err)
	}
	modDir, modVersion, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if modVersion != version {
		return fmt.Errorf("%s requires %s %s, want %s", dir, module, modVersion, version)
	}
	src := filepath.Join(modDir, sub)
	files, err := filepath.Glob(filepath.Join(src, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s (%v)", src, err)
	}
	tmp := dst + ".tmp"
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, filepath.Base(f)), b, 0o644); err != nil {
			return err
		}
	}
	return os.Rename(tmp, dst)
}

// sourceDigest is the SHA-256, in hex, of the module in dir as a build reads it: go.mod,
// go.sum and the Go files other than tests, by name and content.
func sourceDigest(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
	files = append(files, filepath.Join(dir, "go.mod"), filepath.Join(dir, "go.sum"))
	slices.Sort(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
