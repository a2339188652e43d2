//go:build e2e

// Package clusterform is the e2e suite of cluster creation: clusters of several shapes
// reach Ready through the operator installed with its chart, serve data across every
// shard, place a shard's members on different nodes, and finish forming when the
// operator restarts in the middle.
package clusterform

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "cluster-form"

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
