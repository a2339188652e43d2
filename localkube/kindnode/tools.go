package kindnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/valkey-operator/valkey-operator/localkube"
)

// tool is a program of the node built from the Go module proxy with go install.
type tool struct {
	name    string // the binary's name
	pkg     string // the package path, without the version
	version string
	// cgo builds with cgo, statically linked (runc: its nsenter and libseccomp).
	cgo     bool
	tags    string
	ldflags string
}

// tools are the node's container runtime, its CLI tools and the CNI plugins of the pod
// network the e2e provider configures (ptp with host-local addresses).
var tools = []tool{
	{name: "containerd", pkg: "github.com/containerd/containerd/v2/cmd/containerd", version: ContainerdVersion,
		tags: "no_aufs no_zfs no_btrfs no_devmapper", ldflags: "-X github.com/containerd/containerd/v2/version.Version=" + ContainerdVersion},
	{name: "containerd-shim-runc-v2", pkg: "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2", version: ContainerdVersion,
		ldflags: "-X github.com/containerd/containerd/v2/version.Version=" + ContainerdVersion},
	{name: "ctr", pkg: "github.com/containerd/containerd/v2/cmd/ctr", version: ContainerdVersion,
		ldflags: "-X github.com/containerd/containerd/v2/version.Version=" + ContainerdVersion},
	{name: "runc", pkg: "github.com/opencontainers/runc", version: RuncVersion, cgo: true,
		tags: "seccomp urfave_cli_no_docs", ldflags: "-X main.version=" + strings.TrimPrefix(RuncVersion, "v")},
	{name: "crictl", pkg: "sigs.k8s.io/cri-tools/cmd/crictl", version: CrictlVersion,
		ldflags: "-X sigs.k8s.io/cri-tools/pkg/version.Version=" + CrictlVersion},
	{name: "host-local", pkg: "github.com/containernetworking/plugins/plugins/ipam/host-local", version: CNIPluginsVersion},
	{name: "loopback", pkg: "github.com/containernetworking/plugins/plugins/main/loopback", version: CNIPluginsVersion},
	{name: "ptp", pkg: "github.com/containernetworking/plugins/plugins/main/ptp", version: CNIPluginsVersion},
	{name: "portmap", pkg: "github.com/containernetworking/plugins/plugins/meta/portmap", version: CNIPluginsVersion},
}

// stamp is what a built tool's stamp file holds: the package, version and flags.
func (t tool) stamp() string {
	return fmt.Sprintf("%s@%s cgo=%v tags=%q ldflags=%q", t.pkg, t.version, t.cgo, t.tags, t.ldflags)
}

// toolBin is the path of a built tool.
func (b *builder) toolBin(name string) string { return b.c.dir("bin", name) }

// built reports whether bin exists with the given stamp.
func built(bin, stamp string) bool {
	if _, err := os.Stat(bin); err != nil {
		return false
	}
	got, err := os.ReadFile(stampFile(bin))
	return err == nil && string(got) == stamp
}

func stampFile(bin string) string {
	return filepath.Join(filepath.Dir(bin), "."+filepath.Base(bin)+".stamp")
}

// buildTools installs the missing tools into CacheDir/kind/bin, and kubeadm with the
// version ldflags of the other Kubernetes binaries (hack/k8sbin).
func (b *builder) buildTools(ctx context.Context) error {
	bin := b.c.dir("bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	for _, t := range tools {
		if built(b.toolBin(t.name), t.stamp()) {
			continue
		}
		b.c.Log("go install %s@%s", t.pkg, t.version)
		ld := "-s -w " + t.ldflags
		env := []string{"GOBIN=" + bin, "CGO_ENABLED=0"}
		if t.cgo {
			ld += " -extldflags -static"
			env[1] = "CGO_ENABLED=1"
		}
		args := []string{"install", "-trimpath", "-ldflags=" + ld}
		if t.tags != "" {
			args = append(args, "-tags", t.tags)
		}
		args = append(args, t.pkg+"@"+t.version)
		if err := goRun(ctx, b.c.RepoRoot, env, args...); err != nil {
			return err
		}
		if err := os.WriteFile(stampFile(b.toolBin(t.name)), []byte(t.stamp()), 0o644); err != nil {
			return err
		}
	}
	kubeadm := b.toolBin("kubeadm")
	stamp := "k8s.io/kubernetes/cmd/kubeadm@" + KubernetesVersion + " " + localkube.KubeLDFlags()
	if !built(kubeadm, stamp) {
		b.c.Log("go build k8s.io/kubernetes/cmd/kubeadm (%s)", KubernetesVersion)
		err := goRun(ctx, filepath.Join(b.c.RepoRoot, "hack", "k8sbin"), []string{"CGO_ENABLED=0"},
			"build", "-trimpath", "-ldflags="+localkube.KubeLDFlags(), "-o", kubeadm, "k8s.io/kubernetes/cmd/kubeadm")
		if err != nil {
			return err
		}
		if err := os.WriteFile(stampFile(kubeadm), []byte(stamp), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// goRun runs the go command in dir with the module's own dependencies (GOWORK=off).
func goRun(ctx context.Context, dir string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, tail(out, 40))
	}
	return nil
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
