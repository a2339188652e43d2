//go:build bench

package bench

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// Timing of item 7: how long the cluster rests after Ready, and the window counted.
const (
	steadySettle = 10 * time.Second
	steadyWindow = 60 * time.Second
)

// benchSteadyAndKill runs items 7 and 3 on 3x1 clusters: the API writes while one rests,
// then its primaries taken down one at a time in each killMode, each once the cluster
// converged again; the crash is measured on 8.0 and 9.1, with the operator's
// Kubernetes-informed failover and without it (Valkey's own detection: the floor it beats).
func benchSteadyAndKill(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) {
	img, _ := image(t, k, 8, 0)
	vc, start := createCluster(ctx, t, k, ns, "steady", 3, 1, img)
	waitReady(ctx, t, k, vc, start, 3*time.Minute)
	if enabled("steady") {
		steadyWrites(ctx, t)
	}
	if enabled("kill") {
		for _, mode := range killModes {
			measureKills(ctx, t, k, vc, mode, "")
		}
		measureKills(ctx, t, k, vc, crashMode, "8.0")
	}
	deleteCluster(ctx, t, k, vc)
	if !enabled("kill") {
		return
	}
	img91, _ := image(t, k, 9, 1)
	vc91, start := createCluster(ctx, t, k, ns, "crash91", 3, 1, img91)
	waitReady(ctx, t, k, vc91, start, 3*time.Minute)
	measureKills(ctx, t, k, vc91, crashMode, "9.1")
	setFastFailover(ctx, t, k, false)
	measureKills(ctx, t, k, vc91, crashWithoutFastFailover, "9.1")
	deleteCluster(ctx, t, k, vc91)
	vc80, start := createCluster(ctx, t, k, ns, "crash80", 3, 1, img)
	waitReady(ctx, t, k, vc80, start, 3*time.Minute)
	measureKills(ctx, t, k, vc80, crashWithoutFastFailover, "8.0")
	setFastFailover(ctx, t, k, true)
	deleteCluster(ctx, t, k, vc80)
}

// measureKills takes reps primaries of vc down in mode and records the rows of item 3;
// version, when set, names the Valkey version in the rows.
func measureKills(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, mode killMode, version string) {
	if version != "" {
		mode.key += "_" + strings.ReplaceAll(version, ".", "")
		mode.name += " on " + version
	}
	var gaps, back, spread, lost, failed []float64
	var runs []killRun
	for rep := 0; rep < reps; rep++ {
		r := killPrimary(ctx, t, k, vc, rep, mode)
		runs = append(runs, r)
		gaps, back, lost = append(gaps, r.Gap), append(back, r.Redundant), append(lost, float64(r.Lost))
		spread = append(spread, r.Spread)
		failed = append(failed, float64(r.Failed))
	}
	results.Detail("kill_"+mode.key, runs)
	addKillRows(mode, perf.Summarize(gaps), perf.Summarize(back), perf.Summarize(lost), perf.Summarize(failed))
	addSpreadRow(mode, perf.Summarize(spread))
}

// killMode is one way item 3 takes a primary's server down.
type killMode struct {
	key, name string
	down      func(ctx context.Context, k *framework.Cluster, pod *corev1.Pod) error
	// planned: a graceful stop hands the slots over first, so no write may be lost and a
	// client without retries should see no error.
	planned bool
	// gapGoal and backGoal are the goals of the write gap and of full redundancy.
	gapGoal, backGoal float64
	// after undoes what down did to the Kubernetes node (a drain), once converged.
	after func(ctx context.Context, k *framework.Cluster, pod *corev1.Pod) error
}

var killModes = []killMode{
	{key: "grace0", name: "pod deleted, grace 0", down: deletePod(ptr.To[int64](0)), gapGoal: 5, backGoal: 5},
	{key: "graceful", name: "pod deleted, graceful", down: deletePod(nil), planned: true, gapGoal: 0.1, backGoal: 5},
	{key: "drain", name: "its node drained", down: drainNode, after: uncordonNode, planned: true, gapGoal: 0.1, backGoal: 10},
}

