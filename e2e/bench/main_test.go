//go:build bench

// Package bench is `make bench`: it measures the operator on the local Kubernetes in one
// run and prints one table of medians over BENCH_REPS repetitions (default 3), with the
// official operator's figures on the same machine next to ours, and writes the same to
// bench/results.json. The items (DESIGN.md section 10):
//
//  1. apply to Ready of 3x1 and 6x1 clusters, next to the floor: the same servers formed
//     by a script without the operator (perf.Floor);
//  2. a rolling image change 8.0 -> 9.1 on 3x1 under 2000 writes/s, with its phases;
//  3. a primary's pod deleted with grace 0, gracefully, its node drained, and its server
//     SIGKILLed on 8.0 and 9.1 with and without the operator's fast failover;
//  4. scale 3 -> 4 shards holding 100k keys, under the write-checker;
//  5. apply to Ready of a 3x1 cluster while another one is being deleted;
//  6. the operator's CPU seconds and peak RSS per component over the run;
//  7. the operator's API writes per minute at steady state;
//  8. a backup of a 3x1 cluster holding 1M keys (BENCH_BACKUP_KEYS) to the local S3
//     server under latency-measuring writers, restored into 3 and into 5 shards;
//  9. the operator's cost per member: clusters of one member over 10 namespaces grown
//     to each total of BENCH_FLEET (10,50,100), the time to Ready, and at rest
//     its memory, CPU and API writes, per component, with the controllers run apart
//     and combined (the chart's controllers.combined); then deleted and timed until
//     gone. It prints its own table and runs once whatever BENCH_REPS says.
//
// BENCH_ONLY=ready,steady,kill,roll,scale,interference,backup,fleet runs some items only
// (steady is item 7, kill item 3; items 6 and 7 are always measured over what runs).
package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
)

const suite = "bench"

var (
	testenv env.Environment
	results = &perf.Results{}
	// reps is BENCH_REPS: how many times each measurement is repeated.
	reps = 3
	// only is BENCH_ONLY: the items to run (all when empty).
	only map[string]bool
)

func TestMain(m *testing.M) {
	if err := readEnv(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	e, err := framework.NewEnv(suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	e.Setup(framework.InstallOperator())
	testenv = e
	// Readiness is timed by polling: poll often so that the poll adds little.
	framework.PollInterval = 50 * time.Millisecond
	results.Started, results.Reps, results.Commit = time.Now(), reps, commit()
	code := e.Run(m)
	results.Finished = time.Now()
	report()
	os.Exit(code)
}

// readEnv reads BENCH_REPS, BENCH_ONLY and BENCH_FLEET.
func readEnv() error {
	if s := os.Getenv("BENCH_REPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("BENCH_REPS=%q: want a positive number", s)
		}
		reps = n
	}
	if s := os.Getenv("BENCH_ONLY"); s != "" {
		only = map[string]bool{}
		for _, item := range strings.Split(s, ",") {
			only[strings.TrimSpace(item)] = true
		}
	}
	if s := os.Getenv("BENCH_FLEET"); s != "" {
		totals, err := perf.ParseCounts(s)
		if err != nil {
			return fmt.Errorf("BENCH_FLEET=%w", err)
		}
		fleetTotals = totals
	}
	return nil
}

// commit describes the checked-out commit ("4262411", "+dirty" with local changes).
func commit() string {
	paths, err := framework.DiscoverPaths(os.Getenv)
	if err != nil {
		return ""
	}
	out, err := exec.Command("git", "-C", paths.RepoRoot, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", paths.RepoRoot, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += "+dirty"
	}
	return c
}

// enabled reports whether BENCH_ONLY selects an item.
func enabled(item string) bool { return only == nil || only[item] }

// report prints the table and writes results.json at the repository's root.
func report() {
	fmt.Printf("\n## Benchmark (%d repetitions, medians; %s; %s)\n\n%s\n", reps, results.Commit,
		results.Finished.Sub(results.Started).Round(time.Second), results.Markdown())
	for _, tb := range results.Tables {
		fmt.Printf("\n%s\n\n%s", tb.Title, tb.Markdown)
	}
	for _, a := range results.Anomalies {
		fmt.Printf("ANOMALY: %s\n", a)
	}
	paths, err := framework.DiscoverPaths(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return
	}
	path := filepath.Join(paths.RepoRoot, "bench", "results.json")
	if err := results.WriteJSON(path); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return
	}
	fmt.Printf("results written to %s\n", path)
}
