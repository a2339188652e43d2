// Command baseline measures what each of the operator's processes costs at rest, with
// no ValkeyCluster: it starts a real API server (envtest's kube-apiserver and etcd, the
// CRDs of config/crd), runs every component binary and the manager against it as host
// processes with the chart's flags, waits until each one's resident memory stops moving,
// and prints one row per process: RSS (anonymous and file-backed) and PSS from /proc, the Go
// runtime's heap in use, heap released, stacks and GC goal from its metrics endpoint,
// and its CPU time per minute at rest.
//
//	cd e2e && GOWORK=off go run ./perf/baseline
//	cd e2e && GOWORK=off go run ./perf/baseline -env GOGC=off -env GOMEMLIMIT=64MiB
//	cd e2e && GOWORK=off go run ./perf/baseline -bin /tmp/old -pprof /tmp/heap
//	cd e2e && GOWORK=off go run ./perf/baseline -members 200 -components manager
//	cd e2e && GOWORK=off go run ./perf/baseline -own-binaries
//
// A controller runs as the chart runs it alone: the manager binary with the controller's
// name first (manager cluster-controller ...); with -own-binaries, its own binary instead.
// The PSS of processes running one binary shares that binary's pages among them, so it
// is lower than their RSS while they run together.
//
// With -members, ValkeyClusters of 10 members each (5 shards of a primary and a
// replica) are created first, and the measurement starts once their ValkeyNodes exist.
// The API server runs no pods, so the members never become Ready: what this shows is
// what the operator's caches and periodic passes cost per member, not a running cluster
// (make bench, item 9, measures that). The controllers then act, so the manager and a
// controller it runs cannot be measured in the same run.
//
// The binaries are built from the repository (as `make operator-binaries` builds them)
// unless -bin names a directory that holds them. KUBEBUILDER_ASSETS names the directory
// of kube-apiserver and etcd (default: .cache/k8s/v1.37.2/bin of the repository).
// With -pprof, each process serves its profiles (--pprof-bind-address) and its heap
// profile is saved there; `go tool pprof -top -sample_index=inuse_space <file>` reads it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
)

// components are the binaries the chart runs (the webhooks twice), and the manager,
// which runs every controller in one process (controllers.combined).
var components = []string{"cluster-controller", "node-controller", "acl-controller", "tls-controller",
	"backup-controller", "webhooks", "manager"}

// namespace is the operator's namespace (POD_NAMESPACE: the Leases, the webhooks' Secret).
const namespace = "valkey-operator"

// membersNamespace holds the ValkeyClusters of -members.
const membersNamespace = "members"

// membersPerCluster is the size of each ValkeyCluster of -members: 5 shards of 2.
const membersPerCluster = 10

type config struct {
	repo, bin, pprofDir, logDir string
	components                  []string
	env                         []string
	cpuWindow, timeout          time.Duration
	settle, members             int
	tolerance                   float64 // MiB
	ownBinaries                 bool
}

