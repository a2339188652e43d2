//go:build bench

package bench

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

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

// benchSteadyAndKill runs items 7 and 3 on one 3x1 cluster: the API writes while it
// rests, then its primaries taken down one at a time in each killMode, each once the
// cluster converged again.
func benchSteadyAndKill(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) {
	img, _ := image(t, k, 8, 0)
	vc, start := createCluster(ctx, t, k, ns, "steady", 3, 1, img)
	waitReady(ctx, t, k, vc, start, 3*time.Minute)
	if enabled("steady") {
		steadyWrites(ctx, t)
	}
	if enabled("kill") {
		for _, mode := range killModes {
			var gaps, back, lost []float64
			var runs []killRun
			for rep := 0; rep < reps; rep++ {
				r := killPrimary(ctx, t, k, vc, rep, mode)
				runs = append(runs, r)
				gaps, back, lost = append(gaps, r.Gap), append(back, r.Redundant), append(lost, float64(r.Lost))
			}
			results.Detail("kill_"+mode.key, runs)
			addKillRows(mode, perf.Summarize(gaps), perf.Summarize(back), perf.Summarize(lost))
		}
	}
	deleteCluster(ctx, t, k, vc)
}

// killMode is one way item 3 takes a primary's server down.
type killMode struct {
	key, name string
	down      func(ctx context.Context, k *framework.Cluster, pod *corev1.Pod) error
	// planned: a graceful stop hands the slots over first, so no write may be lost.
	planned bool
}

var killModes = []killMode{
	{key: "grace0", name: "pod deleted, grace 0", down: deletePod(ptr.To[int64](0))},
	{key: "graceful", name: "pod deleted, graceful", down: deletePod(nil), planned: true},
	{key: "crash", name: "server SIGKILLed (crash)", down: crash},
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
	Mode      string        `json:"mode"`
	Shard     int32         `json:"shard"`
	Gap       float64       `json:"gap_seconds"`
	Redundant float64       `json:"redundant_seconds"`
	Lost      int           `json:"lost"`
	Timeline  perf.Timeline `json:"timeline"`
}

// killPrimary takes one shard's primary down while the write-checker runs and measures
// the shard's write gap and the time until the cluster converged again with a new
// server in place of the old one (full redundancy: every member's pod Ready, the
// servers agreeing, the replacement replicating).
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
		ok, detail, err := perf.Converged(ctx, k.Client, vc)
		state := perf.ConditionState(vc)
		if ready, _ := framework.ClusterReady(vc); ready && !ok {
			state += " | " + detail
		}
		return ok && newServer(ctx, k, pod), state, err
	})
	if err != nil {
		t.Fatalf("no full redundancy after the primary %s went down (%s): %v; timeline %s", pod.Name, mode.name, err, tl)
	}
	r := stopChecker(ctx, t, ch)
	run := killRun{Mode: mode.name, Shard: shard, Gap: secs(r.GapOf(slot)), Redundant: secs(d), Lost: r.Lost, Timeline: tl}
	t.Logf("primary %s of shard %d, %s: gap %.2fs, full redundancy after %.2fs, %d lost; timeline %s",
		pod.Name, shard, mode.name, run.Gap, run.Redundant, run.Lost, tl)
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
func addKillRows(mode killMode, gap, back, lost perf.Stat) {
	lostGoal, lostNote := "small (unreplicated writes)", ""
	if mode.planned {
		lostGoal = "0"
		if lost.Max > 0 {
			lostNote = "LOST WRITES"
		}
	}
	results.Add(
		perf.Row{Key: "kill_" + mode.key + "_gap", Item: "3", Name: "primary " + mode.name + ": write gap on its slots", Unit: perf.UnitSeconds, Stat: gap,
			Goal: "5 s", Note: verdict(gap.Median, 5, perf.UnitSeconds)},
		perf.Row{Key: "kill_" + mode.key + "_redundant", Item: "3", Name: "primary " + mode.name + ": until full redundancy (converged)", Unit: perf.UnitSeconds, Stat: back,
			Reference: "13 s", Goal: "5 s", Note: verdict(back.Median, 5, perf.UnitSeconds)},
		perf.Row{Key: "kill_" + mode.key + "_lost", Item: "3", Name: "primary " + mode.name + ": acknowledged writes lost", Unit: perf.UnitCount, Stat: lost,
			Goal: lostGoal, Note: lostNote},
	)
}
