package localkube

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/valkey-operator/valkey-operator/images"
)

// clusterProcessNames are the executables a local cluster runs; a snapshot lists any that
// are alive, so a diff of snapshots before and after shows processes left behind.
var clusterProcessNames = map[string]bool{
	"etcd": true, "kube-apiserver": true, "kube-controller-manager": true, "kube-scheduler": true,
	"kubelet": true, "kube-proxy": true, "containerd": true, "containerd-shim-runc-v2": true,
	"coredns": true, "localkube": true, "pause": true, "valkey-server": true, "redis_exporter": true,
	"prometheus-redis-exporter": true, "runc": true, "nsenter": true, "unshare": true,
}

// WriteSnapshot prints the host state a local cluster touches: its processes, mounts,
// network namespaces, links, routes, firewall rules, cgroups and the sysctls kubelet sets.
// `diff` of a snapshot taken before local-up and one after local-down must be empty.
func WriteSnapshot(ctx context.Context, c Config, w io.Writer) error {
	c, err := c.WithDefaults()
	if err != nil {
		return err
	}
	section := func(name string, lines []string) {
		fmt.Fprintf(w, "## %s\n", name)
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	section("processes", c.clusterProcesses())
	section("mounts", hostMounts())
	netns, _ := os.ReadDir("/run/netns")
	var ns []string
	for _, e := range netns {
		ns = append(ns, e.Name())
	}
	if _, err := os.Stat("/run/netns"); err == nil {
		ns = append(ns, "(/run/netns exists)")
	}
	section("network namespaces", ns)
	for _, cmd := range [][]string{
		{"ip", "-o", "link", "show"}, {"ip", "-o", "addr", "show"}, {"ip", "route", "show", "table", "all"},
		{"nft", "list", "ruleset"}, {"iptables-legacy-save"}, {"iptables-nft-save"},
	} {
		out, err := run(ctx, cmd[0], cmd[1:]...)
		if err != nil {
			out = "error: " + err.Error()
		}
		section(strings.Join(cmd, " "), stableLines(out))
	}
	section("cgroups", topCgroups())
	var sys []string
	for _, k := range append(append([]string{}, hostSysctls...), "net.ipv4.ip_forward") {
		v, _ := readSysctl(k)
		sys = append(sys, k+" = "+v)
	}
	section("sysctls", sys)
	var paths []string
	for _, p := range hostPathsPerNode {
		if _, err := os.Stat(p); err == nil {
			paths = append(paths, p)
		}
	}
	section("host paths", paths)
	return nil
}

// stableLines drops what changes on its own between two snapshots (counters, timestamps
// in comments, link statistics) and sorts the rest.
func stableLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if i := strings.Index(l, " ["); strings.HasPrefix(l, ":") && i > 0 {
			l = l[:i] // iptables chain counters
		}
		lines = append(lines, l)
	}
	sort.Strings(lines)
	return lines
}

// clusterProcesses lists the executables of the cluster's processes: those clusterPids
// finds and any left in a node's cgroup. Other processes running the same programs (an
// envtest kube-apiserver, a valkey-server of a unit test) are not the cluster's.
func (c Config) clusterProcesses() []string {
	pids := c.clusterPids()
	for _, cg := range nodeCgroups() {
		for _, h := range cgroupHierarchies() {
			pids = append(pids, cgroupTreePids(filepath.Join(h, cg))...)
		}
	}
	seen := map[int]bool{}
	var out []string
	for _, pid := range pids {
		if seen[pid] {
			continue
		}
		seen[pid] = true
		if exe := exeOf(pid); exe != "" {
			out = append(out, exe)
		}
	}
	sort.Strings(out)
	return out
}

func hostMounts() []string {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 3 {
			out = append(out, f[0]+" "+f[1]+" "+f[2])
		}
	}
	sort.Strings(out)
	return out
}

func topCgroups() []string {
	var out []string
	for _, h := range cgroupHierarchies() {
		entries, _ := os.ReadDir(h)
		for _, e := range entries {
			if e.IsDir() {
				out = append(out, filepath.Join(h, e.Name()))
			}
		}
	}
	sort.Strings(out)
	return out
}

// LoadImages imports image tarballs into the containerd of every running node.
func LoadImages(ctx context.Context, c Config, files []string) error {
	c, err := c.WithDefaults()
	if err != nil {
		return err
	}
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	for i := 1; i <= st.Nodes; i++ {
		if err := images.Import(ctx, "ctr", c.containerdSocket(Node{Index: i}), files); err != nil {
			return err
		}
	}
	return nil
}
