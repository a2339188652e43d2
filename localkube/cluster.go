package localkube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valkey-operator/valkey-operator/images"
)

// hostSysctls are the machine-wide settings kubelet changes at start; local-down puts
// back the values found before the first local-up.
var hostSysctls = []string{
	"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
	"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes",
}

// state is what a running cluster records about itself in RunDir/state.json.
type state struct {
	Nodes     int       `json:"nodes"`
	StartedAt time.Time `json:"startedAt"`
}

// Up starts the local cluster. On a healthy running cluster it reports so and returns nil;
// on the leftovers of a cluster whose processes died without local-down, it cleans them up
// and starts fresh. self is the path of the localkube binary (node runners re-execute it).
func Up(ctx context.Context, c Config, self string) error {
	c, err := c.WithDefaults()
	if err != nil {
		return err
	}
	if st, err := c.Status(ctx); err == nil {
		if st.Nodes != c.Nodes {
			return fmt.Errorf("the local cluster already runs with %d nodes (asked for %d): run local-down first", st.Nodes, c.Nodes)
		}
		c.Log("the local cluster is already running (%d nodes); kubeconfig: %s", st.Nodes, c.Kubeconfig())
		return nil
	}
	if c.hasLeftovers() {
		c.Log("cleaning up the leftovers of an earlier run")
		if err := Down(ctx, c); err != nil {
			return fmt.Errorf("clean up leftovers: %w", err)
		}
	}
	if err := c.checkBinaries(); err != nil {
		return err
	}
	start := time.Now()
	if err := c.up(ctx, self); err != nil {
		c.Log("bring-up failed: %v; logs are in %s", err, c.path("logs"))
		return err
	}
	c.Log("the local cluster is up with %d nodes in %s; export KUBECONFIG=%s", c.Nodes, time.Since(start).Round(100*time.Millisecond), c.Kubeconfig())
	return nil
}

func (c Config) up(ctx context.Context, self string) error {
	if err := os.RemoveAll(c.RunDir()); err != nil {
		return err
	}
	if err := os.MkdirAll(c.path("logs"), 0o755); err != nil {
		return err
	}
	if err := c.saveSysctls(); err != nil {
		return err
	}
	if err := c.prepareHostPaths(); err != nil {
		return err
	}
	if err := c.writeFiles(); err != nil {
		return err
	}
	if err := c.setupNetwork(ctx); err != nil {
		return err
	}
	t0 := time.Now()
	phase := func(what string) { c.Log("%s after %s", what, time.Since(t0).Round(10*time.Millisecond)) }
	logs, pids := c.path("logs"), c.path("pids")
	for _, n := range c.nodes() {
		cmd := c.nodeCommand(self, n)
		if _, err := (daemon{Name: "node-" + n.Name(), Args: cmd}).start(logs, pids); err != nil {
			return err
		}
	}
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	if _, err := c.etcdDaemon(ports[0], ports[1]).start(logs, pids); err != nil {
		return err
	}
	if err := waitFor(ctx, 30*time.Second, 50*time.Millisecond, "etcd", func() (bool, error) {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0]))
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	}); err != nil {
		return err
	}
	auditLog, err := c.newAuditLog()
	if err != nil {
		return err
	}
	if _, err := c.apiserverDaemon(ports[0], auditLog).start(logs, pids); err != nil {
		return err
	}
	if err := c.waitAPIReady(ctx, 90*time.Second); err != nil {
		return err
	}
	phase("kube-apiserver ready")
	if err := c.startNetpol(ctx); err != nil {
		return err
	}
	for _, d := range []daemon{
		c.controllerManagerDaemon(ports[2]), c.schedulerDaemon(ports[3]), c.corednsDaemon(),
		{Name: "provisioner", Args: []string{self, "provisioner", "--cache-dir", c.CacheDir, "--repo-root", c.RepoRoot}},
	} {
		if _, err := d.start(logs, pids); err != nil {
			return err
		}
	}
	if err := c.waitHealthy(ctx, 3*time.Minute, phase); err != nil {
		return err
	}
	b, _ := json.Marshal(state{Nodes: c.Nodes, StartedAt: time.Now()})
	return os.WriteFile(c.path("state.json"), b, 0o644)
}

