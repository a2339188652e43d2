//go:build bench

package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
)

// run is shared by the steps of the benchmark.
type run struct {
	sampler *perf.OperatorSampler
	writes  *perf.WriteCounter
	// writesAtStart is the write counters when the run began.
	writesAtStart perf.WriteSnapshot
	// ready3x1 is item 1's median operator time for 3x1 (item 5 compares with it).
	ready3x1 float64
}

var bench run

// TestBench runs the items in one feature, one after the other, so that no measurement
// overlaps another's clean-up; each step deletes what it made and waits for it to go.
func TestBench(t *testing.T) {
	f := framework.NewFeature(suite, "benchmark").
		Setup(start).
		Assess("1 apply to Ready, operator and floor", step("ready", benchReady)).
		Assess("7 and 3: steady state API writes, primary killed", step("steady,kill", benchSteadyAndKill)).
		Assess("2 rolling image change under writes", step("roll", benchRoll)).
		Assess("4 scale 3 -> 4 shards with 100k keys", step("scale", benchScale)).
		Assess("5 apply to Ready while another cluster is deleted", step("interference", benchInterference)).
		Assess("8 backup of 3x1 with 1M keys under writers, restore into 3 and 5 shards", step("backup", benchBackup)).
		Assess("9 cost per member: clusters of one member in batches, controllers apart and combined", step("fleet", benchFleet)).
		Teardown(stop).
		Feature()
	testenv.Test(t, f)
}

// step runs an item when BENCH_ONLY selects it (or one of items, comma-separated).
func step(items string, f func(ctx context.Context, t *testing.T, k *framework.Cluster, ns string)) func(context.Context, *testing.T, *envconf.Config) context.Context {
	return func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		if !slices.ContainsFunc(strings.Split(items, ","), enabled) {
			t.Skipf("%s not in BENCH_ONLY", items)
		}
		start := time.Now()
		f(ctx, t, framework.ClusterFrom(ctx, t), framework.Namespace(ctx))
		t.Logf("%s took %s", items, time.Since(start).Round(time.Second))
		return ctx
	}
}

// start begins the run-wide measurements: the operator's resources (item 6) and the
// FlowSchemas that count its API writes (item 7).
func start(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
	k := framework.ClusterFrom(ctx, t)
	w, err := perf.InstallWriteCounter(ctx, k.Client, k.Clientset.CoreV1().RESTClient(), framework.OperatorNamespace)
	if err != nil {
		t.Fatal(err)
	}
	bench.writes = w
	if bench.writesAtStart, err = w.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	bench.sampler = perf.StartOperatorSampler(context.Background(), k.Client, framework.OperatorNamespace, 500*time.Millisecond)
	return ctx
}

// stop ends the run-wide measurements and records item 6.
func stop(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
	if bench.writes != nil {
		if end, err := bench.writes.Snapshot(ctx); err == nil {
			total := end.Delta(bench.writesAtStart)
			results.Detail("operator_writes_whole_run", total)
			t.Logf("operator API writes over the whole run: %v", total)
		}
		if err := bench.writes.Remove(ctx); err != nil {
			t.Error(err)
		}
	}
	if bench.sampler == nil {
		return ctx
	}
	usage, scrapeErrors := bench.sampler.Stop(ctx)
	results.Detail("operator_usage", usage)
	var cpu float64
	for _, comp := range perf.SortedKeys(usage) {
		u := usage[comp]
		cpu += u.CPUSeconds
		results.Add(perf.Row{Key: "cpu_" + comp, Item: "6", Name: comp + " CPU over the run", Unit: perf.UnitSeconds, Stat: perf.One(u.CPUSeconds)},
			perf.Row{Key: "rss_" + comp, Item: "6", Name: comp + " peak RSS", Unit: perf.UnitMiB, Stat: perf.One(u.PeakRSSMiB)})
	}
	results.Add(perf.Row{Key: "cpu_total", Item: "6", Name: "operator CPU over the run, all components", Unit: perf.UnitSeconds, Stat: perf.One(cpu),
		Note: fmt.Sprintf("run of %s; %d failed scrapes", time.Since(results.Started).Round(time.Second), scrapeErrors)})
	return ctx
}