func main() {
	var c config
	var comps string
	flag.StringVar(&c.repo, "repo", "..", "root of the repository (CRDs, sources)")
	flag.StringVar(&c.bin, "bin", "", "directory of prebuilt binaries (default: build them from -repo)")
	flag.StringVar(&comps, "components", strings.Join(components, ","), "comma-separated binaries to run")
	flag.Func("env", "NAME=VALUE set in every process's environment (repeatable), e.g. GOGC=50", func(s string) error {
		if !strings.Contains(s, "=") {
			return fmt.Errorf("want NAME=VALUE, got %q", s)
		}
		c.env = append(c.env, s)
		return nil
	})
	flag.StringVar(&c.pprofDir, "pprof", "", "directory to save each process's heap profile in (off when empty)")
	flag.StringVar(&c.logDir, "logs", "", "directory for each process's log (default: a temporary one)")
	flag.DurationVar(&c.cpuWindow, "cpu-window", time.Minute, "how long the CPU time at rest is counted")
	flag.IntVar(&c.members, "members", 0, "members of the ValkeyClusters created before the measurement (in clusters of 10)")
	flag.IntVar(&c.settle, "settle", 15, "samples (2 s apart) within -tolerance of each other that make a process's RSS settled")
	flag.Float64Var(&c.tolerance, "tolerance", 1, "MiB the settled samples may differ by (busy processes, -members, need more)")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "limit of the whole run")
	flag.BoolVar(&c.ownBinaries, "own-binaries", false, "run each controller's own binary, not the manager's with its name first as the chart does")
	flag.Parse()
	c.components = strings.Split(comps, ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	repo, err := filepath.Abs(c.repo)
	if err != nil {
		return err
	}
	for _, name := range c.components {
		if !slices.Contains(components, name) {
			return fmt.Errorf("-components: no binary %q (have %s)", name, strings.Join(components, ", "))
		}
		if c.members > 0 && name != "manager" && name != "webhooks" && slices.Contains(c.components, "manager") {
			return fmt.Errorf("-members: %s and the manager would both act on the clusters; measure them in two runs", name)
		}
	}
	if c.members > 0 && !slices.Contains(c.components, "cluster-controller") && !slices.Contains(c.components, "manager") {
		return errors.New("-members: the cluster-controller (or the manager) makes the members; run it")
	}
	work, err := os.MkdirTemp("", "baseline-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if c.logDir == "" {
		c.logDir = work
	}
	for _, d := range []string{c.logDir, c.pprofDir} {
		if d != "" {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
	}
	if c.bin == "" {
		c.bin = filepath.Join(work, "bin")
		programs := map[string]bool{}
		for _, name := range c.components {
			program, _ := c.program(name)
			programs[program] = true
		}
		if err := build(ctx, repo, c.bin, slices.Sorted(maps.Keys(programs))); err != nil {
			return err
		}
	}
	kubeconfig, cl, stopAPI, err := startAPIServer(ctx, repo, work)
	if err != nil {
		return err
	}
	defer stopAPI()
	if err := createClusters(ctx, cl, c.members); err != nil {
		return err
	}

	procs := make([]*process, len(c.components))
	for i, name := range c.components {
		p, err := start(ctx, c, name, kubeconfig)
		if err != nil {
			return err
		}
		defer p.stop()
		procs[i] = p
	}
	fmt.Fprintf(os.Stderr, "started %s; logs in %s\n", strings.Join(c.components, ", "), c.logDir)
	if err := waitMembers(ctx, cl, c.members); err != nil {
		return err
	}
	// The first failure ends the others' waits.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(procs))
	for i, p := range procs {
		wg.Go(func() {
			if errs[i] = p.measure(ctx, c); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	printTable(os.Stdout, procs, c)
	return nil
}

// build builds the binaries as `make operator-binaries` does.
func build(ctx context.Context, repo, bin string, names []string) error {
	for _, name := range names {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(bin, name), ".")
		cmd.Dir = filepath.Join(repo, name)
		cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w\n%s", name, err, out)
		}
	}
	return nil
}

// startAPIServer starts envtest with the CRDs and the operator's namespace and writes a
// kubeconfig of a cluster administrator; stop ends it.
func startAPIServer(ctx context.Context, repo, work string) (kubeconfig string, cl client.Client, stop func(), err error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		os.Setenv("KUBEBUILDER_ASSETS", filepath.Join(repo, ".cache", "k8s", "v1.37.2", "bin"))
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join(repo, "config", "crd")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		return "", nil, nil, fmt.Errorf("start the API server (KUBEBUILDER_ASSETS=%s): %w", os.Getenv("KUBEBUILDER_ASSETS"), err)
	}
	stop = func() { _ = env.Stop() }
	fail := func(err error) (string, client.Client, func(), error) { stop(); return "", nil, nil, err }
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fail(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return fail(err)
	}
	if cl, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return fail(err)
	}
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return fail(fmt.Errorf("create namespace %s: %w", namespace, err))
	}
	// The webhooks' self-signed mode sets the caBundle of this configuration. It admits
	// nothing: no ValkeyCluster is written during the measurement.
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "valkey-operator-webhooks"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "valkeycluster.valkey.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Namespace: namespace, Name: "webhooks", Path: ptr.To("/validate")},
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"valkey.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"valkeyclusters"}},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := cl.Create(ctx, vwc); err != nil {
		return fail(fmt.Errorf("create the webhook configuration: %w", err))
	}
	user, err := env.AddUser(envtest.User{Name: "operator", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fail(err)
	}
	b, err := user.KubeConfig()
	if err != nil {
		return fail(err)
	}
	kubeconfig = filepath.Join(work, "kubeconfig")
	if err := os.WriteFile(kubeconfig, b, 0o600); err != nil {
		return fail(err)
	}
	return kubeconfig, cl, stop, nil
}

// createClusters creates ValkeyClusters of membersPerCluster members, members in all.
func createClusters(ctx context.Context, cl client.Client, members int) error {
	if members <= 0 {
		return nil
	}
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: membersNamespace}}); err != nil {
		return fmt.Errorf("create namespace %s: %w", membersNamespace, err)
	}
	for i := range (members + membersPerCluster - 1) / membersPerCluster {
		vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: membersNamespace, Name: fmt.Sprintf("c%03d", i)},
			Spec: v1alpha1.ValkeyClusterSpec{Shards: membersPerCluster / 2, ReplicasPerShard: ptr.To[int32](1)}}
		if err := cl.Create(ctx, vc); err != nil {
			return fmt.Errorf("create ValkeyCluster %s: %w", vc.Name, err)
		}
	}
	return nil
}

