//go:build e2e

package node

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// suite is the name (and the suite= label) of this suite.
const suite = "node"

var (
	testenv env.Environment
	// theOperator runs the node-controller the features use (see chooseOperator).
	theOperator operator
)

func TestMain(m *testing.M) {
	var err error
	if theOperator, err = chooseOperator(os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	testenv, err = framework.NewEnv(suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	if setup := theOperator.Setup(); setup != nil {
		testenv.Setup(setup)
	}
	os.Exit(testenv.Run(m))
}
