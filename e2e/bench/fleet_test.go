//go:build bench

package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
)

// Item 9: how many members the fleet grows to (BENCH_FLEET), over how many namespaces
// (tenants), and how long the operator rests before and while it is measured.
var fleetTotals = []int{10, 50, 100}

const (
	fleetNamespaces = 10
	fleetSettle     = 20 * time.Second
	fleetWindow     = 60 * time.Second
	// fleetLabel marks the item's clusters.
	fleetLabel = "bench.valkey.io/fleet"
	// fleetWorkers create or delete clusters at once.
	fleetWorkers = 8
)

// fleetModes are the chart's two ways to run the controllers, in the order measured;
// the item ends with the first (the chart's default) installed again.
var fleetModes = []struct {
	name     string
	combined bool
}{{"split", false}, {"combined", true}}

// benchFleet is item 9: for each mode of the chart, clusters of one member (1 shard,
// no replica) are created in batches up to each total of fleetTotals, spread over
// fleetNamespaces namespaces; at each total the batch's time to Ready and, at rest, the
// operator's memory, CPU and API writes; then all are deleted and timed until gone.
// What one more member costs is the slope between the smallest and the largest total.
// The item runs once whatever BENCH_REPS says.
func benchFleet(ctx context.Context, t *testing.T, k *framework.Cluster, _ string) {
	img, _ := image(t, k, 8, 0)
	quiet := quietClient(t, k)
	namespaces := fleetNamespacesCreate(ctx, t, k)
	others := otherMembers(ctx, t, k, namespaces)
	combined := false
	t.Cleanup(func() {
		if combined {
			setControllersMode(context.Background(), t, k, false)
		}
	})
	var modes []perf.FleetMode
	for _, m := range fleetModes {
		setControllersMode(ctx, t, k, m.combined)
		combined = m.combined
		modes = append(modes, fleetMode(ctx, t, k, quiet, namespaces, img, m.name))
	}
	setControllersMode(ctx, t, k, fleetModes[0].combined)
	combined = fleetModes[0].combined
	recordFleet(t, modes, others)
}

