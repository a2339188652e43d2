package standin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
)

// Mode is one way the chart runs the controllers.
type Mode struct {
	Name     string
	Combined bool
}

// Modes are the chart's two modes, in the order the bench measures them.
var Modes = []Mode{{"split", false}, {"combined", true}}

// FleetLabel marks the fleet's clusters with their mode.
const FleetLabel = "bench.valkey.io/fleet"

// Fleet is bench item 9 on a stand-in Kubernetes: for each mode the operator's binaries
// run as host processes, clusters of one member (1 shard, no replica) are created over
// Namespaces namespaces up to each of Totals, and at each total the batch's time to
// Ready and, after Settle, over Window, the processes' memory and CPU (from /proc) and
// their API writes (flow-control counters per ServiceAccount) are measured; then all
// are deleted and timed until gone.
type Fleet struct {
	Env *Env
	// Bin holds the operator's binaries; Helm is the helm program; Root the repository.
	Bin, Helm, Root string
	Totals          []int
	Namespaces      int
	Settle, Window  time.Duration
	Modes           []Mode
	// Workers create or delete clusters at once.
	Workers int
	// Timeout bounds each wait for Ready or for the deletion.
	Timeout time.Duration
	// MaxLoad, when above 0, stops a mode's growth once the machine's 1-minute load
	// average at the end of a rest window is above it (the members' servers share the
	// machine with the operator): the totals reached are measured, the others left out.
	MaxLoad float64
	// Profiles, when set, is a folder: each process serves Go's profiles and its heap
	// profile is written there at the end of each rest window (<mode>-<total>-<process>).
	Profiles string
	// AfterReady, when set, runs at each total once every cluster is Ready.
	AfterReady func(ctx context.Context, mode string, clusters []*v1alpha1.ValkeyCluster) error
	Logf       func(format string, args ...any)
	// Anomalies collects what went wrong without failing the run.
	Anomalies []string

	writes     *perf.WriteCounter
	namespaces []string
}

// Run measures every mode and returns them.
func (f *Fleet) Run(ctx context.Context) ([]perf.FleetMode, error) {
	cs, err := kubernetes.NewForConfig(f.Env.Config)
	if err != nil {
		return nil, err
	}
	if f.writes, err = perf.NewWriteCounter(ctx, f.Env.Client, cs.CoreV1().RESTClient()); err != nil {
		return nil, err
	}
	if err := f.createNamespaces(ctx); err != nil {
		return nil, err
	}
	var out []perf.FleetMode
	for _, m := range f.Modes {
		fm, err := f.mode(ctx, m)
		if err != nil {
			return out, fmt.Errorf("%s: %w", m.Name, err)
		}
		out = append(out, fm)
	}
	return out, nil
}

func (f *Fleet) createNamespaces(ctx context.Context) error {
	for i := range f.Namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fleet-%d", i)}}
		if err := f.Env.Client.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
		f.namespaces = append(f.namespaces, ns.Name)
	}
	return nil
}

