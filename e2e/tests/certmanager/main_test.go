//go:build e2e

// Package certmanager is the e2e suite of TLS certificates issued by a real cert-manager
// (built from the Go module proxy, see docs/testing.md): a cluster that asks for
// cert-manager with no issuer gets a CA of its own and reaches Ready with TLS on every
// link; a scale adds members that join with TLS; a renewal reaches every member live
// with no failed write; a member certificate of one cluster is refused on another
// cluster's bus; a cluster can also use an Issuer of its namespace. The operator runs
// with its webhooks' serving certificate from cert-manager
// (webhooks.certificates.mode=certManager).
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
