//go:build bench

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// rollRun is one repetition of item 2.
type rollRun struct {
	Duration     float64     `json:"duration_seconds"`
	Failovers    float64     `json:"failovers_metric"`
	OwnerChanges map[int]int `json:"owner_changes_by_slot"`
	Gaps         []float64   `json:"gap_seconds_by_shard"`
	Lost         int         `json:"lost"`
	// Failed are the writes the checker (a client without retries) saw fail.
	Failed   int           `json:"failed"`
	Phases   []rollPhases  `json:"phases_by_shard"`
	Timeline perf.Timeline `json:"timeline"`
}

// rollWriteInterval makes the write-checker's three writers send about 2000 writes/s.
const rollWriteInterval = 1500 * time.Microsecond

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
	ch := k.StartCheckerWith(ctx, t, vc, checker.Options{Interval: rollWriteInterval})
	time.Sleep(time.Second)
	phases := startPhaseSampler(ctx, k, vc)
	start := time.Now()
	if err := update(ctx, k, vc, func(vc *v1alpha1.ValkeyCluster) { vc.Spec.Image = to }); err != nil {
		t.Fatal(err)
	}
	d, tl := waitReady(ctx, t, k, vc, start, 10*time.Minute)
	time.Sleep(500 * time.Millisecond)
	changes := owners.Stop()
	r := stopChecker(ctx, t, ch)
	run := rollRun{Duration: secs(d), Failovers: failovers(ctx, t, k, vc) - before, OwnerChanges: changes, Lost: r.Lost,
		Failed: r.Errors, Phases: phases.Stop(), Timeline: tl}
	t.Logf("roll %s phases:%s", vc.Name, describePhases(run.Phases))
	for _, slot := range slots {
		run.Gaps = append(run.Gaps, secs(r.GapOf(slot)))
	}
	t.Logf("roll %s: %.2fs, %v failovers (metric), owner changes %v, gaps %v, %d lost; timeline %s",
		vc.Name, run.Duration, run.Failovers, changes, run.Gaps, run.Lost, tl)
	return run
}

// addRollRows records item 2.
func addRollRows(runs []rollRun) {
	var dur, fo, owners, lost, failed []float64
	var podStart, sync, failover, retirement, span []float64
	gaps := map[int][]float64{}
	for _, r := range runs {
		dur, fo, lost = append(dur, r.Duration), append(fo, r.Failovers), append(lost, float64(r.Lost))
		failed = append(failed, float64(r.Failed))
		for _, p := range r.Phases {
			podStart, sync, failover = append(podStart, p.PodStart), append(sync, p.Sync), append(failover, p.Failover)
			retirement, span = append(retirement, p.Retirement), append(span, p.Span)
		}
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
		perf.Row{Key: "roll_duration", Item: "2", Name: "roll 8.0 → 9.1 on 3x1 under 2000 writes/s: duration", Unit: perf.UnitSeconds, Stat: d,
			Reference: "80-85 s", Goal: "15 s", Note: verdict(d.Median, 15, perf.UnitSeconds)},
		perf.Row{Key: "roll_failed_writes", Item: "2", Name: "roll: writes failed for a client without retries", Unit: perf.UnitCount,
			Stat: perf.Summarize(failed), Reference: "82 (before zero-error retirements)", Goal: "0"},
		perf.Row{Key: "roll_phase_pods", Item: "2", Name: "roll phase, per shard: successors' pods start (created → PodReady)", Unit: perf.UnitSeconds, Stat: perf.Summarize(podStart)},
		perf.Row{Key: "roll_phase_sync", Item: "2", Name: "roll phase, per shard: successors sync (PodReady → Synced)", Unit: perf.UnitSeconds, Stat: perf.Summarize(sync)},
		perf.Row{Key: "roll_phase_failover", Item: "2", Name: "roll phase, per shard: the failover (successors synced → old primary a replica)", Unit: perf.UnitSeconds, Stat: perf.Summarize(failover)},
		perf.Row{Key: "roll_phase_retirement", Item: "2", Name: "roll phase, per shard: the old primary's retirement (demoted → gone)", Unit: perf.UnitSeconds, Stat: perf.Summarize(retirement)},
		perf.Row{Key: "roll_phase_span", Item: "2", Name: "roll phase, per shard: span (first successor created → old primary gone)", Unit: perf.UnitSeconds, Stat: perf.Summarize(span)},
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
