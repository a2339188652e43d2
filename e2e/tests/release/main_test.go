//go:build e2e

// Package release is the e2e suite of the release path a platform engineer takes: the
// operator's image (two architectures) and its chart pushed with `make image-push` and
// `make chart-push` to a real OCI registry, the chart installed from its oci:// reference
// into the local Kubernetes, whose nodes pull the image from that registry, and the
// README's quick start run as written: a cluster Ready, a user connected in cluster mode.
package release

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "release"

var testenv env.Environment

func TestMain(m *testing.M) {
	e, err := framework.NewEnv(suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	// No InstallOperator: the quick start installs it from the registry.
	testenv = e
	os.Exit(e.Run(m))
}
