//go:build bench

// Package chaos is `make chaos`: a bounded run on the local Kubernetes in which a 3x1
// cluster under the write-checker is scaled 3 -> 4 -> 3 shards and rolled from Valkey
// 8.0 to 9.1 while faults are injected at random times: a primary's or a replica's pod
// deleted (with grace 0 or gracefully) and an operator component's pod deleted. Then it
// waits for the cluster to converge to its spec (perf.Converged) and reports the faults,
// the acknowledged writes lost (attributed to the primary kills around them, or to
// nothing: a loss of the planned operations) and how long convergence took. The run
// fails when the cluster does not converge.
//
// CHAOS_DURATION (default 5m) bounds the fault window, CHAOS_MAX_FAULTS (default 12)
// the faults, CHAOS_CONVERGE_TIMEOUT (default 5m) the wait at the end; CHAOS_SEED
// replays a run's random choices.
package chaos

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "chaos"

// settings are the run's bounds, from the environment.
type settings struct {
	duration, converge time.Duration
	maxFaults          int
	seed               uint64
}

var (
	testenv env.Environment
	cfg     = settings{duration: 5 * time.Minute, converge: 5 * time.Minute, maxFaults: 12, seed: rand.Uint64()}
)

func TestMain(m *testing.M) {
	if err := readEnv(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	e, err := framework.NewEnv(suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	e.Setup(framework.InstallOperator())
	testenv = e
	framework.PollInterval = 100 * time.Millisecond
	code := e.Run(m)
	if summary != "" {
		fmt.Print(summary)
	}
	os.Exit(code)
}

// readEnv reads the CHAOS_* variables.
func readEnv() error {
	durations := map[string]*time.Duration{"CHAOS_DURATION": &cfg.duration, "CHAOS_CONVERGE_TIMEOUT": &cfg.converge}
	for name, d := range durations {
		if s := os.Getenv(name); s != "" {
			v, err := time.ParseDuration(s)
			if err != nil || v <= 0 {
				return fmt.Errorf("%s=%q: want a positive duration", name, s)
			}
			*d = v
		}
	}
	if s := os.Getenv("CHAOS_MAX_FAULTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return fmt.Errorf("CHAOS_MAX_FAULTS=%q: want a number", s)
		}
		cfg.maxFaults = n
	}
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("CHAOS_SEED=%q: want a number", s)
		}
		cfg.seed = n
	}
	return nil
}
