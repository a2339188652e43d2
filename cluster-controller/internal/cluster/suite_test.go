package cluster

// The cluster-controller's integration suite: the reconciler in a manager against a real
// API server (envtest, see internal/envtestenv) and real valkey-server processes (the
// host's, see valkey/valkeytest) standing in for the members' pods. Only the kubelet is
// missing, and with it the node-controller that reports pods: the stand-in of
// kubelet_test.go starts a server on a loopback address of its own for every ValkeyNode
// the controller creates and writes the ValkeyNode status the node-controller would
// write (podIP, PodReady, status.revision); Reconciler.Addr maps a member's pod IP to
// its server's port. The specs create ValkeyClusters as a user does and check what a
// user would see: the cluster's conditions and the Valkey servers' own view.
//
// The whole suite takes about a minute on 2 cores (docs/testing.md);
// `go test -ginkgo.label-filter='!slow'` runs the formation specs only.

import (
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/valkey-operator/valkey-operator/internal/envtestenv"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/testsuite"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

func TestIntegration(t *testing.T) { testsuite.Run(t, "cluster-controller") }

var (
	// cfg reaches the suite's API server; k8s is the specs' client (a user's).
	cfg *rest.Config
	k8s client.Client
)

var _ = BeforeSuite(func() {
	// The controller's logs are shown with a failed spec's output.
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true), zap.Level(zapLevel())))
	valkeytest.Binary(GinkgoTB()) // fail at once, not in a spec, when there is no server
	var err error
	cfg, err = envtestenv.Config()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(cfg, client.Options{Scheme: operator.Scheme()})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(envtestenv.Stop)

// zapLevel shows the controller's info logs with CLUSTER_TEST_VERBOSE set, else errors.
func zapLevel() zapcore.Level {
	if os.Getenv("CLUSTER_TEST_VERBOSE") != "" {
		return -1
	}
	return 2
}