// waitMembers waits until the ValkeyNodes of createClusters exist.
func waitMembers(ctx context.Context, cl client.Client, members int) error {
	want := (members + membersPerCluster - 1) / membersPerCluster * membersPerCluster
	for want > 0 {
		var nodes v1alpha1.ValkeyNodeList
		err := cl.List(ctx, &nodes, client.InNamespace(membersNamespace))
		if err == nil && len(nodes.Items) >= want {
			fmt.Fprintf(os.Stderr, "%d ValkeyNodes exist\n", len(nodes.Items))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %d ValkeyNodes (%d so far, %v): %w", want, len(nodes.Items), err, ctx.Err())
		case <-time.After(time.Second):
		}
	}
	return nil
}

// process is one running binary and what was measured of it.
type process struct {
	name                      string
	cmd                       *exec.Cmd
	metrics, probe, pprofAddr string
	exited                    chan struct{}

	mem       perf.ProcessMemory
	gomem     perf.GoMemory
	cpuPerMin float64 // CPU seconds per minute at rest
	settledIn time.Duration
}

// start runs a binary with the chart's flags, metrics over plain HTTP on a local port.
func start(ctx context.Context, c config, name, kubeconfig string) (*process, error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	p := &process{name: name, metrics: ports[0], probe: ports[1], exited: make(chan struct{})}
	args := []string{"--metrics-bind-address=" + p.metrics, "--metrics-secure=false",
		"--health-probe-bind-address=" + p.probe, "--leader-elect=true", "--zap-log-level=info"}
	if c.pprofDir != "" {
		p.pprofAddr = ports[2]
		args = append(args, "--pprof-bind-address="+p.pprofAddr)
	}
	switch name {
	case "webhooks":
		_, port, _ := net.SplitHostPort(ports[3])
		args = append(args, "--cert-mode=self-signed", "--cert-secret="+namespace+"/webhooks-cert",
			"--webhook-config-name=valkey-operator-webhooks", "--webhook-service="+namespace+"/webhooks",
			"--webhook-host=127.0.0.1", "--webhook-port="+port, "--operator-service-accounts="+namespace+":*",
			"--leader-election-namespace="+namespace)
	case "backup-controller":
		args = append(args, "--job-image=valkey-operator:baseline")
	case "manager":
		args = append(args, "--backup-controller.job-image=valkey-operator:baseline")
	}
	if name != "webhooks" {
		args = append(args, "--max-concurrent-reconciles=4")
	}
	log, err := os.Create(filepath.Join(c.logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	program, lead := c.program(name)
	p.cmd = exec.Command(filepath.Join(c.bin, program), append(lead, args...)...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAMESPACE="+namespace)
	p.cmd.Env = append(p.cmd.Env, c.env...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		log.Close()
		close(p.exited)
	}()
	return p, nil
}

// program returns the binary that runs the component name and the arguments before its
// flags: for a controller, the manager with the controller's name, as the chart runs it
// (unless -own-binaries).
func (c config) program(name string) (string, []string) {
	if c.ownBinaries || name == "manager" || name == "webhooks" {
		return name, nil
	}
	return "manager", []string{name}
}

// stop ends the process with SIGTERM, as the kubelet does.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// samplePeriod is the time between two reads of a process's RSS.
const samplePeriod = 2 * time.Second

// measure waits until the process leads and its RSS settled, counts its CPU time over
// the window, then reads its memory.
func (p *process) measure(ctx context.Context, c config) error {
	started := time.Now()
	if err := p.waitLeader(ctx); err != nil {
		return err
	}
	var rss []float64
	for !perf.Settled(rss, c.settle, c.tolerance*(1<<20)) {
		if err := p.sleep(ctx, samplePeriod); err != nil {
			return fmt.Errorf("%s: wait until its RSS settles (last %s): %w", p.name, lastMiB(rss), err)
		}
		m, err := perf.ReadProcessMemory(p.cmd.Process.Pid)
		if err != nil {
			return err
		}
		rss = append(rss, m.RSS)
	}
	p.settledIn = time.Since(started)
	cpu0, err := perf.ReadProcessCPU(p.cmd.Process.Pid)
	if err != nil {
		return err
	}
	if err := p.sleep(ctx, c.cpuWindow); err != nil {
		return fmt.Errorf("%s: count CPU at rest: %w", p.name, err)
	}
	cpu1, err := perf.ReadProcessCPU(p.cmd.Process.Pid)
	if err != nil {
		return err
	}
	p.cpuPerMin = (cpu1 - cpu0) / c.cpuWindow.Minutes()
	if p.mem, err = perf.ReadProcessMemory(p.cmd.Process.Pid); err != nil {
		return err
	}
	series, err := scrape(ctx, "http://"+p.metrics+"/metrics")
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	p.gomem = perf.GoMemoryOf(series)
	// The mappings' share of the RSS (the binary's code and data, the heap), for a look
	// at what the file-backed part is.
	if smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", p.cmd.Process.Pid)); err == nil {
		_ = os.WriteFile(filepath.Join(c.logDir, p.name+".smaps"), smaps, 0o644)
	}
	if c.pprofDir != "" {
		return p.saveHeapProfile(ctx, filepath.Join(c.pprofDir, p.name+".heap.pb.gz"))
	}
	return nil
}

// waitLeader waits until the process holds its Lease (leader_election_master_status),
// which is when its controllers start their watches.
func (p *process) waitLeader(ctx context.Context) error {
	for {
		series, err := scrape(ctx, "http://"+p.metrics+"/metrics")
		if err == nil && perf.Sum(series, "leader_election_master_status", nil) >= 1 {
			return nil
		}
		if serr := p.sleep(ctx, 500*time.Millisecond); serr != nil {
			return fmt.Errorf("%s: wait for its Lease: %w (last scrape: %v)", p.name, serr, err)
		}
	}
}

// sleep waits d, failing when ctx ends or the process exits.
func (p *process) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-p.exited:
		return fmt.Errorf("%s exited (%v); see its log", p.name, p.cmd.ProcessState)
	case <-time.After(d):
		return nil
	}
}

