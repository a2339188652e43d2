//go:build bench

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// rollRun is one repetition of item 2.
type rollRun struct {
	Duration     float64       `json:"duration_seconds"`
	Failovers    float64       `json:"failovers_metric"`
	OwnerChanges map[int]int   `json:"owner_changes_by_slot"`
	Gaps         []float64     `json:"gap_seconds_by_shard"`
	Lost         int           `json:"lost"`
	Timeline     perf.Timeline `json:"timeline"`
}

// benchRoll is item 2: a 3x1 cluster on Valkey 8.0 changed to 9.1 under the
// write-checker, a fresh cluster per repetition.
func benchRoll(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) {
	from, _ := image(t, k, 8, 0)
	to, _ := image(t, k, 9, 1)
	var runs []rollRun
	for rep := 1; rep <= reps; rep++ {
		vc, start := createCluster(ctx, t, k, ns, fmt.Sprintf("roll-%d", rep), 3, 1, from)
		waitReady(ctx, t, k, vc, start, 3*time.Minute)
		runs = append(runs, roll(ctx, t, k, vc, to))
		deleteCluster(ctx, t, k, vc)
	}
	results.Detail("roll", runs)
	addRollRows(runs)
}

// roll changes the image and measures what the clients and the servers saw.
func roll(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, to string) rollRun {
	t.Helper()
	slots := firstSlots(t, vc)
	before := failovers(ctx, t, k, vc)
	owners := framework.WatchOwners(func(ctx context.Context) (*valkey.Client, error) { return k.AnyAdmin(ctx, vc) }, slots)
	ch := startChecker(ctx, t, k, vc)
	start := time.Now()
	if err := update(ctx, k, vc, func(vc *v1alpha1.ValkeyCluster) { vc.Spec.Image = to }); err != nil {
		t.Fatal(err)
	}
	d, tl := waitReady(ctx, t, k, vc, start, 10*time.Minute)
	time.Sleep(500 * time.Millisecond)
	changes := owners.Stop()
	r := stopChecker(ctx, t, ch)
	run := rollRun{Duration: secs(d), Failovers: failovers(ctx, t, k, vc) - before, OwnerChanges: changes, Lost: r.Lost, Timeline: tl}
	for _, slot := range slots {
		run.Gaps = append(run.Gaps, secs(r.GapOf(slot)))
	}
	t.Logf("roll %s: %.2fs, %v failovers (metric), owner changes %v, gaps %v, %d lost; timeline %s",
		vc.Name, run.Duration, run.Failovers, changes, run.Gaps, run.Lost, tl)
	return run
}

// addRollRows records item 2.
func addRollRows(runs []rollRun) {
	var dur, fo, owners, lost []float64
	gaps := map[int][]float64{}
	for _, r := range runs {
		dur, fo, lost = append(dur, r.Duration), append(fo, r.Failovers), append(lost, float64(r.Lost))
		n := 0
		for _, c := range r.OwnerChanges {
			n += c
		}
		owners = append(owners, float64(n))
		for i, g := range r.Gaps {
			gaps[i] = append(gaps[i], g)
		}
	}
	d := perf.Summarize(dur)
	results.Add(
		perf.Row{Key: "roll_duration", Item: "2", Name: "roll 8.0 → 9.1 on 3x1 under writes: duration", Unit: perf.UnitSeconds, Stat: d,
			Reference: "80-85 s", Goal: "25 s", Note: verdict(d.Median, 25, perf.UnitSeconds)},
		perf.Row{Key: "roll_failovers", Item: "2", Name: "roll: failovers (operator metric)", Unit: perf.UnitCount, Stat: perf.Summarize(fo), Goal: "3 (one per shard)"},
		perf.Row{Key: "roll_owner_changes", Item: "2", Name: "roll: slot owner changes seen by the servers", Unit: perf.UnitCount, Stat: perf.Summarize(owners), Goal: "3 (one per shard)"},
	)
	for i := 0; i < len(gaps); i++ {
		results.Add(perf.Row{Key: fmt.Sprintf("roll_gap_shard%d", i), Item: "2", Name: fmt.Sprintf("roll: longest write gap, shard %d", i),
			Unit: perf.UnitSeconds, Stat: perf.Summarize(gaps[i])})
	}
	l := perf.Summarize(lost)
	results.Add(perf.Row{Key: "roll_lost", Item: "2", Name: "roll: acknowledged writes lost", Unit: perf.UnitCount, Stat: l, Goal: "0",
		Note: map[bool]string{true: "LOST WRITES", false: ""}[l.Max > 0]})
}
