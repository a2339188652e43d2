package backup

// The backup-controller's integration suite: its reconcilers in a manager against a real
// API server (envtest, see internal/envtestenv). So far it drives the schedules; the
// backups' Jobs and data path are the job package's tests and the backup e2e suite.

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

func TestIntegration(t *testing.T) { testsuite.Run(t, "backup-controller") }

// cfg reaches the suite's API server.
var cfg *rest.Config

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	var err error
	cfg, err = envtestenv.Config()
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(envtestenv.Stop)

// testCtx bounds one step of a spec.
func testCtx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	DeferCleanup(cancel)
	return ctx
}
