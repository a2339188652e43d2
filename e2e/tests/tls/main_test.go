//go:build e2e

// Package tls is the e2e suite of TLS on every link: a cluster whose certificate comes
// from a Secret the test signs with its own CA serves TLS only (clients, replication
// and the cluster bus), reports the certificate it serves, and takes a new certificate
// live, member by member, with no restart and no lost write; a certificate with a
// foreign key or past its end is refused with a clear reason while the members keep
// serving the one they have.
package tls

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "tls"

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
