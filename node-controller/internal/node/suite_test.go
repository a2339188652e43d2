package node

// The node-controller's integration suite: the reconciler in a manager against a real
// API server (envtest, see internal/envtestenv); the specs write pods and their statuses
// themselves (envtest has no kubelet) and real valkey-server processes (valkeytest)
// answer at the pods' IPs. `go test -short` skips it.

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/valkey-operator/valkey-operator/internal/envtestenv"
	"github.com/valkey-operator/valkey-operator/internal/testsuite"
)

func TestIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("integration suite (envtest); skipped with -short")
	}
	testsuite.Run(t, "node-controller")
}

// te is the controller of the suite.
var te *testEnv

var _ = BeforeSuite(func() {
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	level := zapcore.Level(2) // quiet unless NODE_TEST_VERBOSE is set
	if verbose() {
		level = -2
	}
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true), zap.Level(level)))
	cfg, err := envtestenv.Config()
	Expect(err).NotTo(HaveOccurred())
	te, err = startEnv(cfg)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if te != nil {
		Expect(te.stop()).To(Succeed(), "the manager")
	}
	envtestenv.Stop()
})