// crashMode kills the server with the operator's Kubernetes-informed failover;
// crashWithoutFastFailover the same with it off (the cluster-controller's
// --fast-failover=false), which leaves the failover to Valkey's own detection.
var (
	crashMode                = killMode{key: "crash", name: "server SIGKILLed (crash)", down: crash, gapGoal: 1.5, backGoal: 5}
	crashWithoutFastFailover = killMode{key: "crash_gossip", name: "server SIGKILLed, fast failover off", down: crash, gapGoal: 1.5, backGoal: 5}
)

// drainNode drains the Kubernetes node of the pod; uncordonNode makes it schedulable again.
func drainNode(ctx context.Context, k *framework.Cluster, pod *corev1.Pod) error {
	return k.Drain(ctx, pod.Spec.NodeName, 3*time.Minute)
}

func uncordonNode(ctx context.Context, k *framework.Cluster, pod *corev1.Pod) error {
	return k.Uncordon(ctx, pod.Spec.NodeName)
}

// setFastFailover sets the cluster-controller's --fast-failover and waits until its new
// pod runs.
func setFastFailover(ctx context.Context, t *testing.T, k *framework.Cluster, on bool) {
	t.Helper()
	key := client.ObjectKey{Namespace: framework.OperatorNamespace, Name: framework.OperatorDeployment("cluster-controller")}
	var d appsv1.Deployment
	if err := k.Client.Get(ctx, key, &d); err != nil {
		t.Fatal(err)
	}
	c := &d.Spec.Template.Spec.Containers[0]
	var args []string
	for _, a := range c.Args {
		if !strings.HasPrefix(a, "--fast-failover=") {
			args = append(args, a)
		}
	}
	c.Args = append(args, fmt.Sprintf("--fast-failover=%t", on))
	if err := k.Client.Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	err := framework.WaitFor(ctx, k.Client, &d, 3*time.Minute, "roll out the cluster-controller", func(d *appsv1.Deployment) (bool, string) {
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		st := d.Status
		return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.AvailableReplicas == want && st.Replicas == want,
			fmt.Sprintf("updated %d, available %d, total %d", st.UpdatedReplicas, st.AvailableReplicas, st.Replicas)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster-controller runs with --fast-failover=%t", on)
}

// deletePod deletes the pod, with a grace period when grace is set.
func deletePod(grace *int64) func(ctx context.Context, k *framework.Cluster, pod *corev1.Pod) error {
	return func(ctx context.Context, k *framework.Cluster, pod *corev1.Pod) error {
		var opts []client.DeleteOption
		if grace != nil {
			opts = append(opts, client.GracePeriodSeconds(*grace))
		}
		return k.Client.Delete(ctx, pod, opts...)
	}
}

// crash kills the server process with SIGKILL from the host: the container restarts in
// the same pod, waits for the cluster to fail its old identity over, and joins empty
// under a new node ID.
func crash(_ context.Context, _ *framework.Cluster, pod *corev1.Pod) error {
	_, err := framework.SignalContainer(pod, "server", syscall.SIGKILL)
	return err
}

// steadyWrites is item 7: the operator's API writes per minute over a window in which
// a Ready cluster rests.
func steadyWrites(ctx context.Context, t *testing.T) {
	time.Sleep(steadySettle)
	before, err := bench.writes.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(steadyWindow)
	after, err := bench.writes.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rates := after.Rates(before)
	results.Detail("steady_state_writes", rates)
	t.Logf("steady state writes/min by component: %v; by resource (all clients): %v", rates.Component, rates.ByResource)
	other, leases := rates.Total(perf.WritesOther), rates.Total(perf.WritesLeases)
	var valkeyIO float64
	for key, v := range rates.ByResource {
		// DELETEs at rest come from the namespace controller sweeping namespaces.
		if containsGroup(key, "valkey.io") && !strings.HasPrefix(key, "DELETE") {
			valkeyIO += v
		}
	}
	note := "none"
	if other > 0 {
		note = "WRITES AT REST: " + rates.Describe(perf.WritesOther)
	}
	results.Add(
		perf.Row{Key: "steady_writes", Item: "7", Name: fmt.Sprintf("operator API writes at rest, leader election aside (%s after Ready + %s)", steadySettle, steadyWindow),
			Unit: perf.UnitPerMin, Stat: perf.One(other), Goal: "0", Note: note},
		perf.Row{Key: "steady_lease_writes", Item: "7", Name: "operator leader-election Lease writes at rest", Unit: perf.UnitPerMin, Stat: perf.One(leases),
			Goal: "0", Note: leaseNote(rates)},
		perf.Row{Key: "steady_valkeyio_writes", Item: "7", Name: "POST/PUT/PATCH of valkey.io resources at rest (apiserver_request_total, any client)", Unit: perf.UnitPerMin,
			Stat: perf.One(valkeyIO), Goal: "0"},
	)
}

// leaseNote explains the lease renewals.
func leaseNote(r perf.WriteRates) string {
	if r.Total(perf.WritesLeases) == 0 {
		return "none"
	}
	return "each elected component renews its Lease (controller-runtime: every 2 s): " + r.Describe(perf.WritesLeases)
}

// containsGroup reports whether a "VERB group/resource" key is of group.
func containsGroup(key, group string) bool {
	_, resource, _ := strings.Cut(key, " ")
	return strings.HasPrefix(resource, group+"/")
}

// killRun is one repetition of item 3.
type killRun struct {
	Mode      string  `json:"mode"`
	Shard     int32   `json:"shard"`
	Gap       float64 `json:"gap_seconds"`
	Redundant float64 `json:"redundant_seconds"`
	// Spread is the time from full redundancy to the primaries spread again (failback).
	Spread   float64       `json:"spread_seconds"`
	Lost     int           `json:"lost"`
	Failed   int           `json:"failed"`
	Timeline perf.Timeline `json:"timeline"`
}

// killPrimary takes one shard's primary down while the write-checker runs and measures
// the shard's write gap, the time until the cluster converged again with a new server
// in place of the old one (full redundancy: every member's pod Ready, the servers
// agreeing, the replacement replicating), and from then the time until the primaries are
// spread again (failback's planned failover back to the member, when its node is free
// of primaries).
func killPrimary(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, rep int, mode killMode) killRun {
	t.Helper()
	waitConverged(ctx, t, k, vc, 3*time.Minute)
	shard := int32(rep % int(vc.Spec.ShardCount()))
	slot := firstSlots(t, vc)[shard]
	pod := primaryPod(ctx, t, k, vc, slot)
	ch := startChecker(ctx, t, k, vc)
	start := time.Now()
	if err := mode.down(ctx, k, pod); err != nil {
		t.Fatal(err)
	}
	d, tl, err := perf.Poll(ctx, start, 3*time.Minute, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		ok, detail, err := perf.Redundant(ctx, k.Client, vc)
		state := perf.ConditionState(vc)
		if ready, _ := framework.ClusterReady(vc); ready && !ok {
			state += " | " + detail
		}
		return ok && newServer(ctx, k, pod), state, err
	})
	if err != nil {
		t.Fatalf("no full redundancy after the primary %s went down (%s): %v; timeline %s", pod.Name, mode.name, err, tl)
	}
	s, stl, err := perf.Poll(ctx, time.Now(), 2*time.Minute, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		ok, detail, err := perf.Spread(ctx, k.Client, vc)
		return ok, perf.ConditionState(vc) + " | " + detail, err
	})
	if err != nil {
		t.Fatalf("the primaries were not spread again after the primary %s went down (%s): %v; timeline %s", pod.Name, mode.name, err, stl)
	}
	r := stopChecker(ctx, t, ch)
	if mode.after != nil {
		if err := mode.after(ctx, k, pod); err != nil {
			t.Fatal(err)
		}
	}
	run := killRun{Mode: mode.name, Shard: shard, Gap: secs(r.GapOf(slot)), Redundant: secs(d), Spread: secs(s), Lost: r.Lost, Failed: r.Errors, Timeline: tl}
	t.Logf("primary %s of shard %d, %s: gap %.2fs, full redundancy after %.2fs, spread again %.2fs later, %d lost; timelines %s; %s",
		pod.Name, shard, mode.name, run.Gap, run.Redundant, run.Spread, run.Lost, tl, stl)
	return run
}

