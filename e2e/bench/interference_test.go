//go:build bench

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
)

// interferenceRun is one repetition of item 5.
type interferenceRun struct {
	Ready float64 `json:"ready_seconds"`
	// DeletingAtReady is whether the other cluster was still being deleted when this one
	// became Ready (otherwise the deletion ended first).
	DeletingAtReady bool          `json:"other_still_deleting_at_ready"`
	Timeline        perf.Timeline `json:"timeline"`
}

// benchInterference is item 5: each repetition deletes the previous cluster and at
// once creates the next one, and times the new one's apply to Ready.
func benchInterference(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) {
	img, _ := image(t, k, 8, 0)
	prev, start := createCluster(ctx, t, k, ns, "if-0", 3, 1, img)
	waitReady(ctx, t, k, prev, start, 3*time.Minute)
	var runs []interferenceRun
	var ready []float64
	for rep := 1; rep <= reps; rep++ {
		if err := k.Client.Delete(ctx, prev); err != nil {
			t.Fatal(err)
		}
		vc, start := createCluster(ctx, t, k, ns, fmt.Sprintf("if-%d", rep), 3, 1, img)
		d, tl := waitReady(ctx, t, k, vc, start, 3*time.Minute)
		r := interferenceRun{Ready: secs(d), DeletingAtReady: exists(ctx, k, prev), Timeline: tl}
		t.Logf("%s Ready after %.2fs while %s was deleted (still deleting at Ready: %t); timeline %s", vc.Name, r.Ready, prev.Name, r.DeletingAtReady, tl)
		runs, ready = append(runs, r), append(ready, r.Ready)
		deleteCluster(ctx, t, k, prev)
		prev = vc
	}
	deleteCluster(ctx, t, k, prev)
	results.Detail("interference", runs)
	s := perf.Summarize(ready)
	row := perf.Row{Key: "interference_ready", Item: "5", Name: "3x1 apply → Ready while another 3x1 is deleted", Unit: perf.UnitSeconds, Stat: s,
		Reference: "26-35 s", Goal: "no slowdown vs item 1"}
	if bench.ready3x1 > 0 {
		ratio := perf.Ratio(s.Median, bench.ready3x1)
		row.Note = fmt.Sprintf("%.2f× item 1's 3x1 median", ratio)
		if ratio > 1.2 {
			row.Note = "SLOWED: " + row.Note
		}
	}
	results.Add(row)
}

// exists reports whether a cluster is still in the API (being deleted).
func exists(ctx context.Context, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) bool {
	var got v1alpha1.ValkeyCluster
	return k.Client.Get(ctx, client.ObjectKeyFromObject(vc), &got) == nil
}
