package certs

// The tls-controller's integration suite: the reconciler in a manager against a real
// API server (envtest, see internal/envtestenv) and real valkey-server processes
// speaking TLS (the host's, see valkey/valkeytest) standing in for the members' pods.

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/valkey-operator/valkey-operator/internal/envtestenv"
	"github.com/valkey-operator/valkey-operator/internal/testsuite"
)

func TestIntegration(t *testing.T) { testsuite.Run(t, "tls-controller") }

// cfg reaches the suite's API server.
var cfg *rest.Config

// suiteLogs collects the logs of every controller the suite runs. controller-runtime's
// logger can be set once per process (later loggers derive from the first), so it is
// set here, once, and each harness reads the same buffer.
var suiteLogs = &syncBuffer{}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(suiteLogs), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	var err error
	cfg, err = envtestenv.Config()
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(envtestenv.Stop)

// testCtx bounds one step of a spec.
func testCtx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	DeferCleanup(cancel)
	return ctx
}