// waitConverged waits until the cluster converged to its spec.
func waitConverged(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, timeout time.Duration) {
	t.Helper()
	_, tl, err := perf.Poll(ctx, time.Now(), timeout, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		return perf.Converged(ctx, k.Client, vc)
	})
	if err != nil {
		t.Fatalf("cluster %s did not converge: %v; %s", vc.Name, err, tl)
	}
}

// primaryPod returns the pod of the member whose server serves slot as a primary, as
// the servers report it (a member's role in its status may lag).
func primaryPod(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, slot int) *corev1.Pod {
	t.Helper()
	c, err := k.AnyAdmin(ctx, vc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nodes, err := c.ClusterNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := ""
	for _, n := range nodes {
		if n.Primary && !n.Fail && valkey.ContainsSlot(n.Slots, slot) {
			id = n.ID
		}
	}
	for _, m := range k.Members(ctx, t, vc) {
		if m.Status.NodeID != id || id == "" {
			continue
		}
		for _, p := range k.Pods(ctx, t, vc) {
			if p.Labels[v1alpha1.LabelNode] == m.Name {
				return &p
			}
		}
	}
	t.Fatalf("no pod for the primary %q of slot %d", id, slot)
	return nil
}

// newServer reports whether the pod is gone, replaced by another of the same name, or
// its server container restarted since old was read.
func newServer(ctx context.Context, k *framework.Cluster, old *corev1.Pod) bool {
	var p corev1.Pod
	err := k.Client.Get(ctx, client.ObjectKeyFromObject(old), &p)
	if apierrors.IsNotFound(err) || err == nil && p.UID != old.UID {
		return true
	}
	return err == nil && restarts(&p) > restarts(old)
}

// restarts is the restart count of the pod's server container.
func restarts(p *corev1.Pod) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "server" {
			return cs.RestartCount
		}
	}
	return 0
}

