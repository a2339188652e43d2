package framework

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/valkey-operator/valkey-operator/internal/envtestenv"
	"github.com/valkey-operator/valkey-operator/localkube"
)

// TestCertManagerRBAC runs the cert-manager program of localkube build --certmanager as
// each component's ServiceAccount, with exactly the roles InstallCertManager gives it,
// against a real API server that enforces them (and, as the local Kubernetes,
// OwnerReferencesPermissionEnforcement), with the webhook configurations of
// InstallCertManager pointing at the webhook on this host: the cainjector injects the
// webhook's own CA and the webhook admits an Issuer and refuses an invalid Certificate;
// CreateCAIssuer's Issuers and CA become Ready through it (its approval check included);
// a server and client certificate of the CA Issuer becomes Ready and verifies against the
// CA; the cainjector injects that CA into a webhook configuration; and no component was
// refused anything.
func TestCertManagerRBAC(t *testing.T) {
	paths, err := DiscoverPaths(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := paths.localkubeConfig()
	bin := cfg.CertManagerBinary()
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no cert-manager program at %s: make certmanager-build builds it", bin)
	}
	assets, err := envtestenv.Assets("etcd", "kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		UseExistingCluster:    ptr.To(false),
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(cfg.CertManagerDir(), "crds")},
		ErrorIfCRDPathMissing: true,
		// A loaded 2-core machine starts kube-apiserver in more than envtest's 20 s.
		ControlPlaneStartTimeout: time.Minute,
	}
	env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop the API server: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "certs"
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: CertManagerNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
	}
	for _, o := range append(objs, certManagerRBAC()...) {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	webhookPort, err := localkube.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range certManagerWebhookConfigurations(func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(fmt.Sprintf("https://localhost:%d%s", webhookPort, path))}
	}) {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	var procs []*certManagerProcess
	for _, comp := range certManagerComponents {
		account := "system:serviceaccount:" + CertManagerNamespace + ":" + comp.name()
		waitRBACEffective(ctx, t, c, account, comp.rules[0])
		u, err := env.AddUser(envtest.User{Name: account, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + CertManagerNamespace, "system:authenticated"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		kc, err := u.KubeConfig()
		if err != nil {
			t.Fatal(err)
		}
		kubeconfig := filepath.Join(dir, comp.name()+".kubeconfig")
		if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
			t.Fatal(err)
		}
		// On the host, a later flag overrides the pod's (a list flag adds to it).
		args := append(comp.args(), "--kubeconfig="+kubeconfig)
		switch comp.command {
		case "controller":
			args = append(args, "--healthz-address=127.0.0.1:0")
		case "webhook":
			args = append(args, fmt.Sprintf("--secure-port=%d", webhookPort), "--healthz-port=0", "--dynamic-serving-dns-names=localhost")
		}
		procs = append(procs, startCertManager(t, bin, filepath.Join(dir, comp.name()+".log"), args))
	}
	for _, comp := range certManagerComponents {
		if comp.lease == "" {
			continue
		}
		if err := waitLeaseHeld(ctx, c, comp.lease, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// From here on every cert-manager resource passes the webhook, which lets the
	// controller approve its requests only by its approve right on the issuers' signers.
	if err := waitCertManagerWebhook(ctx, c, time.Minute); err != nil {
		t.Fatal(err)
	}
	err = CertManagerWebhookRefusal(ctx, c, ns)
	if !CertManagerWebhookRefused(err) {
		t.Errorf("a Certificate of no name: want the webhook's refusal, got %v", err)
	}

	k := &Cluster{Client: c}
	caPEM, err := k.CreateCAIssuer(ctx, ns, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	leaf := CertManagerObject("Certificate", ns, "server")
	leaf.Object["spec"] = map[string]any{
		"secretName": "server", "dnsNames": []any{"server.certs.svc"},
		"usages":    []any{"digital signature", "key encipherment", "server auth", "client auth"},
		"issuerRef": map[string]any{"name": "e2e", "kind": "Issuer", "group": "cert-manager.io"},
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "injected", Annotations: map[string]string{"cert-manager.io/inject-ca-from": ns + "/server"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "v.certs.example.com", AdmissionReviewVersions: []string{"v1"}, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/validate")},
			// Matches nothing, so the API server never calls it.
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"certs.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}}}},
		}},
	}
	for _, o := range []client.Object{leaf, vwc} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := WaitFor(ctx, c, leaf, time.Minute, "be Ready", CertManagerReady); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "server"}, secret); err != nil {
		t.Fatal(err)
	}
	checkServingSecret(t, secret, caPEM, "server.certs.svc")
	if err := WaitFor(ctx, c, vwc, time.Minute, "carry the CA", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) (bool, string) {
		got := v.Webhooks[0].ClientConfig.CABundle
		return bytes.Equal(got, caPEM), fmt.Sprintf("caBundle of %d bytes", len(got))
	}); err != nil {
		t.Fatal(err)
	}

	for _, p := range procs {
		if !p.running() {
			t.Errorf("%s exited", p.log)
		}
		b, err := os.ReadFile(p.log)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			if strings.Contains(line, "forbidden") {
				t.Errorf("%s: refused: %s", filepath.Base(p.log), strings.TrimSpace(line))
			}
		}
	}
}

// waitRBACEffective waits until the API server authorizes the account by its new roles
// (its RBAC cache follows the objects' creation): the first verb of rule on its first
// resource.
func waitRBACEffective(ctx context.Context, t *testing.T, c client.Client, account string, rule rbacv1.PolicyRule) {
	t.Helper()
	attrs := &authorizationv1.ResourceAttributes{Verb: rule.Verbs[0], Group: rule.APIGroups[0], Resource: rule.Resources[0]}
	err := Until(ctx, 30*time.Second, fmt.Sprintf("%s to be allowed to %s %s", account, attrs.Verb, attrs.Resource), func(ctx context.Context) (bool, string, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: account, Groups: []string{"system:serviceaccounts", "system:authenticated"},
			ResourceAttributes: attrs,
		}}
		if err := c.Create(ctx, sar); err != nil {
			return false, "", err
		}
		return sar.Status.Allowed, sar.Status.Reason, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkServingSecret checks that the Secret's key matches its certificate, which names
// dnsName and verifies against caPEM for server and for client use, and that its
// ca.crt is caPEM.
func checkServingSecret(t *testing.T, s *corev1.Secret, caPEM []byte, dnsName string) {
	t.Helper()
	if !bytes.Equal(s.Data["ca.crt"], caPEM) {
		t.Errorf("ca.crt is not the CA's certificate")
	}
	pair, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatalf("tls.crt and tls.key: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no certificate in the CA's PEM %q", caPEM)
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := pair.Leaf.Verify(x509.VerifyOptions{DNSName: dnsName, Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("verify for usage %d: %v", usage, err)
		}
	}
}

// certManagerProcess is a cert-manager command running on the host.
type certManagerProcess struct {
	log  string
	done chan struct{}
}

func (p *certManagerProcess) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// startCertManager runs bin with args, its output in log, and stops it when the test
// ends (printing its log if the test failed).
func startCertManager(t *testing.T, bin, log string, args []string) *certManagerProcess {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Dir(log)}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &certManagerProcess{log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(log)
			t.Logf("%s:\n%s", filepath.Base(log), b)
		}
	})
	return p
}
