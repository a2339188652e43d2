package localkube

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valkey-operator/valkey-operator/images"
)

// RunNode is the body of one worker node. It runs inside the node's network namespace and
// a private mount namespace (started by nodeCommand), prepares the mounts, starts
// containerd, imports the images, starts kubelet and kube-proxy, and stays as their parent
// until SIGTERM, when it stops them and every pod of the node.
func RunNode(ctx context.Context, c Config, index int) error {
	n := Node{Index: index}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s node %s: %s\n", time.Now().Format(time.RFC3339Nano), n.Name(), fmt.Sprintf(format, args...))
	}
	if err := c.nodeMounts(n); err != nil {
		return fmt.Errorf("mounts: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	logs := c.nodeDir(n, "logs")
	containerd, err := startChild(logs, "containerd", "containerd", "--config", c.nodeDir(n, "containerd.toml"))
	if err != nil {
		return err
	}
	children := []*exec.Cmd{containerd}
	defer func() { c.stopNode(n, children, logf) }()

	if err := waitFor(ctx, 30*time.Second, 20*time.Millisecond, "containerd socket", func() (bool, error) {
		conn, err := net.Dial("unix", c.containerdSocket(n))
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	}); err != nil {
		return err
	}
	t0 := time.Now()
	if err := c.importImages(ctx, n); err != nil {
		return err
	}
	logf("images imported in %s", time.Since(t0).Round(time.Millisecond))
	if !c.NoNetworkPolicy {
		if err := installNetpolQueue(ctx); err != nil {
			return err
		}
	}

	kubelet, err := startChild(logs, "kubelet", c.bin("kubelet"),
		"--config="+c.nodeDir(n, "kubelet.yaml"),
		"--kubeconfig="+c.path("kubeconfigs", "kubelet-"+n.Name()+".kubeconfig"),
		"--root-dir=/var/lib/kubelet",
		"--cert-dir="+c.nodeDir(n, "certs"),
		"--hostname-override="+n.Name(),
		"--node-ip="+n.IP(),
		"--v=1")
	if err != nil {
		return err
	}
	children = append(children, kubelet)
	proxy, err := startChild(logs, "kube-proxy", c.bin("kube-proxy"), "--config="+c.nodeDir(n, "kube-proxy.yaml"), "--v=1")
	if err != nil {
		return err
	}
	children = append(children, proxy)
	logf("running")
	<-ctx.Done()
	logf("stopping")
	return nil
}

// nodeCommand is the command line that starts RunNode for node n inside its namespaces.
// nsenter and unshare exec in place, so the recorded PID is the node runner's.
func (c Config) nodeCommand(self string, n Node) []string {
	return []string{"nsenter", "--net=/run/netns/" + n.Netns(), "--",
		"unshare", "--mount", "--propagation", "slave", "--",
		self, "node-run", "--cache-dir", c.CacheDir, "--repo-root", c.RepoRoot,
		"--nodes", strconv.Itoa(c.Nodes), "--node", strconv.Itoa(n.Index)}
}

// nodeMounts gives the node namespace a sysfs of its own network namespace (kubelet and CNI
// read network devices there) while keeping the host's cgroup tree, and binds the node's
// folders over the host paths that the node components hard-code.
func (c Config) nodeMounts(n Node) error {
	aside := c.nodeDir(n, "cgroup-aside")
	if err := os.MkdirAll(aside, 0o755); err != nil {
		return err
	}
	steps := []struct {
		src, dst, fstype string
		flags            uintptr
	}{
		{"/sys/fs/cgroup", aside, "", syscall.MS_BIND | syscall.MS_REC},
	}
	for _, s := range steps {
		if err := syscall.Mount(s.src, s.dst, s.fstype, s.flags, ""); err != nil {
			return fmt.Errorf("mount %s on %s: %w", s.src, s.dst, err)
		}
	}
	if err := syscall.Unmount("/sys", syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount /sys: %w", err)
	}
	if err := syscall.Mount("sysfs", "/sys", "sysfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount sysfs: %w", err)
	}
	if err := syscall.Mount(aside, "/sys/fs/cgroup", "", syscall.MS_MOVE, ""); err != nil {
		return fmt.Errorf("move cgroup tree back: %w", err)
	}
	for _, p := range hostPathsPerNode {
		if err := syscall.Mount(c.nodeDir(n, "host", filepath.Base(p)), p, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
	}
	if err := syscall.Mount(c.path("resolv.conf"), "/etc/resolv.conf", "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind resolv.conf: %w", err)
	}
	return nil
}

// importImages imports every image of the manifest into the node's containerd.
func (c Config) importImages(ctx context.Context, n Node) error {
	m, err := images.ReadManifest(c.CacheDir)
	if err != nil {
		return err
	}
	return images.Import(ctx, "ctr", c.containerdSocket(n), m.Files())
}

func startChild(logDir, name, bin string, args ...string) (*exec.Cmd, error) {
	logf, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { _ = cmd.Wait(); logf.Close() }()
	return cmd, nil
}

// stopNode stops kube-proxy and kubelet, kills every process of the node's pods and their
// shims, then stops containerd. Mounts of the node vanish with its mount namespace.
func (c Config) stopNode(n Node, children []*exec.Cmd, logf func(string, ...any)) {
	for i := len(children) - 1; i >= 1; i-- {
		stopPids([]int{children[i].Process.Pid}, 5*time.Second)
	}
	killCgroupTree(n.CgroupRoot())
	self := nsInode("/proc/self/ns/mnt")
	var shims []int
	for _, pid := range pidsWhere(func(pid int) bool { return nsInode(fmt.Sprintf("/proc/%d/ns/mnt", pid)) == self }) {
		if len(children) > 0 && pid == children[0].Process.Pid {
			continue
		}
		shims = append(shims, pid)
	}
	stopPids(shims, 2*time.Second)
	if len(children) > 0 {
		stopPids([]int{children[0].Process.Pid}, 5*time.Second)
	}
	logf("stopped")
}

// killCgroupTree kills every process in the cgroup subtree root of every hierarchy.
func killCgroupTree(root string) {
	for _, h := range cgroupHierarchies() {
		pids := cgroupTreePids(filepath.Join(h, root))
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		waitGone(pids, 5*time.Second)
	}
}

// cgroupTreePids lists the processes in a cgroup folder and below it.
func cgroupTreePids(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}
