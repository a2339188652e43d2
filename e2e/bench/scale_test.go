//go:build bench

package bench

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
)

// scaleKeys is how many keys the cluster holds when it scales out.
const scaleKeys = 100000

// scaleRun is one repetition of item 4.
type scaleRun struct {
	Duration float64       `json:"duration_seconds"`
	Gap      float64       `json:"longest_gap_seconds"`
	Lost     int           `json:"lost"`
	Failed   int           `json:"failed"`
	Missing  int           `json:"keys_missing"`
	Timeline perf.Timeline `json:"timeline"`
}

// benchScale is item 4: a 3x1 cluster holding 100k keys scaled to 4 shards under the
// write-checker, a fresh cluster per repetition.
func benchScale(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) {
	img, _ := image(t, k, 8, 0)
	var runs []scaleRun
	for rep := 1; rep <= reps; rep++ {
		vc, start := createCluster(ctx, t, k, ns, fmt.Sprintf("scale-%d", rep), 3, 1, img)
		waitReady(ctx, t, k, vc, start, 3*time.Minute)
		runs = append(runs, scaleOut(ctx, t, k, vc))
		deleteCluster(ctx, t, k, vc)
	}
	results.Detail("scale", runs)
	var dur, gap, lost, missing, failed []float64
	for _, r := range runs {
		dur, gap = append(dur, r.Duration), append(gap, r.Gap)
		lost, missing = append(lost, float64(r.Lost)), append(missing, float64(r.Missing))
		failed = append(failed, float64(r.Failed))
	}
	l, m := perf.Summarize(lost), perf.Summarize(missing)
	results.Add(
		perf.Row{Key: "scale_duration", Item: "4", Name: "scale 3 → 4 shards with 100k keys: duration", Unit: perf.UnitSeconds, Stat: perf.Summarize(dur)},
		perf.Row{Key: "scale_gap", Item: "4", Name: "scale: longest write gap (any shard)", Unit: perf.UnitSeconds, Stat: perf.Summarize(gap)},
		perf.Row{Key: "scale_failed_writes", Item: "4", Name: "scale: writes failed for a client without retries", Unit: perf.UnitCount,
			Stat: perf.Summarize(failed), Goal: "0"},
		perf.Row{Key: "scale_lost", Item: "4", Name: "scale: acknowledged writes lost", Unit: perf.UnitCount, Stat: l, Goal: "0",
			Note: map[bool]string{true: "LOST WRITES", false: ""}[l.Max > 0]},
		perf.Row{Key: "scale_missing", Item: "4", Name: "scale: of the 100k keys, not readable after", Unit: perf.UnitCount, Stat: m, Goal: "0",
			Note: map[bool]string{true: "KEYS MISSING", false: ""}[m.Max > 0]},
	)
}

// scaleOut loads the keys, scales to 4 shards under the write-checker and reads the
// keys back.
func scaleOut(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) scaleRun {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: k.MemberAddrs(ctx, t, vc), Username: framework.TestUser, Password: "any", DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	loadKeys(ctx, t, c)
	ch := startChecker(ctx, t, k, vc)
	start := time.Now()
	if err := update(ctx, k, vc, func(vc *v1alpha1.ValkeyCluster) { vc.Spec.Shards = 4 }); err != nil {
		t.Fatal(err)
	}
	d, tl := waitReady(ctx, t, k, vc, start, 10*time.Minute)
	r := stopChecker(ctx, t, ch)
	run := scaleRun{Duration: secs(d), Gap: secs(r.MaxGap()), Lost: r.Lost, Failed: r.Errors, Missing: missingKeys(ctx, c), Timeline: tl}
	t.Logf("scale %s: %.2fs, longest gap %.2fs, %d lost, %d of %d keys missing; timeline %s",
		vc.Name, run.Duration, run.Gap, run.Lost, run.Missing, scaleKeys, tl)
	return run
}

// loadKeys writes data:0 .. data:99999 through a cluster client.
func loadKeys(ctx context.Context, t *testing.T, c rueidis.Client) {
	t.Helper()
	start := time.Now()
	cmds := make(rueidis.Commands, 0, scaleKeys)
	for i := 0; i < scaleKeys; i++ {
		cmds = append(cmds, c.B().Set().Key("data:"+strconv.Itoa(i)).Value(strconv.Itoa(i)).Build())
	}
	for i, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatalf("SET data:%d: %v", i, err)
		}
	}
	t.Logf("loaded %d keys in %s", scaleKeys, time.Since(start).Round(time.Millisecond))
}

// missingKeys counts the keys of loadKeys that cannot be read back.
func missingKeys(ctx context.Context, c rueidis.Client) int {
	cmds := make(rueidis.Commands, 0, scaleKeys)
	for i := 0; i < scaleKeys; i++ {
		cmds = append(cmds, c.B().Get().Key("data:"+strconv.Itoa(i)).Build())
	}
	missing := 0
	for i, r := range c.DoMulti(ctx, cmds...) {
		if v, err := r.ToString(); err != nil || v != strconv.Itoa(i) {
			missing++
		}
	}
	return missing
}