// mode installs the chart's RBAC of the mode, starts its processes, grows the fleet
// through the totals and deletes it.
func (f *Fleet) mode(ctx context.Context, m Mode) (perf.FleetMode, error) {
	fm := perf.FleetMode{Mode: m.Name}
	ch, err := RenderChart(ctx, f.Helm, f.Root, "metrics.secure=false", "webhooks.enabled=false", fmt.Sprintf("controllers.combined=%t", m.Combined))
	if err != nil {
		return fm, err
	}
	if err := ApplyRBAC(ctx, f.Env.Client, ch); err != nil {
		return fm, err
	}
	for _, c := range ch.Components {
		if err := f.writes.CoverAccount(ctx, c.Name, Namespace, c.ServiceAccount); err != nil {
			return fm, err
		}
	}
	start := time.Now()
	op, err := StartOperator(ctx, f.Env, f.Bin, ch.Components, f.Profiles != "")
	if err != nil {
		return fm, err
	}
	defer op.Stop()
	f.Logf("%s: %d processes started, each component leading after %s", m.Name, len(op.Processes), time.Since(start).Round(100*time.Millisecond))
	var all []*v1alpha1.ValkeyCluster
	for _, total := range f.Totals {
		if f.MaxLoad > 0 && len(fm.Points) > 0 && fm.Points[len(fm.Points)-1].LoadAtRest > f.MaxLoad {
			f.anomaly("%s: stopped growing at %d members: the load average at rest was %.1f, above %.1f", m.Name, len(all), fm.Points[len(fm.Points)-1].LoadAtRest, f.MaxLoad)
			break
		}
		var batch []*v1alpha1.ValkeyCluster
		for i := len(all); i < total; i++ {
			vc := framework.NewValkeyCluster(f.namespaces[i%len(f.namespaces)], fmt.Sprintf("%s-%04d", m.Name, i), 1, 0)
			vc.Labels = map[string]string{FleetLabel: m.Name}
			batch = append(batch, vc)
		}
		p, err := f.grow(ctx, m.Name, op, batch, len(all)+len(batch))
		if err != nil {
			return fm, err
		}
		all = append(all, batch...)
		if f.AfterReady != nil {
			if err := f.AfterReady(ctx, m.Name, all); err != nil {
				return fm, err
			}
		}
		if p.Usage, p.Writes, p.LeaseWrites, err = f.rest(ctx, op); err != nil {
			return fm, err
		}
		p.Members, p.LoadAtRest = total, load1()
		if f.Profiles != "" {
			if err := op.HeapProfiles(ctx, f.Profiles, fmt.Sprintf("%s-%d", m.Name, total)); err != nil {
				return fm, err
			}
		}
		if n, err := f.ready(ctx, m.Name); err == nil && n < len(all) {
			f.anomaly("%s, %d members: %d clusters were no longer Ready after the rest window", m.Name, total, len(all)-n)
		}
		f.Logf("%s, %d members: the %d new ones Ready after %.2fs; at rest: RSS %.1f MiB %v, CPU %.3f s/min %v, writes %.1f/min (leases %.1f/min); %d servers run; load %s",
			m.Name, total, p.Added, p.Ready, p.Usage.TotalRSSMiB(), p.Usage.RSSMiB, p.Usage.TotalCPUPerMin(), p.Usage.CPUPerMin, p.Writes, p.LeaseWrites,
			f.Env.Kubelet.Servers(), loadAverage())
		fm.Points = append(fm.Points, p)
	}
	d, err := f.deleteAll(ctx, all)
	if err != nil {
		return fm, err
	}
	fm.Deleted, fm.DeletedMembers = d.Seconds(), len(all)
	f.Logf("%s: %d members deleted, every ValkeyNode and pod gone after %.2fs; %d servers run", m.Name, fm.DeletedMembers, fm.Deleted, f.Env.Kubelet.Servers())
	return fm, nil
}

// grow creates a batch and waits until the mode's clusters (total of them) are Ready.
func (f *Fleet) grow(ctx context.Context, mode string, op *Operator, batch []*v1alpha1.ValkeyCluster, total int) (perf.FleetPoint, error) {
	start := time.Now()
	if err := f.forEach(batch, func(vc *v1alpha1.ValkeyCluster) error { return f.Env.Client.Create(ctx, vc) }); err != nil {
		return perf.FleetPoint{}, err
	}
	d, tl, err := perf.Poll(ctx, start, f.Timeout, f.pollInterval(total), func(ctx context.Context) (bool, string, error) {
		if gone := op.Exited(); len(gone) > 0 {
			return false, "", fmt.Errorf("operator processes exited: %s", strings.Join(gone, ", "))
		}
		n, err := f.ready(ctx, mode)
		return n == total, fmt.Sprintf("%d of %d Ready", n, total), err
	})
	if err != nil {
		return perf.FleetPoint{}, fmt.Errorf("%d clusters not Ready: %w; %s", total, err, tl)
	}
	return perf.FleetPoint{Added: len(batch), Ready: d.Seconds()}, nil
}

// pollInterval is 500 ms, longer for large fleets: each poll lists every cluster.
func (f *Fleet) pollInterval(total int) time.Duration {
	return max(500*time.Millisecond, time.Duration(total)*time.Millisecond)
}

// ready counts the mode's clusters that are Ready.
func (f *Fleet) ready(ctx context.Context, mode string) (int, error) {
	var list v1alpha1.ValkeyClusterList
	if err := f.Env.Client.List(ctx, &list, client.MatchingLabels{FleetLabel: mode}); err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		if ok, _ := framework.ClusterReady(&list.Items[i]); ok {
			n++
		}
	}
	return n, nil
}

// rest lets the operator rest for Settle, then measures its processes over Window.
func (f *Fleet) rest(ctx context.Context, op *Operator) (perf.RestUsage, float64, float64, error) {
	if err := sleep(ctx, f.Settle); err != nil {
		return perf.RestUsage{}, 0, 0, err
	}
	before, err := op.Snapshot()
	if err != nil {
		return perf.RestUsage{}, 0, 0, err
	}
	wb, err := f.writes.Snapshot(ctx)
	if err != nil {
		return perf.RestUsage{}, 0, 0, err
	}
	if err := sleep(ctx, f.Window); err != nil {
		return perf.RestUsage{}, 0, 0, err
	}
	after, err := op.Snapshot()
	if err != nil {
		return perf.RestUsage{}, 0, 0, err
	}
	wa, err := f.writes.Snapshot(ctx)
	if err != nil {
		return perf.RestUsage{}, 0, 0, err
	}
	usage, err := after.Usage(before)
	if err != nil {
		return perf.RestUsage{}, 0, 0, err
	}
	rates := wa.Rates(wb)
	return usage, rates.Total(perf.WritesOther), rates.Total(perf.WritesLeases), nil
}

