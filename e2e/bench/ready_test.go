//go:build bench

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
)

// readyRun is one repetition of item 1 for one shape.
type readyRun struct {
	Shape         string        `json:"shape"`
	Rep           int           `json:"rep"`
	Floor         float64       `json:"floor_seconds"`
	Operator      float64       `json:"operator_seconds"`
	FloorPods     string        `json:"floor_placement"`
	FloorTimeline perf.Timeline `json:"floor_timeline"`
	Pods          string        `json:"operator_placement"`
	Timeline      perf.Timeline `json:"operator_timeline"`
}

// benchReady is item 1: for 3x1 and 6x1, the floor then the operator, rep after rep,
// so that both see the same machine.
func benchReady(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) {
	img, version := image(t, k, 8, 0)
	shapes := []int32{3, 6}
	floor, operator := map[int32][]float64{}, map[int32][]float64{}
	var runs []readyRun
	for rep := 1; rep <= reps; rep++ {
		for _, shards := range shapes {
			r := readyRun{Shape: fmt.Sprintf("%dx1", shards), Rep: rep}
			f := perf.Floor{Client: k.Client, Namespace: ns, Name: fmt.Sprintf("fl%d-%d", shards, rep), Image: img, Version: version, Shards: int(shards), Replicas: 1}
			fr, err := f.Run(ctx, 3*time.Minute)
			if err != nil {
				t.Fatalf("floor %s: %v", r.Shape, err)
			}
			r.Floor, r.FloorPods, r.FloorTimeline = secs(fr.Total), floorPlacement(fr.Placement), fr.Timeline
			if err := f.Delete(ctx, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			vc, start := createCluster(ctx, t, k, ns, fmt.Sprintf("op%d-%d", shards, rep), shards, 1, img)
			d, tl := waitReadyWatching(ctx, t, k, vc, start, 3*time.Minute, true)
			r.Operator, r.Pods, r.Timeline = secs(d), placement(k.Pods(ctx, t, vc)), tl
			deleteCluster(ctx, t, k, vc)
			t.Logf("%s rep %d: floor %.2fs (%s), operator %.2fs (%s)\n  floor: %s\n  operator: %s",
				r.Shape, rep, r.Floor, r.FloorPods, r.Operator, r.Pods, r.FloorTimeline, tl)
			floor[shards] = append(floor[shards], r.Floor)
			operator[shards] = append(operator[shards], r.Operator)
			runs = append(runs, r)
		}
	}
	results.Detail("ready", runs)
	for _, shards := range shapes {
		addReadyRows(shards, perf.Summarize(floor[shards]), perf.Summarize(operator[shards]))
	}
}

// addReadyRows records the floor, the operator and their ratio for one shape.
func addReadyRows(shards int32, floor, operator perf.Stat) {
	shape := fmt.Sprintf("%dx1", shards)
	ref, goal, ratioRef, ratioGoal, note := "", "", "", "", ""
	if shards == 3 {
		ref, goal, ratioRef, ratioGoal = "16-18 s (floor 3.3 s)", "5 s", "≈5× (16-18 s / 3.3 s)", "≈1.5× (5 s / 3.3 s)"
		note = verdict(operator.Median, 5, perf.UnitSeconds)
		bench.ready3x1 = operator.Median
	}
	results.Add(
		perf.Row{Key: "ready_" + shape + "_floor", Item: "1", Name: shape + " apply → healthy, scripted floor (no operator)", Unit: perf.UnitSeconds, Stat: floor,
			Reference: map[bool]string{true: "3.3 s"}[shards == 3]},
		perf.Row{Key: "ready_" + shape + "_operator", Item: "1", Name: shape + " apply → Ready, operator", Unit: perf.UnitSeconds, Stat: operator,
			Reference: ref, Goal: goal, Note: note},
		perf.Row{Key: "ready_" + shape + "_ratio", Item: "1", Name: shape + " operator / floor (ratio of medians)", Unit: perf.UnitRatio,
			Stat: perf.One(perf.Ratio(operator.Median, floor.Median)), Reference: ratioRef, Goal: ratioGoal},
	)
}
