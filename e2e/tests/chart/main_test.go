//go:build e2e

// Package chart is the e2e suite of the Helm chart: with the webhooks turned off the
// controllers' guard still refuses an invalid spec (InvalidSpec) and changes nothing, and
// a helm upgrade that replaces the operator's pods leaves running clusters untouched.
package chart

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "chart"

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
