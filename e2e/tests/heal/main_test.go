//go:build e2e

// Package heal is the e2e suite of the failure catalog's pod-level cases: a replica pod
// deleted, a primary killed, two primaries lost at once (quorum lost). Each checks what
// a user sees: the cluster back to Ready, the dead identity forgotten everywhere, the
// write gap, and the events of destructive actions.
package heal

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "heal"

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
