//go:build e2e

// Package placement is the e2e suite of primary placement (spec.primaryPlacement): the
// local Kubernetes' three nodes labelled as three zones, a cluster's primaries spread
// over them at rest, and spread again by planned failovers after a failure left two
// primaries on one node: a primary's server SIGKILLed, a node cut off from the network.
// Each checks what a user sees: where the primaries' pods run (from the servers' own
// view), the PrimariesSpread condition, the RestoringPlacement events, and a strict
// writer that sees no failed write while the primaries move back.
package placement

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "placement"

var testenv env.Environment

func TestMain(m *testing.M) {
	e, err := framework.NewEnv(suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	e.Setup(framework.InstallOperator())
	testenv = e
	os.Exit(e.Run(m))
}
