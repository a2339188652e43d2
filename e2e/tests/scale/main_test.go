//go:build e2e

// Package scale is the e2e suite of scaling by moving slots: 3 -> 5 -> 2 shards with
// 50k keys, once on Valkey 8.0 (MIGRATE) and once on 9.1 (atomic slot migration), with
// every key readable, no empty shard, no open slot and the slots balanced at every step,
// while a write-checker runs (clients follow ASK redirects during the moves); a shard
// count changed or reverted while slots move; replicas per shard up and down without a
// failover.
package scale

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "scale"

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