// quietClient is the suite's client without the API server's warnings.
func quietClient(t *testing.T, k *framework.Cluster) client.Client {
	cfg := rest.CopyConfig(k.REST)
	cfg.WarningHandlerWithContext = rest.NoWarnings{}
	c, err := client.New(cfg, client.Options{Scheme: k.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fleetNamespacesCreate makes the tenants' namespaces, labelled as the suite's (so the
// suite's end waits for them to go) and deleted when the item ends.
func fleetNamespacesCreate(ctx context.Context, t *testing.T, k *framework.Cluster) []string {
	suffix := framework.RandomSuffix(5)
	var out []string
	for i := range fleetNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("bench-fleet-%d-%s", i, suffix),
			Labels: map[string]string{framework.NamespaceSuiteLabel: framework.Slug(suite, 63), framework.NamespaceFeatureLabel: "fleet"},
		}}
		if err := k.Client.Create(ctx, ns); err != nil {
			t.Fatalf("create namespace %s: %v", ns.Name, err)
		}
		t.Cleanup(func() {
			bg := metav1.DeletePropagationBackground
			if err := k.Client.Delete(context.Background(), ns, &client.DeleteOptions{PropagationPolicy: &bg}); client.IgnoreNotFound(err) != nil {
				t.Errorf("delete namespace %s: %v", ns.Name, err)
			}
		})
		out = append(out, ns.Name)
	}
	return out
}

// otherMembers counts the members of clusters outside the item's namespaces (a demo
// cluster left running): they weigh on every total alike, so the slopes leave them out.
func otherMembers(ctx context.Context, t *testing.T, k *framework.Cluster, namespaces []string) int {
	var nodes v1alpha1.ValkeyNodeList
	if err := k.Client.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	ours := setOf(namespaces)
	n := 0
	for _, vn := range nodes.Items {
		if !ours[vn.Namespace] {
			n++
		}
	}
	t.Logf("%d members of other clusters run besides the item's", n)
	return n
}

// setControllersMode installs the chart with controllers.combined as given (the
// framework's install: helm upgrade, the webhooks answering), waits until the operator's
// pods are only those of its Deployments, and counts the API writes of any new
// ServiceAccount.
func setControllersMode(ctx context.Context, t *testing.T, k *framework.Cluster, combined bool) {
	t.Helper()
	start := time.Now()
	if _, err := framework.InstallOperator(fmt.Sprintf("controllers.combined=%t", combined))(ctx, nil); err != nil {
		t.Fatalf("install the operator with controllers.combined=%t: %v", combined, err)
	}
	if err := waitOperatorSettled(ctx, k, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	settled := time.Now()
	if err := waitLeaders(ctx, k, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("every component's pods Ready after %s, every Lease held by one of them %s later",
		settled.Sub(start).Round(time.Second), time.Since(settled).Round(time.Second))
	if bench.writes != nil {
		if err := bench.writes.Cover(ctx, framework.OperatorNamespace); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("operator installed with controllers.combined=%t in %s", combined, time.Since(start).Round(time.Second))
}

// waitOperatorSettled waits until every operator pod belongs to a Deployment of the
// release, none is being deleted, and each Deployment has its replicas Ready.
func waitOperatorSettled(ctx context.Context, k *framework.Cluster, timeout time.Duration) error {
	return framework.Until(ctx, timeout, "the operator's pods to be those of its Deployments, Ready", func(ctx context.Context) (bool, string, error) {
		var deps appsv1.DeploymentList
		if err := k.Client.List(ctx, &deps, client.InNamespace(framework.OperatorNamespace)); err != nil {
			return false, "", err
		}
		want := map[string]int{}
		for _, d := range deps.Items {
			if comp := d.Labels[perf.ComponentLabel]; comp != "" && d.Spec.Replicas != nil {
				want[comp] += int(*d.Spec.Replicas)
			}
		}
		var pods corev1.PodList
		if err := k.Client.List(ctx, &pods, client.InNamespace(framework.OperatorNamespace)); err != nil {
			return false, "", err
		}
		have := map[string]int{}
		for i := range pods.Items {
			p := &pods.Items[i]
			comp := p.Labels[perf.ComponentLabel]
			if comp == "" {
				continue
			}
			if _, ok := want[comp]; !ok || !framework.PodIsReady(p) {
				return false, framework.DescribePod(p), nil
			}
			have[comp]++
		}
		for comp, n := range want {
			if have[comp] != n {
				return false, fmt.Sprintf("%s: %d of %d pods Ready", comp, have[comp], n), nil
			}
		}
		return true, "", nil
	})
}

// waitLeaders waits until each operator component's Lease is held by one of its pods:
// a Lease whose holder went without releasing it (its ServiceAccount removed with it
// when the mode changes) is taken over only after a whole lease duration, and until
// then the new pods reconcile nothing, which the first batch would count.
func waitLeaders(ctx context.Context, k *framework.Cluster, timeout time.Duration) error {
	return framework.Until(ctx, timeout, "each operator component's Lease held by one of its pods", func(ctx context.Context) (bool, string, error) {
		var pods corev1.PodList
		if err := k.Client.List(ctx, &pods, client.InNamespace(framework.OperatorNamespace)); err != nil {
			return false, "", err
		}
		var leases coordinationv1.LeaseList
		if err := k.Client.List(ctx, &leases, client.InNamespace(framework.OperatorNamespace)); err != nil {
			return false, "", err
		}
		holders := map[string]bool{}
		for _, l := range leases.Items {
			if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "" {
				pod, _, _ := strings.Cut(h, "_")
				holders[pod] = true
			}
		}
		leading := map[string]bool{}
		for _, p := range pods.Items {
			if comp := p.Labels[perf.ComponentLabel]; comp != "" {
				leading[comp] = leading[comp] || holders[p.Name]
			}
		}
		var waiting []string
		for _, comp := range perf.SortedKeys(leading) {
			if !leading[comp] {
				waiting = append(waiting, comp)
			}
		}
		return len(waiting) == 0, "no leader yet: " + strings.Join(waiting, ", "), nil
	})
}

// fleetMode grows the fleet through fleetTotals, measuring at each, then deletes it.
// quiet creates the clusters: each create is warned about a shard without replica or
// persistence, which would print a line per cluster.
func fleetMode(ctx context.Context, t *testing.T, k *framework.Cluster, quiet client.Client, namespaces []string, img, mode string) perf.FleetMode {
	m := perf.FleetMode{Mode: mode}
	var all []*v1alpha1.ValkeyCluster
	for _, total := range fleetTotals {
		var batch []*v1alpha1.ValkeyCluster
		for i := len(all); i < total; i++ {
			vc := framework.NewValkeyCluster(namespaces[i%len(namespaces)], fmt.Sprintf("%s-%03d", mode, i), 1, 0)
			vc.Spec.Image = img
			vc.Labels = map[string]string{fleetLabel: mode}
			batch = append(batch, vc)
		}
		start := time.Now()
		forEach(t, batch, "create", func(vc *v1alpha1.ValkeyCluster) error { return quiet.Create(ctx, vc) })
		all = append(all, batch...)
		d, tl, err := perf.Poll(ctx, start, 10*time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
			n, err := fleetReady(ctx, k, mode)
			return n == len(all), fmt.Sprintf("%d of %d Ready", n, len(all)), err
		})
		if err != nil {
			t.Fatalf("%s: %d clusters not Ready: %v; %s; %s", mode, len(all), err, memberRestarts(ctx, k, namespaces), tl)
		}
		p := fleetRest(ctx, t, k)
		p.Members, p.Added, p.Ready = total, len(batch), secs(d)
		if n, err := fleetReady(ctx, k, mode); err == nil && n < len(all) {
			results.Anomaly("%s, %d members: %d clusters were no longer Ready after the rest window", mode, total, len(all)-n)
		}
		t.Logf("%s, %d members: the %d new ones Ready after %.2fs; at rest: RSS %.1f MiB %v, CPU %.3f s/min %v, writes %.1f/min (leases %.1f/min); %s",
			mode, total, p.Added, p.Ready, p.Usage.TotalRSSMiB(), p.Usage.RSSMiB, p.Usage.TotalCPUPerMin(), p.Usage.CPUPerMin, p.Writes, p.LeaseWrites,
			memberRestarts(ctx, k, namespaces))
		m.Points = append(m.Points, p)
	}
	m.Deleted, m.DeletedMembers = secs(deleteFleet(ctx, t, k, namespaces, all)), len(all)
	t.Logf("%s: %d members deleted, every ValkeyNode and pod gone after %.2fs", mode, m.DeletedMembers, m.Deleted)
	return m
}

// memberRestarts describes the container restarts of the members' pods and their last
// reasons ("3 restarts: split-004-x2v9k-0/server Error (liveness)"): a server killed
// under load makes its cluster leave Ready.
func memberRestarts(ctx context.Context, k *framework.Cluster, namespaces []string) string {
	ours := setOf(namespaces)
	var pods corev1.PodList
	if err := k.Client.List(ctx, &pods, client.MatchingLabels{v1alpha1.LabelName: v1alpha1.AppName}); err != nil {
		return "pods: " + err.Error()
	}
	n := 0
	var seen []string
	for _, p := range pods.Items {
		if !ours[p.Namespace] {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount == 0 {
				continue
			}
			n += int(cs.RestartCount)
			if last := cs.LastTerminationState.Terminated; last != nil && len(seen) < 5 {
				seen = append(seen, fmt.Sprintf("%s/%s %s (exit %d)", p.Name, cs.Name, last.Reason, last.ExitCode))
			}
		}
	}
	if n == 0 {
		return "no member restarted"
	}
	return fmt.Sprintf("%d member container restarts, e.g. %s", n, strings.Join(seen, ", "))
}

// forEach runs op on every cluster, fleetWorkers at a time, and fails on any error.
func forEach(t *testing.T, vcs []*v1alpha1.ValkeyCluster, what string, op func(*v1alpha1.ValkeyCluster) error) {
	t.Helper()
	if errs := perf.EachCluster(vcs, fleetWorkers, op); len(errs) > 0 {
		t.Fatal(what + " " + strings.Join(errs, "\n"+what+" "))
	}
}

// fleetReady counts the mode's clusters that are Ready.
func fleetReady(ctx context.Context, k *framework.Cluster, mode string) (int, error) {
	var list v1alpha1.ValkeyClusterList
	if err := k.Client.List(ctx, &list, client.MatchingLabels{fleetLabel: mode}); err != nil {
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

// fleetRest lets the operator rest for fleetSettle, then measures it over fleetWindow,
// with the run-wide sampler paused (its scrapes cost the pods CPU).
func fleetRest(ctx context.Context, t *testing.T, k *framework.Cluster) perf.FleetPoint {
	t.Helper()
	bench.sampler.Pause()
	defer bench.sampler.Resume(ctx)
	time.Sleep(fleetSettle)
	before, err := perf.SnapshotOperator(ctx, k.Client, framework.OperatorNamespace)
	if err != nil {
		t.Fatal(err)
	}
	writesBefore, err := bench.writes.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(fleetWindow)
	after, err := perf.SnapshotOperator(ctx, k.Client, framework.OperatorNamespace)
	if err != nil {
		t.Fatal(err)
	}
	writesAfter, err := bench.writes.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	usage, err := after.Usage(before)
	if err != nil {
		t.Fatal(err)
	}
	rates := writesAfter.Rates(writesBefore)
	return perf.FleetPoint{Usage: usage, Writes: rates.Total(perf.WritesOther), LeaseWrites: rates.Total(perf.WritesLeases)}
}

// deleteFleet deletes every cluster and returns the time until they, their ValkeyNodes
// and their pods are gone. A system users Secret still held by a finalizer then is
// released and recorded as an anomaly, as deleteCluster does.
func deleteFleet(ctx context.Context, t *testing.T, k *framework.Cluster, namespaces []string, vcs []*v1alpha1.ValkeyCluster) time.Duration {
	t.Helper()
	ours := setOf(namespaces)
	start := time.Now()
	forEach(t, vcs, "delete", func(vc *v1alpha1.ValkeyCluster) error { return client.IgnoreNotFound(k.Client.Delete(ctx, vc)) })
	d, tl, err := perf.Poll(ctx, start, 10*time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		var clusters v1alpha1.ValkeyClusterList
		var nodes v1alpha1.ValkeyNodeList
		var pods corev1.PodList
		app := client.MatchingLabels{v1alpha1.LabelName: v1alpha1.AppName}
		for _, list := range []client.ObjectList{&clusters, &nodes, &pods} {
			if err := k.Client.List(ctx, list, app); err != nil {
				return false, "", err
			}
		}
		c, n, p := countIn(ours, clusters.Items), countIn(ours, nodes.Items), countIn(ours, pods.Items)
		return c+n+p == 0, fmt.Sprintf("%d clusters, %d ValkeyNodes, %d pods left", c, n, p), nil
	})
	if err != nil {
		t.Fatalf("%d clusters not gone: %v; %s", len(vcs), err, tl)
	}
	releaseStuckSecrets(ctx, t, k, namespaces)
	return d
}

// releaseStuckSecrets gives the system users Secrets of the deleted clusters three
// seconds to go, then removes the finalizers of those still held.
func releaseStuckSecrets(ctx context.Context, t *testing.T, k *framework.Cluster, namespaces []string) {
	t.Helper()
	var stuck []corev1.Secret
	err := framework.Until(ctx, 3*time.Second, "the clusters' Secrets to go", func(ctx context.Context) (bool, string, error) {
		stuck = nil
		for _, ns := range namespaces {
			var list corev1.SecretList
			if err := k.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return false, "", err
			}
			for _, s := range list.Items {
				if len(s.Finalizers) > 0 {
					stuck = append(stuck, s)
				}
			}
		}
		return len(stuck) == 0, fmt.Sprintf("%d Secrets held by finalizers", len(stuck)), nil
	})
	if err == nil {
		return
	}
	for i := range stuck {
		s := &stuck[i]
		results.Anomaly("the system users Secret kept finalizers %v after its ValkeyCluster was deleted (the bench removed them)", s.Finalizers)
		patch := client.MergeFrom(s.DeepCopy())
		s.Finalizers = nil
		if err := k.Client.Patch(ctx, s, patch); client.IgnoreNotFound(err) != nil {
			t.Errorf("release Secret %s/%s: %v", s.Namespace, s.Name, err)
		}
	}
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

func setOf(names []string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// recordFleet prints item 9's table and records it: the table, its points in Details,
// and for each mode a few rows of the main table.
func recordFleet(t *testing.T, modes []perf.FleetMode, others int) {
	md := perf.FleetMarkdown(modes)
	title := fmt.Sprintf("Item 9: the operator at rest with N members (clusters of 1 shard, no replica, over %d namespaces; %d members of other clusters besides; rest %s, then measured over %s)",
		fleetNamespaces, others, fleetSettle, fleetWindow)
	t.Logf("%s\n\n%s", title, md)
	results.AddTable(title, md)
	results.Detail("fleet", modes)
	for _, m := range modes {
		last := m.Points[len(m.Points)-1]
		rows := []perf.Row{
			{Key: fmt.Sprintf("fleet_%s_ready_%d", m.Mode, last.Members), Item: "9", Name: fmt.Sprintf("%s: %d clusters 1x0 created at once → all Ready (%d members in all)", m.Mode, last.Added, last.Members),
				Unit: perf.UnitSeconds, Stat: perf.One(last.Ready)},
			{Key: fmt.Sprintf("fleet_%s_rss_%d", m.Mode, last.Members), Item: "9", Name: fmt.Sprintf("%s: operator RSS at rest with %d members, all components", m.Mode, last.Members),
				Unit: perf.UnitMiB, Stat: perf.One(last.Usage.TotalRSSMiB())},
			{Key: fmt.Sprintf("fleet_%s_delete", m.Mode), Item: "9", Name: fmt.Sprintf("%s: %d members deleted → every ValkeyNode and pod gone", m.Mode, m.DeletedMembers),
				Unit: perf.UnitSeconds, Stat: perf.One(m.Deleted)},
		}
		if pm, err := m.PerMember(); err == nil {
			span := fmt.Sprintf("slope %d → %d members", pm.From, pm.To)
			rows = append(rows,
				perf.Row{Key: "fleet_" + m.Mode + "_mib_per_member", Item: "9", Name: fmt.Sprintf("%s: operator RSS per member at rest (%s)", m.Mode, span),
					Unit: perf.UnitMiB, Stat: perf.One(pm.RSSMiB)},
				perf.Row{Key: "fleet_" + m.Mode + "_cpu_per_member", Item: "9", Name: fmt.Sprintf("%s: operator CPU per member at rest (%s)", m.Mode, span),
					Unit: perf.UnitCPUmsPerMin, Stat: perf.One(pm.CPUms)})
		}
		results.Add(rows...)
	}
}
