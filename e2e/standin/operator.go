package standin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/e2e/perf"
)

// Namespace and Release are where the stand-in installs the operator, as the suites do.
const (
	Namespace = "valkey-operator"
	Release   = "valkey-operator"
)

// Component is one operator Deployment of the chart, run as host processes.
type Component struct {
	// Name is the Deployment's component label (cluster-controller, manager, ...).
	Name string
	// Binary is the file name of the program (/usr/local/bin/<Binary> in the image).
	Binary string
	// Args are the container's arguments, as the chart renders them, after the rest of
	// its command (the controller's name, when the manager binary runs one alone).
	Args           []string
	ServiceAccount string
	Replicas       int
}

// Chart is what the stand-in takes of the rendered chart: the operator's Deployments and
// its RBAC (ServiceAccounts, roles and bindings).
type Chart struct {
	Components []Component
	RBAC       []*unstructured.Unstructured
}

// RenderChart renders the chart at root/charts/valkey-operator with helm and the given
// --set values, for the namespace and release above.
func RenderChart(ctx context.Context, helm, root string, sets ...string) (Chart, error) {
	args := []string{"template", Release, filepath.Join(root, "charts", "valkey-operator"), "--namespace", Namespace, "--kube-version", "1.37.2"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, helm, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return Chart{}, fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, errb.String())
	}
	return parseChart(&out)
}

// parseChart reads the rendered chart's objects.
func parseChart(r io.Reader) (Chart, error) {
	var ch Chart
	dec := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Chart{}, fmt.Errorf("read the rendered chart: %w", err)
		}
		var u unstructured.Unstructured
		if err := utilyaml.Unmarshal(doc, &u.Object); err != nil || u.Object == nil {
			continue
		}
		switch u.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			ch.RBAC = append(ch.RBAC, &u)
		case "Deployment":
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
				return Chart{}, fmt.Errorf("read deployment %s: %w", u.GetName(), err)
			}
			c, err := componentOf(&d)
			if err != nil {
				return Chart{}, err
			}
			ch.Components = append(ch.Components, c)
		}
	}
	if len(ch.Components) == 0 {
		return Chart{}, errors.New("the rendered chart has no operator Deployment")
	}
	return ch, nil
}

func componentOf(d *appsv1.Deployment) (Component, error) {
	if len(d.Spec.Template.Spec.Containers) == 0 || len(d.Spec.Template.Spec.Containers[0].Command) == 0 {
		return Component{}, fmt.Errorf("deployment %s: no command", d.Name)
	}
	ctr := d.Spec.Template.Spec.Containers[0]
	return Component{
		Name: d.Labels[perf.ComponentLabel], Binary: filepath.Base(ctr.Command[0]), Args: slices.Concat(ctr.Command[1:], ctr.Args),
		ServiceAccount: d.Spec.Template.Spec.ServiceAccountName, Replicas: int(ptr.Deref(d.Spec.Replicas, 1)),
	}, nil
}

