//go:build e2e

// Package external is the e2e suite of clients outside Kubernetes (spec.externalAccess):
// clients on the host that may connect only to the members' external addresses (node
// addresses at node ports, or the local load balancer's addresses) write and read through
// a roll, a scale 3 -> 4 -> 3 and a primary kill.
package external

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "external"

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
