// Package integration runs the webhooks against a real kube-apiserver (envtest, with
// the project's cached Kubernetes binaries): manifests go through the API server's
// schema validation and then through the webhook server, exactly as a user's
// kubectl apply would.
package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/webhooks/internal/handlers"
	"github.com/valkey-operator/valkey-operator/webhooks/internal/server"
	"github.com/valkey-operator/valkey-operator/webhooks/paths"
)

// operatorUser is the identity the tests give the operator's cluster-controller.
const (
	operatorNamespace = "valkey-system"
	operatorUser      = "system:serviceaccount:" + operatorNamespace + ":valkey-operator-cluster-controller"
	kubernetesVersion = "v1.37.2"
)

var (
	// repoRoot is the directory of go.work.
	repoRoot string
	// env is the API server of the package.
	env *envtest.Environment
	// admin is a cluster admin (group system:masters), like a user of kind.
	admin client.Client
	// operator authenticates as the cluster-controller's service account.
	operator client.Client
	// kubectlPath and kubeconfig run kubectl as a cluster admin.
	kubectlPath, kubeconfig string
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

// runSuite starts the API server and the webhook server once for the package, runs
// the tests and stops every process it started.
func runSuite(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	var err error
	if repoRoot, err = findRepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	assets, err := binaryAssets(repoRoot)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kubectlPath = filepath.Join(assets, "kubectl")
	tmp, err := os.MkdirTemp("", "webhooks-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	kubeconfig = filepath.Join(tmp, "kubeconfig")
	env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		UseExistingCluster:    ptr.To(false),
		CRDDirectoryPaths:     []string{filepath.Join(repoRoot, "config", "crd")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{webhookConfiguration()},
		},
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the API server:", err)
		}
	}()
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the API server:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, err := startWebhooks(ctx, cfg)
	if err != nil {
		cancel()
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		cancel()
		<-done
	}()
	if err := connectUsers(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := waitForWebhooks(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// findRepoRoot walks up from the working directory to the directory of go.work.
func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find repository root: no go.work above the working directory")
		}
		dir = parent
	}
}

// binaryAssets finds etcd, kube-apiserver and kubectl: KUBEBUILDER_ASSETS, or the
// binaries `make local-build` caches in the repository.
func binaryAssets(root string) (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(root, ".cache", "k8s", kubernetesVersion, "bin")
	}
	for _, bin := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("the integration tests need %s in %s (%w): run `make local-build` "+
				"to build the Kubernetes binaries, or point KUBEBUILDER_ASSETS at a directory holding them", bin, dir, err)
		}
	}
	return dir, nil
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
// and certificate envtest prepared; done closes when it has stopped.
func startWebhooks(ctx context.Context, cfg *rest.Config) (<-chan struct{}, error) {
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
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "webhooks manager:", err)
		}
	}()
	return done, nil
}

// connectUsers builds the clients of the tests.
func connectUsers(cfg *rest.Config) error {
	scheme, err := server.NewScheme()
	if err != nil {
		return err
	}
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
func waitForWebhooks(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	probe := &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
		Spec:       v1alpha1.ValkeyClusterSpec{Config: map[string]string{"port": "1"}},
	}
	var last error
	for ctx.Err() == nil {
		last = admin.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if last != nil && strings.Contains(last.Error(), "spec.config[port]") {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the webhook server did not answer the API server: %v", last)
}

// freePort returns a loopback port nobody listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
