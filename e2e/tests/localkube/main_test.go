//go:build e2e

package localkube

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// suite is the name (and the suite= label) of this suite.
const suite = "localkube"

var testenv env.Environment

func TestMain(m *testing.M) {
	var err error
	testenv, err = framework.NewEnv(suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	os.Exit(testenv.Run(m))
}
