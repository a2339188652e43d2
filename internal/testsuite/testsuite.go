// Package testsuite runs a package's Ginkgo suite the project's way: Gomega failures
// fail the spec, and with JUNIT_DIR set (`make unit` sets it to .cache/junit) the suite
// writes its JUnit report there as <name>.xml, for CI to keep. Plain `go test` writes
// none. Only test code imports it.
//
//	func TestSuite(t *testing.T) { testsuite.Run(t, "acl-controller") }
package testsuite

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/valkey-operator/valkey-operator/internal/operator"
)

// Run runs the specs of the package as the suite name.
func Run(t *testing.T, name string) {
	t.Helper()
	gomega.RegisterFailHandler(ginkgo.Fail)
	suite, reporter := ginkgo.GinkgoConfiguration()
	if dir := os.Getenv("JUNIT_DIR"); dir != "" && reporter.JUnitReport == "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("create the JUnit report directory: %v", err)
		}
		reporter.JUnitReport = filepath.Join(dir, name+".xml")
	}
	ginkgo.RunSpecs(t, name, suite, reporter)
}

// Manager is a manager for a suite's controllers, set up as the components set up
// theirs (operator.ManagerOptions: the same cache policy and client), for the namespaces
// given (all when none), without metrics or probes, and with controller names that may
// be registered again by the next spec.
func Manager(cfg *rest.Config, namespaces ...string) (ctrl.Manager, error) {
	opts := operator.ManagerOptions(namespaces)
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	opts.Controller = config.Controller{SkipNameValidation: ptr.To(true)}
	return ctrl.NewManager(cfg, opts)
}
