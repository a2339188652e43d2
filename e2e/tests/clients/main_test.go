//go:build e2e

// Package clients is the e2e suite of the client matrix: the libraries users run
// (go-redis, redis-py, ioredis, each from its own ecosystem's registry) and the project's
// write-checker write to one cluster side by side through a roll, a primary's pod
// deleted, a primary's server killed, a scale out and a scale in. Each client reads back
// every write it had acknowledged; the suite fails on a lost one, or on a client that
// ended without its report, and prints the table docs/clients.md shows.
package clients

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "clients"

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
