package backup

// The backup-controller's integration suite: its reconcilers in a manager against a real
// API server (envtest, see internal/envtestenv). So far it drives the schedules; the
// backups' Jobs and data path are the job package's tests and the backup e2e suite.

import (
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/internal/testsuite"
)

func TestIntegration(t *testing.T) { testsuite.Run(t, "backup-controller") }

// suite is the package's API server and the logs of its controllers.
var suite = testsuite.NewController(30 * time.Second)