func (c Config) writeFiles() error {
	if err := os.WriteFile(c.path("resolv.conf"), []byte(resolvConf), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(c.path("Corefile"), []byte(c.corefile()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(c.path("audit-policy.yaml"), []byte(auditPolicy), 0o644); err != nil {
		return err
	}
	if err := c.writePKI(); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	for _, n := range c.nodes() {
		if err := c.writeNodeFiles(n); err != nil {
			return err
		}
	}
	return nil
}

// auditKeep is how long audit logs of earlier bring-ups stay in AuditDir.
const auditKeep = 24 * time.Hour

// newAuditLog is the audit log of this bring-up, named by its start (UTC), in AuditDir;
// logs older than auditKeep are removed.
func (c Config) newAuditLog() (string, error) {
	dir := c.AuditDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > auditKeep {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	return filepath.Join(dir, "kube-apiserver-"+time.Now().UTC().Format("20060102T150405.000Z")+".log"), nil
}

// checkBinaries fails with the command to run when a binary is missing.
func (c Config) checkBinaries() error {
	need := []string{c.bin("etcd"), c.bin("kube-apiserver"), c.bin("kube-controller-manager"),
		c.bin("kube-scheduler"), c.bin("kubelet"), c.bin("kube-proxy"), c.bin("kubectl"), c.CoreDNSBinary()}
	for _, p := range need {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s is missing: run `make local-build` (or localkube build)", p)
		}
	}
	if _, err := images.ReadManifest(c.CacheDir); err != nil {
		return fmt.Errorf("no images (%v): run `make images`", err)
	}
	return nil
}

// saveSysctls records the machine-wide sysctls once; a later local-down restores them. An
// existing record (from a run that was killed) is kept, as it holds the original values.
func (c Config) saveSysctls() error {
	path := c.sysctlRecord()
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	vals := map[string]string{}
	for _, k := range hostSysctls {
		if v, err := readSysctl(k); err == nil {
			vals[k] = v
		}
	}
	b, _ := json.MarshalIndent(vals, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// sysctlRecord lives outside RunDir so that a fresh bring-up after a killed run, which
// removes RunDir, still finds the values from before the first one.
func (c Config) sysctlRecord() string {
	return filepath.Join(c.CacheDir, "localkube", "host-sysctls.json")
}

func sysctlPath(k string) string { return filepath.Join("/proc/sys", strings.ReplaceAll(k, ".", "/")) }

func readSysctl(k string) (string, error) {
	b, err := os.ReadFile(sysctlPath(k))
	return strings.TrimSpace(string(b)), err
}

// prepareHostPaths creates the mount points the nodes bind over, recording the ones that
// did not exist so local-down removes exactly those.
func (c Config) prepareHostPaths() error {
	record := c.createdPathsRecord()
	var created []string
	if b, err := os.ReadFile(record); err == nil {
		created = strings.Fields(string(b))
	}
	for _, p := range hostPathsPerNode {
		if _, err := os.Stat(p); os.IsNotExist(err) {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			created = append(created, p)
		}
	}
	return os.WriteFile(record, []byte(strings.Join(created, "\n")), 0o644)
}

func (c Config) createdPathsRecord() string {
	return filepath.Join(c.CacheDir, "localkube", "created-host-paths")
}

// Status describes a running cluster.
type Status struct {
	Nodes      int
	Kubeconfig string
	Components map[string]bool
}

// Status returns the state of the running cluster, or an error saying why it is not
// running and healthy.
func (c Config) Status(ctx context.Context) (Status, error) {
	c, err := c.WithDefaults()
	if err != nil {
		return Status{}, err
	}
	b, err := os.ReadFile(c.path("state.json"))
	if err != nil {
		return Status{}, errNotRunning
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return Status{}, fmt.Errorf("read state: %w", err)
	}
	out := Status{Nodes: st.Nodes, Kubeconfig: c.Kubeconfig(), Components: map[string]bool{}}
	names := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "coredns", "provisioner"}
	for i := 1; i <= st.Nodes; i++ {
		names = append(names, "node-"+Node{Index: i}.Name())
	}
	var down []string
	for _, n := range names {
		ok := alive(readPid(c.path("pids"), n))
		out.Components[n] = ok
		if !ok {
			down = append(down, n)
		}
	}
	if len(down) > 0 {
		return out, fmt.Errorf("%w: not running: %s", errNotRunning, strings.Join(down, ", "))
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if code, _, err := c.apiGet(cctx, "/readyz"); err != nil || code != 200 {
		return out, fmt.Errorf("%w: kube-apiserver not ready (%d, %v)", errNotRunning, code, err)
	}
	return out, nil
}

// hasLeftovers reports whether anything of a cluster is present on the machine.
func (c Config) hasLeftovers() bool {
	for _, p := range []string{c.path("state.json"), c.path("pids")} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	if len(nodeNetnses()) > 0 || linkExists(BridgeName) || len(nodeCgroups()) > 0 {
		return true
	}
	return len(c.clusterPids()) > 0
}

func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

// nodeNetnses lists the network namespaces of local nodes, whatever the node count was.
func nodeNetnses() []string {
	entries, _ := os.ReadDir("/run/netns")
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), netnsPrefix) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// nodeCgroups lists the node cgroup roots present in any hierarchy.
func nodeCgroups() []string {
	seen := map[string]bool{}
	for _, h := range cgroupHierarchies() {
		entries, _ := os.ReadDir(h)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), cgroupPrefix+"n") {
				if _, err := strconv.Atoi(strings.TrimPrefix(e.Name(), cgroupPrefix+"n")); err == nil {
					seen["/"+e.Name()] = true
				}
			}
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// clusterPids lists every process of the cluster: any process naming the cache in its
// arguments, and anything inside a node's namespace. Neither the executable's path nor
// argv[0] counts: other programs run the same cached binaries (the modules' integration
// tests start envtest's etcd and kube-apiserver from BinDir), and they are not ours to
// stop.
func (c Config) clusterPids() []int {
	set := map[int]bool{}
	// Our daemons and their helpers name the cache in their arguments; matching only known
	// executables keeps a shell that merely mentions the folder out of it.
	for _, p := range pidsWithArg(c.CacheDir) {
		if clusterProcessNames[filepath.Base(exeOf(p))] {
			set[p] = true
		}
	}
	for _, ns := range nodeNetnses() {
		for _, p := range pidsInNetns(ns) {
			set[p] = true
		}
	}
	out := make([]int, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	return out
}

// Down stops the cluster and removes everything it made on the machine: processes, node
// namespaces and their mounts, the bridge and routes, the guard table, cgroups, the
// sysctls kubelet changed and the mount points it created. Safe to run twice.
func Down(ctx context.Context, c Config) error {
	c, err := c.WithDefaults()
	if err != nil {
		return err
	}
	var errs []error
	// Node runners first: they stop kubelet before containerd and kill their pods.
	var runners []int
	for _, ns := range nodeNetnses() {
		runners = append(runners, readPid(c.path("pids"), "node-"+strings.TrimPrefix(ns, netnsPrefix)))
	}
	t0 := time.Now()
	stopPids(runners, 20*time.Second)
	c.Log("nodes stopped after %s", time.Since(t0).Round(10*time.Millisecond))
	// kube-apiserver drains in-flight requests for up to a minute on SIGTERM; nothing of
	// this cluster outlives it, so it gets a short grace like the rest.
	var daemons []int
	if entries, err := os.ReadDir(c.path("pids")); err == nil {
		for _, e := range entries {
			daemons = append(daemons, readPid(c.path("pids"), strings.TrimSuffix(e.Name(), ".pid")))
		}
	}
	stopPids(daemons, 2*time.Second)
	for _, cg := range nodeCgroups() {
		killCgroupTree(cg)
	}
	stopPids(c.clusterPids(), 10*time.Second)
	if left := c.clusterPids(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("processes still running: %v", left))
	}
	for _, ns := range nodeNetnses() {
		if _, err := run(ctx, "ip", "netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	for _, link := range vethLinks() {
		_, _ = run(ctx, "ip", "link", "del", link)
	}
	if linkExists(BridgeName) {
		if _, err := run(ctx, "ip", "link", "del", BridgeName); err != nil {
			errs = append(errs, err)
		}
	}
	if out, _ := run(ctx, "nft", "list", "tables"); strings.Contains(out, guardTable) {
		if _, err := run(ctx, "nft", "delete", "table", "inet", guardTable); err != nil {
			errs = append(errs, err)
		}
	}
	for _, cg := range nodeCgroups() {
		removeCgroupTree(cg)
	}
	if left := nodeCgroups(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("cgroups still present: %v", left))
	}
	errs = append(errs, c.restoreHost(ctx))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Logs stay for reading; what marks a cluster as present goes.
	_ = os.Remove(c.path("state.json"))
	return os.RemoveAll(c.path("pids"))
}

func vethLinks() []string {
	entries, _ := os.ReadDir("/sys/class/net")
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), vethPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// removeCgroupTree removes a cgroup subtree bottom-up in every hierarchy.
func removeCgroupTree(root string) {
	for _, h := range cgroupHierarchies() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			// A cgroup whose last process just died can be busy for a moment.
			for try := 0; try < 50; try++ {
				if err := os.Remove(dirs[i]); err == nil || os.IsNotExist(err) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}

// restoreHost puts back sysctls, removes /run/netns if we created it and the mount points
// we created, and unmounts anything left under the run folder.
func (c Config) restoreHost(ctx context.Context) error {
	var errs []error
	if b, err := os.ReadFile(c.sysctlRecord()); err == nil {
		var vals map[string]string
		if err := json.Unmarshal(b, &vals); err == nil {
			for k, v := range vals {
				if cur, err := readSysctl(k); err == nil && cur != v {
					if err := os.WriteFile(sysctlPath(k), []byte(v), 0o644); err != nil {
						errs = append(errs, fmt.Errorf("restore %s: %w", k, err))
					}
				}
			}
		}
		_ = os.Remove(c.sysctlRecord())
	}
	for _, m := range mountsUnder(c.CacheDir) {
		_ = syscallUnmount(m)
	}
	if entries, err := os.ReadDir("/run/netns"); err == nil && len(entries) == 0 && c.createdRunNetns() {
		_ = syscallUnmount("/run/netns")
		if err := os.Remove("/run/netns"); err != nil {
			errs = append(errs, err)
		}
		_ = os.Remove(c.runNetnsMarker())
	}
	if b, err := os.ReadFile(c.createdPathsRecord()); err == nil {
		for _, p := range strings.Fields(string(b)) {
			_ = os.Remove(p) // only if empty: we never delete what someone else put there
		}
		_ = os.Remove(c.createdPathsRecord())
	}
	return errors.Join(errs...)
}

func (c Config) createdRunNetns() bool {
	_, err := os.Stat(c.runNetnsMarker())
	return err == nil
}

// runNetnsMarker records that /run/netns was made by us (`ip netns add` creates it as a
// shared bind mount of itself); it lives outside RunDir to survive a killed run.
func (c Config) runNetnsMarker() string {
	return filepath.Join(c.CacheDir, "localkube", "created-run-netns")
}

// mountsUnder lists host mount points below dir, deepest first.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && strings.HasPrefix(f[1], dir+"/") {
			out = append(out, f[1])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out
}

func syscallUnmount(path string) error { return syscall.Unmount(path, syscall.MNT_DETACH) }
