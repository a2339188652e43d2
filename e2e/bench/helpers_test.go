//go:build bench

package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// image returns the manifest's Valkey image of a version.
func image(t *testing.T, k *framework.Cluster, major, minor int) (ref string, version valkey.Version) {
	t.Helper()
	img, err := k.ValkeyImage(major, minor)
	if err != nil {
		t.Fatal(err)
	}
	v, err := valkey.ParseVersion(img.Version)
	if err != nil {
		t.Fatal(err)
	}
	return img.Ref, v
}

// createCluster creates a cluster of the given shape and image and returns it with the
// time just before the create call.
func createCluster(ctx context.Context, t *testing.T, k *framework.Cluster, ns, name string, shards, replicas int32, img string) (*v1alpha1.ValkeyCluster, time.Time) {
	t.Helper()
	vc := framework.NewValkeyCluster(ns, name, shards, replicas)
	vc.Spec.Image = img
	start := time.Now()
	if err := k.Client.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Client.Delete(context.Background(), vc) })
	return vc, start
}

// waitReady waits for framework.ClusterReady and returns the time since start and the
// conditions' timeline.
func waitReady(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, start time.Time, timeout time.Duration) (time.Duration, perf.Timeline) {
	t.Helper()
	return waitReadyWatching(ctx, t, k, vc, start, timeout, false)
}

// waitReadyWatching is waitReady; with pods, the timeline also counts Ready pods.
func waitReadyWatching(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, start time.Time, timeout time.Duration, pods bool) (time.Duration, perf.Timeline) {
	t.Helper()
	d, tl, err := perf.WaitReady(ctx, k.Client, vc, start, timeout, pods)
	if err != nil {
		t.Fatalf("cluster %s not Ready: %v; timeline: %s", vc.Name, err, tl)
	}
	return d, tl
}

// deleteCluster deletes a cluster and waits until it and its pods are gone; a Secret
// the operator left behind is recorded as an anomaly.
func deleteCluster(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) {
	t.Helper()
	stuck, err := perf.DeleteCluster(ctx, k.Client, vc, 3*time.Minute)
	if len(stuck) > 0 {
		results.Anomaly("the system users Secret kept finalizers %v after its ValkeyCluster was deleted (the bench removed them)", stuck)
		t.Logf("Secret %s still held finalizers %v after its cluster was deleted; removed them", v1alpha1.SystemUsersSecretName(vc.Name), stuck)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// update changes a cluster's spec (perf.UpdateCluster).
func update(ctx context.Context, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, mutate func(*v1alpha1.ValkeyCluster)) error {
	return perf.UpdateCluster(ctx, k.Client, vc, mutate)
}

// placement counts a cluster's pods per Kubernetes node: "n1:2 n2:2 n3:2".
func placement(pods []corev1.Pod) string {
	perNode := framework.PodsPerNode(pods)
	nodes := perf.SortedKeys(perNode)
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = fmt.Sprintf("%s:%d", n, perNode[n])
	}
	return strings.Join(parts, " ")
}

// floorPlacement is placement for the floor's member -> node map.
func floorPlacement(nodes map[string]string) string {
	perNode := map[string]int{}
	for _, n := range nodes {
		perNode[n]++
	}
	parts := []string{}
	for _, n := range perf.SortedKeys(perNode) {
		parts = append(parts, fmt.Sprintf("%s:%d", n, perNode[n]))
	}
	return strings.Join(parts, " ")
}

// firstSlots returns the first slot of each shard of the status (what the
// write-checker's writers write to), in shard order.
func firstSlots(t *testing.T, vc *v1alpha1.ValkeyCluster) []int {
	t.Helper()
	var out []int
	shards := append([]v1alpha1.ShardStatus(nil), vc.Status.Shards...)
	sort.Slice(shards, func(i, j int) bool { return shards[i].Index < shards[j].Index })
	for _, s := range shards {
		r, err := valkey.ParseSlotRange(s.Slots[0])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Start)
	}
	return out
}

// startChecker starts the write-checker and lets it write for a second first.
func startChecker(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) *checker.Checker {
	t.Helper()
	ch := k.StartChecker(ctx, t, vc)
	time.Sleep(time.Second)
	return ch
}

// stopChecker stops the write-checker and logs its report.
func stopChecker(ctx context.Context, t *testing.T, ch *checker.Checker) checker.Report {
	t.Helper()
	r, err := ch.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("write-checker: %s", r)
	return r
}

// failovers reads the operator's failover counter of a cluster (all kinds).
func failovers(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) float64 {
	t.Helper()
	v, err := k.OperatorMetric(ctx, "cluster-controller", "valkey_operator_failovers_total",
		map[string]string{"namespace": vc.Namespace, "cluster": vc.Name})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// secs converts a duration to seconds for a Stat.
func secs(d time.Duration) float64 { return d.Seconds() }

// verdict compares a median with a goal that it should not exceed.
func verdict(v, goal float64, unit string) string {
	if v <= goal {
		return "meets the goal"
	}
	return "MISSES the goal by " + perf.FormatValue(v-goal, unit)
}
