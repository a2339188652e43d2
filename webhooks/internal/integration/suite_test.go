// Package integration runs the webhooks against a real kube-apiserver (envtest, with
// the project's cached Kubernetes binaries; see internal/envtestenv): manifests go
// through the API server's schema validation and then through the webhook server,
// exactly as a user's kubectl apply would. It is the webhooks' Ginkgo suite.
package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/envtestenv"
	operatorsetup "github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/testsuite"
	"github.com/valkey-operator/valkey-operator/webhooks/internal/handlers"
	"github.com/valkey-operator/valkey-operator/webhooks/internal/server"
	"github.com/valkey-operator/valkey-operator/webhooks/paths"
)

// operatorUser is the identity the tests give the operator's cluster-controller.
const (
	operatorNamespace = "valkey-system"
	operatorUser      = "system:serviceaccount:" + operatorNamespace + ":valkey-operator-cluster-controller"
)

var (
	// repoRoot is the directory of go.work.
	repoRoot = mustRepoRoot()
	// env is the API server of the suite.
	env *envtest.Environment
	// admin is a cluster admin (group system:masters), like a user of kind.
	admin client.Client
	// operator authenticates as the cluster-controller's service account.
	operator client.Client
	// kubectlPath and kubeconfig run kubectl as a cluster admin.
	kubectlPath, kubeconfig string
)

func TestIntegration(t *testing.T) { testsuite.Run(t, "webhooks") }

// The suite starts the API server with the webhooks registered and the webhook server
// once, and stops both at the end.
var _ = BeforeSuite(func() {
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter)))
	assets, err := envtestenv.Assets("etcd", "kube-apiserver", "kubectl")
	Expect(err).NotTo(HaveOccurred())
	kubectlPath = filepath.Join(assets, "kubectl")
	kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	env, err = envtestenv.Environment(envtestenv.Options{
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{webhookConfiguration()},
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(envtestenv.Stop) // after the webhooks' manager, registered below
	ctx, cancel := context.WithCancel(context.Background())
	done, err := startWebhooks(ctx, env.Config)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		cancel()
		Expect(<-done).To(Succeed(), "the webhooks manager")
	})
	Expect(connectUsers(env.Config)).To(Succeed())
	waitForWebhooks(ctx)
})

func mustRepoRoot() string {
	root, err := envtestenv.RepoRoot()
	if err != nil {
		panic(err)
	}
	return root
}

// webhookConfiguration registers both webhooks as the chart does; envtest rewrites the
// service references into URLs on loopback and sets the caBundle.
func webhookConfiguration() *admissionregistrationv1.ValidatingWebhookConfiguration {
	hook := func(name, path string, resources ...string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name:                    name,
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: operatorNamespace, Name: "valkey-operator-webhooks", Path: ptr.To(path)}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{v1alpha1.GroupVersion.Group},
					APIVersions: []string{v1alpha1.GroupVersion.Version}, Resources: resources},
			}},
		}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "valkey-operator-webhooks"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			hook("valkeycluster.validate.valkey.io", paths.ValidateValkeyCluster, "valkeyclusters"),
			hook("valkeynode.validate.valkey.io", paths.ValidateValkeyNode, "valkeynodes", "valkeynodes/status"),
			hook("valkeybackup.validate.valkey.io", paths.ValidateValkeyBackup, "valkeybackups"),
			hook("valkeybackupschedule.validate.valkey.io", paths.ValidateValkeyBackupSchedule, "valkeybackupschedules"),
		},
	}
}

// startWebhooks runs the binary's manager in external certificate mode on the address
// and certificate envtest prepared; done gets the manager's outcome when it has stopped.
func startWebhooks(ctx context.Context, cfg *rest.Config) (<-chan error, error) {
	operators, err := handlers.ParseServiceAccounts(strings.TrimPrefix(operatorUser, "system:serviceaccount:"))
	if err != nil {
		return nil, err
	}
	hooks := env.WebhookInstallOptions
	mgr, err := server.NewManager(cfg, server.Options{
		CertMode: server.CertModeExternal, CertDir: hooks.LocalServingCertDir,
		Host: hooks.LocalServingHost, Port: hooks.LocalServingPort,
		Operators: operators, MetricsAddr: "0", ProbeAddr: "0",
	})
	if err != nil {
		return nil, fmt.Errorf("build the webhooks manager: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return done, nil
}

// connectUsers builds the clients of the tests.
func connectUsers(cfg *rest.Config) error {
	scheme := operatorsetup.Scheme()
	var err error
	if admin, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	base := &rest.Config{QPS: 1000, Burst: 2000}
	op, err := env.AddUser(envtest.User{Name: operatorUser, Groups: []string{"system:masters"}}, base)
	if err != nil {
		return fmt.Errorf("add the operator's user: %w", err)
	}
	if operator, err = client.New(op.Config(), client.Options{Scheme: scheme}); err != nil {
		return fmt.Errorf("operator client: %w", err)
	}
	user, err := env.AddUser(envtest.User{Name: "kubernetes-admin", Groups: []string{"system:masters"}}, base)
	if err != nil {
		return fmt.Errorf("add the kubectl user: %w", err)
	}
	contents, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig of the kubectl user: %w", err)
	}
	if err := os.WriteFile(kubeconfig, contents, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// waitForWebhooks waits until the API server reaches the webhook server: an invalid
// cluster is then refused by the webhook (not by a connection error).
func waitForWebhooks(ctx context.Context) {
	GinkgoHelper()
	probe := &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
		Spec:       v1alpha1.ValkeyClusterSpec{Config: map[string]string{"port": "1"}},
	}
	Eventually(func() error { return admin.Create(ctx, probe.DeepCopy(), client.DryRunAll) }).
		Should(MatchError(ContainSubstring("spec.config[port]")), "the webhook server answers the API server")
}

// freePort returns a loopback port nobody listens on right now.
func freePort() int {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}
