//go:build e2e

// Package operate is the e2e suite of operating a cluster: every command of the kubectl
// plugin (kubectl-valkey, built from the checkout) against a live cluster, and the
// status that tools read: kubectl wait on Progressing, kstatus and the Argo CD health
// script on a rolling cluster.
package operate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "operate"

var (
	testenv env.Environment
	// plugin is the kubectl-valkey binary built for this run.
	plugin string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kubectl-valkey-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	plugin = filepath.Join(dir, "kubectl-valkey")
	build := exec.Command("go", "build", "-o", plugin, ".")
	build.Dir = filepath.Join("..", "..", "..", "kubectl-valkey")
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: build kubectl-valkey: %v\n%s", err, out)
		os.Exit(1)
	}
	e, err := framework.NewEnv(suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	e.Setup(framework.InstallOperator())
	testenv = e
	code := e.Run(m)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
