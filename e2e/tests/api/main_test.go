//go:build e2e

// Package api is the e2e suite of the API: every example manifest is accepted and every
// invalid one refused (with the field path) by the webhook installed with the chart,
// kubectl explain documents every field, and ValkeyNode writes from anyone but the
// operator are refused.
package api

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "api"

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
