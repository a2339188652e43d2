//go:build e2e

// Package certmanager is the e2e suite of TLS from a real cert-manager (built from the
// Go module proxy, see docs/testing.md): a cluster that asks cert-manager for its
// certificate with no issuer gets a CA of its own and reaches Ready with TLS on every
// link; a renewal reaches every member live with no failed write; a scale adds members
// that join with TLS; a cluster can use an Issuer of its namespace; the bus of one
// cluster refuses the member certificate of another, and two clusters of one Issuer
// report that they share a CA. The operator runs
// with webhooks.certificates.mode=certManager: its webhooks serve admission with the
// certificate cert-manager issued for them.
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