// ApplyRBAC creates the operator's namespace and applies the chart's RBAC objects
// (server-side, so the other mode's bindings of the same names are replaced).
func ApplyRBAC(ctx context.Context, c client.Client, ch Chart) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := c.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("create namespace %s: %w", Namespace, err)
	}
	for _, o := range ch.RBAC {
		o = o.DeepCopy()
		if o.GetNamespace() == "" && (o.GetKind() == "ServiceAccount" || o.GetKind() == "Role" || o.GetKind() == "RoleBinding") {
			o.SetNamespace(Namespace)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("standin"), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// Process is one running operator process.
type Process struct {
	Component string
	Name      string
	Pid       int
	started   time.Time
	probe     string
	// pprof is the address of the process's profiling endpoint, empty when off.
	pprof string
	cmd   *exec.Cmd
	done  chan struct{}
}

// Operator is the operator's processes of one mode.
type Operator struct {
	Processes []*Process
}

// StartOperator runs each component's binary from bin (Replicas processes each) with
// the chart's arguments, its own probe and metrics ports on 127.0.0.1, POD_NAMESPACE
// and a kubeconfig that authenticates it as its ServiceAccount, and waits until each
// component's Lease is held by one of them. With profile, each process also serves
// Go's profiles (--pprof-bind-address on 127.0.0.1), which HeapProfiles reads.
func StartOperator(ctx context.Context, e *Env, bin string, comps []Component, profile bool) (*Operator, error) {
	op := &Operator{}
	for _, comp := range comps {
		user := "system:serviceaccount:" + Namespace + ":" + comp.ServiceAccount
		kc, err := e.Kubeconfig(user, "system:serviceaccounts", "system:serviceaccounts:"+Namespace, "system:authenticated")
		if err != nil {
			op.Stop()
			return nil, err
		}
		for i := range comp.Replicas {
			p, err := startProcess(e.Dir, bin, comp, i, kc, profile)
			if err != nil {
				op.Stop()
				return nil, err
			}
			op.Processes = append(op.Processes, p)
		}
	}
	if err := op.waitLeaders(ctx, e.Client, 2*time.Minute); err != nil {
		op.Stop()
		return nil, err
	}
	return op, nil
}

// startProcess starts one process of a component.
func startProcess(dir, bin string, comp Component, i int, kubeconfig string, profile bool) (*Process, error) {
	metrics, err := freePort()
	if err != nil {
		return nil, err
	}
	probe, err := freePort()
	if err != nil {
		return nil, err
	}
	args := make([]string, 0, len(comp.Args))
	for _, a := range comp.Args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=" + metrics
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=" + probe
		}
		args = append(args, a)
	}
	var pprof string
	if profile {
		if pprof, err = freePort(); err != nil {
			return nil, err
		}
		args = append(args, "--pprof-bind-address="+pprof)
	}
	name := fmt.Sprintf("%s-%d", comp.Name, i)
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(bin, comp.Binary), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "KUBECONFIG=" + kubeconfig, "POD_NAMESPACE=" + Namespace}
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} { // the Go runtime's memory policy, to compare
		if val, ok := os.LookupEnv(v); ok {
			cmd.Env = append(cmd.Env, v+"="+val)
		}
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", comp.Binary, err)
	}
	p := &Process{Component: comp.Name, Name: name, Pid: cmd.Process.Pid, started: time.Now(), probe: probe, pprof: pprof, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	return p, nil
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// HeapProfiles writes each process's heap profile, after a garbage collection, to
// dir/<prefix>-<process>.heap.pb.gz (for go tool pprof). The operator must have been
// started with profile.
func (o *Operator) HeapProfiles(ctx context.Context, dir, prefix string) error {
	for _, p := range o.Processes {
		if p.pprof == "" {
			return fmt.Errorf("%s serves no profiles", p.Name)
		}
		if err := perf.SaveHeapProfile(ctx, p.pprof, filepath.Join(dir, prefix+"-"+p.Name+".heap.pb.gz"), true); err != nil {
			return fmt.Errorf("heap profile of %s: %w", p.Name, err)
		}
	}
	return nil
}

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// waitLeaders waits until each component answers /readyz and holds its Lease
// (valkey-operator-<component>), acquired after its processes started.
func (o *Operator) waitLeaders(ctx context.Context, c client.Client, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, p := range o.Processes {
		for {
			if !p.Running() {
				return fmt.Errorf("%s exited (see %s.log)", p.Name, p.Name)
			}
			ok, why := p.leading(ctx, c)
			if ok {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: %s after %s", p.Name, why, timeout)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// leading reports whether the component of p answers its readiness probe and its Lease
// was acquired since p started.
func (p *Process) leading(ctx context.Context, c client.Client) (bool, string) {
	resp, err := http.Get("http://" + p.probe + "/readyz")
	if err != nil {
		return false, "not answering /readyz: " + err.Error()
	}
	resp.Body.Close()
	var l coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "valkey-operator-" + p.Component}, &l); err != nil {
		return false, "no Lease: " + err.Error()
	}
	if ptr.Deref(l.Spec.HolderIdentity, "") == "" || l.Spec.AcquireTime == nil || l.Spec.AcquireTime.Time.Before(p.started.Truncate(time.Second)) {
		return false, "its Lease is not held by a process started now"
	}
	return true, ""
}

// Exited names the processes that exited.
func (o *Operator) Exited() []string {
	var out []string
	for _, p := range o.Processes {
		if !p.Running() {
			out = append(out, p.Name)
		}
	}
	return out
}

// Stop ends every process with SIGTERM (they release their Leases), SIGKILL after 15 s.
func (o *Operator) Stop() {
	for _, p := range o.Processes {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range o.Processes {
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// Snapshot reads every process's CPU time and resident memory from /proc, keyed as
// pods are (one key per process start), so perf.OperatorSnapshot.Usage applies.
func (o *Operator) Snapshot() (perf.OperatorSnapshot, error) {
	snap := perf.OperatorSnapshot{At: time.Now(), Pods: map[string]perf.PodSample{}}
	for _, p := range o.Processes {
		cpu, rss, start, err := procStat(p.Pid)
		if err != nil {
			return snap, fmt.Errorf("%s: %w", p.Name, err)
		}
		mem, err := perf.ReadProcessMemory(p.Pid)
		if err != nil {
			return snap, fmt.Errorf("%s: %w", p.Name, err)
		}
		snap.Pods[strconv.Itoa(p.Pid)+"@"+strconv.FormatUint(start, 10)] = perf.PodSample{Name: p.Name, Component: p.Component,
			CPUSeconds: cpu, RSSBytes: rss, FileBytes: mem.RSSFile, PSSBytes: mem.PSS}
	}
	return snap, nil
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's times (100 on
// every Linux architecture Go supports).
const clockTicks = 100

// procStat reads a process's CPU seconds (user and system), resident bytes and start
// time (in clock ticks after boot) from /proc/<pid>/stat, as Prometheus' process
// collector does for process_cpu_seconds_total and process_resident_memory_bytes.
func procStat(pid int) (cpu, rss float64, start uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	return parseStat(string(b), os.Getpagesize())
}

// parseStat parses a /proc/<pid>/stat line: after the command in parentheses, field 14
// and 15 are utime and stime, 22 starttime, 24 rss in pages.
func parseStat(line string, pageSize int) (cpu, rss float64, start uint64, err error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, 0, 0, fmt.Errorf("parse /proc stat %q", line)
	}
	f := strings.Fields(line[i+1:]) // f[0] is field 3 (state)
	if len(f) < 22 {
		return 0, 0, 0, fmt.Errorf("parse /proc stat: %d fields", len(f)+2)
	}
	num := func(field int) (uint64, error) { return strconv.ParseUint(f[field-3], 10, 64) }
	ut, err1 := num(14)
	st, err2 := num(15)
	start, err3 := num(22)
	pages, err4 := num(24)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return 0, 0, 0, fmt.Errorf("parse /proc stat: %w", err)
	}
	return float64(ut+st) / clockTicks, float64(pages) * float64(pageSize), start, nil
}
