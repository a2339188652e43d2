//go:build e2e

// Package failures is the e2e suite of the failure catalog (docs/failure-modes.md): one
// feature per failure no other suite covers. Each injects the failure into a running
// cluster and checks what a user sees: the cluster back to Ready, the conditions and
// events with their reasons, the failovers counted from the servers' own view, the
// write gap, and the acknowledged writes lost (none on the planned paths).
package failures

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "failures"

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
