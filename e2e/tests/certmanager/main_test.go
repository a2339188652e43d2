//go:build e2e

// Package certmanager is the e2e suite of what runs with a real cert-manager (built from
// the Go module proxy, see docs/testing.md): the operator installed with
// webhooks.certificates.mode=certManager serves admission with the certificate
// cert-manager issued for its webhooks.
package certmanager

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "certmanager"

var testenv env.Environment

func TestMain(m *testing.M) {
	e, err := framework.NewEnv(suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	e.Setup(framework.InstallCertManager(), framework.InstallOperator("webhooks.certificates.mode=certManager"))
	testenv = e
	os.Exit(e.Run(m))
}
