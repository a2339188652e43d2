//go:build e2e

// Package soak is the e2e suite of the crash path under repetition: on each workload type
// and on Valkey 8.0 and 9.1, a primary's server is killed twenty times at the moments a
// failover is most likely to meet a cluster still settling (docs/testing.md, "Soak of
// the crash path"). It runs in make e2e, not in make test.
package soak

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "soak"

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