func (p *process) saveHeapProfile(ctx context.Context, path string) error {
	if err := perf.SaveHeapProfile(ctx, p.pprofAddr, path, false); err != nil {
		return fmt.Errorf("%s: heap profile (does the binary take --pprof-bind-address?): %w", p.name, err)
	}
	return nil
}

func scrape(ctx context.Context, url string) ([]perf.Series, error) {
	body, err := get(ctx, url)
	if err != nil {
		return nil, err
	}
	return perf.ParseMetrics(strings.NewReader(string(body)))
}

func get(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("get %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// freePorts returns n local addresses free at the time of the call.
func freePorts(n int) ([]string, error) {
	var out []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}

func mib(b float64) string { return fmt.Sprintf("%.1f", b/(1<<20)) }

func lastMiB(rss []float64) string {
	if len(rss) == 0 {
		return "none"
	}
	return mib(rss[len(rss)-1]) + " MiB"
}

// printTable prints one row per process, in MiB, and the sum of the split mode (every
// binary but the manager, the webhooks counted twice as the chart runs them).
func printTable(w io.Writer, procs []*process, c config) {
	if len(c.env) > 0 {
		fmt.Fprintf(w, "environment: %s\n", strings.Join(c.env, " "))
	}
	if c.members > 0 {
		fmt.Fprintf(w, "members: %d (ValkeyNodes without pods)\n", c.members)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "process\tRSS\tanon\tfile\tPSS\theap inuse\theap idle\treleased\tstacks\tGC goal\tgoroutines\tCPU ms/min\tsettled s\t")
	var split float64
	for _, p := range procs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%.0f\t%.0f\t\n", p.name, mib(p.mem.RSS), mib(p.mem.RSSAnon),
			mib(p.mem.RSSFile), mib(p.mem.PSS), mib(p.gomem.HeapInuse), mib(p.gomem.HeapIdle), mib(p.gomem.HeapReleased), mib(p.gomem.StackInuse),
			mib(p.gomem.NextGC), p.gomem.Goroutines, p.cpuPerMin*1000, p.settledIn.Seconds())
		switch p.name {
		case "manager":
		case "webhooks":
			split += 2 * p.mem.RSS
		default:
			split += p.mem.RSS
		}
	}
	tw.Flush()
	if len(procs) == len(components) {
		fmt.Fprintf(w, "split mode (webhooks x2): %s MiB RSS; one process (manager and webhooks x2): %s MiB\n",
			mib(split), mib(procRSS(procs, "manager")+2*procRSS(procs, "webhooks")))
	}
}

func procRSS(procs []*process, name string) float64 {
	for _, p := range procs {
		if p.name == name {
			return p.mem.RSS
		}
	}
	return 0
}