// addKillRows records item 3 for one mode.
// addSpreadRow adds the row of failback after a kill: from full redundancy (the member
// back in sync) to the primaries spread again. The operator waits for the member to
// have been in sync for 10 s, then makes one planned failover.
func addSpreadRow(mode killMode, spread perf.Stat) {
	results.Add(perf.Row{Key: "kill_" + mode.key + "_spread", Item: "3", Name: "primary " + mode.name + ": from full redundancy to the primaries spread again (failback)",
		Unit: perf.UnitSeconds, Stat: spread, Goal: "30 s", Note: verdict(spread.Median, 30, perf.UnitSeconds)})
}

func addKillRows(mode killMode, gap, back, lost, failed perf.Stat) {
	lostGoal, lostNote := "small (unreplicated writes)", ""
	if mode.planned {
		lostGoal = "0"
		if lost.Max > 0 {
			lostNote = "LOST WRITES"
		}
	}
	results.Add(
		perf.Row{Key: "kill_" + mode.key + "_gap", Item: "3", Name: "primary " + mode.name + ": write gap on its slots", Unit: perf.UnitSeconds, Stat: gap,
			Goal: fmt.Sprintf("%g s", mode.gapGoal), Note: verdict(gap.Median, mode.gapGoal, perf.UnitSeconds)},
		perf.Row{Key: "kill_" + mode.key + "_redundant", Item: "3", Name: "primary " + mode.name + ": until full redundancy (converged)", Unit: perf.UnitSeconds, Stat: back,
			Reference: "13 s", Goal: fmt.Sprintf("%g s", mode.backGoal), Note: verdict(back.Median, mode.backGoal, perf.UnitSeconds)},
		perf.Row{Key: "kill_" + mode.key + "_lost", Item: "3", Name: "primary " + mode.name + ": acknowledged writes lost", Unit: perf.UnitCount, Stat: lost,
			Goal: lostGoal, Note: lostNote},
	)
	if mode.planned {
		results.Add(perf.Row{Key: "kill_" + mode.key + "_failed", Item: "3", Name: "primary " + mode.name + ": writes failed for a client without retries",
			Unit: perf.UnitCount, Stat: failed, Goal: "0"})
	}
}
