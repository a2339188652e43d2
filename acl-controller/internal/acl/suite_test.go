package acl

// The acl-controller's integration suite: the reconciler in a manager against a real
// API server (envtest, see internal/envtestenv) and real valkey-server processes (the
// host's, see valkey/valkeytest) standing in for the members' pods.

import (
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/internal/testsuite"
)

func TestIntegration(t *testing.T) { testsuite.Run(t, "acl-controller") }

// suite is the package's API server and the logs of its controllers.
var suite = testsuite.NewController(30 * time.Second)