// deleteAll deletes the clusters and returns the time until they, their ValkeyNodes
// and their pods are gone from the fleet's namespaces. System users Secrets still held
// by a finalizer three seconds later are released and reported, as the bench does.
func (f *Fleet) deleteAll(ctx context.Context, vcs []*v1alpha1.ValkeyCluster) (time.Duration, error) {
	start := time.Now()
	if err := f.forEach(vcs, func(vc *v1alpha1.ValkeyCluster) error { return client.IgnoreNotFound(f.Env.Client.Delete(ctx, vc)) }); err != nil {
		return 0, err
	}
	ours := map[string]bool{}
	for _, ns := range f.namespaces {
		ours[ns] = true
	}
	d, tl, err := perf.Poll(ctx, start, f.Timeout, f.pollInterval(len(vcs)), func(ctx context.Context) (bool, string, error) {
		var clusters v1alpha1.ValkeyClusterList
		var nodes v1alpha1.ValkeyNodeList
		var pods corev1.PodList
		app := client.MatchingLabels{v1alpha1.LabelName: v1alpha1.AppName}
		for _, list := range []client.ObjectList{&clusters, &nodes, &pods} {
			if err := f.Env.Client.List(ctx, list, app); err != nil {
				return false, "", err
			}
		}
		c, n, p := countIn(ours, clusters.Items), countIn(ours, nodes.Items), countIn(ours, pods.Items)
		return c+n+p == 0, fmt.Sprintf("%d clusters, %d ValkeyNodes, %d pods left", c, n, p), nil
	})
	if err != nil {
		return 0, fmt.Errorf("%d clusters not gone: %w; %s", len(vcs), err, tl)
	}
	f.Logf("deleting %d clusters: %s", len(vcs), tl)
	f.releaseStuckSecrets(ctx)
	return d, nil
}

// releaseStuckSecrets removes the finalizers of Secrets still held three seconds after
// their clusters went, and reports each.
func (f *Fleet) releaseStuckSecrets(ctx context.Context) {
	deadline := time.Now().Add(3 * time.Second)
	for {
		var stuck []corev1.Secret
		for _, ns := range f.namespaces {
			var list corev1.SecretList
			if err := f.Env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
				f.anomaly("list Secrets of %s: %v", ns, err)
				return
			}
			for _, s := range list.Items {
				if len(s.Finalizers) > 0 {
					stuck = append(stuck, s)
				}
			}
		}
		if len(stuck) == 0 {
			return
		}
		if time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for i := range stuck {
			s := &stuck[i]
			f.anomaly("Secret %s/%s kept finalizers %v after its ValkeyCluster was deleted (released)", s.Namespace, s.Name, s.Finalizers)
			patch := client.MergeFrom(s.DeepCopy())
			s.Finalizers = nil
			if err := f.Env.Client.Patch(ctx, s, patch); client.IgnoreNotFound(err) != nil {
				f.anomaly("release Secret %s/%s: %v", s.Namespace, s.Name, err)
			}
		}
		return
	}
}

func (f *Fleet) anomaly(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	f.Anomalies = append(f.Anomalies, msg)
	f.Logf("ANOMALY: %s", msg)
}

// forEach runs op on every cluster, Workers at a time, and returns every error.
func (f *Fleet) forEach(vcs []*v1alpha1.ValkeyCluster, op func(*v1alpha1.ValkeyCluster) error) error {
	if errs := perf.EachCluster(vcs, f.Workers, op); len(errs) > 0 {
		return fmt.Errorf("%d clusters: %s", len(errs), strings.Join(errs[:min(len(errs), 5)], "; "))
	}
	return nil
}

// countIn counts the objects in the namespaces of set.
func countIn[T any, PT interface {
	*T
	client.Object
}](set map[string]bool, items []T) int {
	n := 0
	for i := range items {
		if set[PT(&items[i]).GetNamespace()] {
			n++
		}
	}
	return n
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// load1 is the 1-minute load average (0 when unreadable).
func load1() float64 {
	var one float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	if _, err := fmt.Sscan(string(b), &one); err != nil {
		return 0
	}
	return one
}

// Components are the operator's binaries, as the Makefile's COMPONENTS less the
// webhooks, which the stand-in does not run.
var Components = []string{"cluster-controller", "node-controller", "acl-controller", "tls-controller", "backup-controller", "manager"}

// BuildOperator builds the operator's binaries from the repository at root into dir,
// each module alone as `make build` does.
func BuildOperator(ctx context.Context, root, dir string) error {
	for _, c := range Components {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(dir, c), ".")
		cmd.Dir = filepath.Join(root, c)
		cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w: %s", c, err, out)
		}
	}
	return nil
}
