//go:build e2e

// Package roll is the e2e suite of rolling changes under a steady write load: an upgrade
// from Valkey 8.0 to 9.1, a resources change, an in-place roll with persistence and a roll
// blocked by a successor that cannot be scheduled. Each counts the failovers (from the
// operator's metric and from the servers' own view of who serves each shard) and the
// acknowledged writes lost, and prints the longest write gap per shard.
package roll

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "roll"

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
