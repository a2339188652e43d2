//go:build e2e

// Package backup is the e2e suite of backups to object storage and restores at
// creation, against a real S3-compatible server (versitygw) in the local Kubernetes:
// a backup of a TLS cluster over HTTPS restored into the same and into another shard
// count with every key and TTL; a schedule with retention; and the failure cases of
// docs/failure-modes.md (store unreachable or credentials refused, the source replica
// lost at the start of its transfer, zero replicas, a corrupt or missing backup, writes
// during the backup, a backup newer than the restoring Valkey).
package backup

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "backup"

var testenv env.Environment

func TestMain(m *testing.M) {
	e, err := framework.NewEnv(suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	// Schedules fire every minute, the shortest interval an administrator may allow.
	// rdb-key-save-delay, a debugging key no server lists, slows a snapshot down so
	// that writes land during it.
	e.Setup(framework.InstallOperator("policy.minBackupInterval=1m", "policy.allowedConfigKeys={rdb-key-save-delay}"))
	testenv = e
	os.Exit(e.Run(m))
}
