//go:build e2e

// Package security is the e2e suite of the operator's defences (docs/security.md): a
// cluster runs in a namespace that enforces the restricted Pod Security Standard with the
// reference's sidecar, the components' metrics are served over HTTPS to authorized
// clients only, 10,000 unrelated Secrets grow no component's memory by more than
// 10 MiB, and a tenant's flood of large objects labelled as the operator's neither
// restarts an operator pod nor keeps another namespace's cluster from healing.
package security

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "security"

var testenv env.Environment

func TestMain(m *testing.M) {
	e, err := framework.NewEnv(suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	// The chart's default, which the other suites turn off to scrape from the host.
	e.Setup(framework.InstallOperator("metrics.secure=true"))
	testenv = e
	os.Exit(e.Run(m))
}
