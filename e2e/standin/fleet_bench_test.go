//go:build bench

package standin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/e2e/perf"
)

// TestFleetStandin is `make bench-fleet-standin`: bench item 9 (the operator's cost per
// member, split and combined) on the stand-in Kubernetes instead of the local one, at
// totals the local Kubernetes cannot hold. BENCH_FLEET sets the totals (default
// 100,200,500,1000), BENCH_FLEET_MODES the modes (split,combined), BENCH_FLEET_MAX_LOAD
// the 1-minute load average at the end of a rest window above which a mode stops
// growing (default 12; 0: never), BENCH_FLEET_PPROF a folder for each process's heap
// profile at each total; GOGC and GOMEMLIMIT, when set, reach the operator's processes
// (to compare memory policies against the one the processes apply by default).
// It prints the item's table and writes it to bench/fleet-standin.json.
func TestFleetStandin(t *testing.T) {
	totals, modes, maxLoad, err := fleetEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Hour)
	defer cancel()
	dir, err := os.MkdirTemp("", "standin-bench-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("files and logs of the run: %s", dir)
	tools, err := FindTools(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := Start(ctx, Options{Dir: dir, Octet: AddressOctet(), Workers: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	results := &perf.Results{Started: time.Now(), Reps: 1}
	f := &Fleet{Env: e, Bin: tools.Bin, Helm: tools.Helm, Root: tools.Root, Totals: totals, Namespaces: 10,
		Settle: 20 * time.Second, Window: 60 * time.Second, Modes: modes, Workers: 8, Timeout: 30 * time.Minute,
		MaxLoad: maxLoad, Profiles: os.Getenv("BENCH_FLEET_PPROF"), Logf: t.Logf}
	measured, err := f.Run(ctx)
	if err != nil {
		t.Errorf("%v (logs in %s)", err, dir)
	}
	results.Finished = time.Now()
	for _, a := range f.Anomalies {
		results.Anomaly("%s", a)
	}
	md := perf.FleetMarkdown(measured)
	title := fmt.Sprintf("Item 9 on the stand-in Kubernetes: the operator at rest with N members (clusters of 1 shard, no replica, over %d namespaces; rest %s, then measured over %s)",
		f.Namespaces, f.Settle, f.Window)
	results.AddTable(title, md)
	results.Detail("fleet_standin", measured)
	fmt.Printf("\n%s\n\n%s\n", title, md)
	for _, a := range results.Anomalies {
		fmt.Printf("ANOMALY: %s\n", a)
	}
	path := filepath.Join(tools.Root, "bench", "fleet-standin.json")
	if err := results.WriteJSON(path); err != nil {
		t.Error(err)
	} else {
		fmt.Printf("results written to %s\n", path)
	}
}

// fleetEnv reads BENCH_FLEET, BENCH_FLEET_MODES and BENCH_FLEET_MAX_LOAD.
func fleetEnv() ([]int, []Mode, float64, error) {
	totals := []int{100, 200, 500, 1000}
	if s := os.Getenv("BENCH_FLEET"); s != "" {
		var err error
		if totals, err = perf.ParseCounts(s); err != nil {
			return nil, nil, 0, fmt.Errorf("BENCH_FLEET=%w", err)
		}
	}
	modes := Modes
	if s := os.Getenv("BENCH_FLEET_MODES"); s != "" {
		modes = nil
		for _, name := range strings.Split(s, ",") {
			found := false
			for _, m := range Modes {
				if m.Name == strings.TrimSpace(name) {
					modes, found = append(modes, m), true
				}
			}
			if !found {
				return nil, nil, 0, fmt.Errorf("BENCH_FLEET_MODES=%q: want split and/or combined", s)
			}
		}
	}
	maxLoad := 12.0
	if s := os.Getenv("BENCH_FLEET_MAX_LOAD"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 {
			return nil, nil, 0, fmt.Errorf("BENCH_FLEET_MAX_LOAD=%q: want a number, 0 for no limit", s)
		}
		maxLoad = v
	}
	return totals, modes, maxLoad, nil
}
