package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
)

// runMainEnv makes the test binary run the command instead of the tests: the test
// starts the controller and the cainjector as processes of their own, as in a pod.
const runMainEnv = "CERT_MANAGER_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestIssuesAndInjects runs the controller and the cainjector against a real API server:
// a self-signed Issuer signs a CA, a CA Issuer made of its Secret signs a server and
// client certificate, and the cainjector puts the CA into a webhook configuration.
func TestIssuesAndInjects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := startAPIServer(t)
	c := newClient(t, env)
	dir := t.TempDir()
	kubeconfig := adminKubeconfig(t, env, dir)
	for _, ns := range []string{"cert-manager", "certs"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	controller := startCommand(t, dir, "controller", "--kubeconfig="+kubeconfig, "--healthz-address=127.0.0.1:0")
	injector := startCommand(t, dir, "cainjector", "--kubeconfig="+kubeconfig)

	const ns = "certs"
	issuerRef := func(name string) cmmeta.IssuerReference {
		return cmmeta.IssuerReference{Name: name, Kind: cmapi.IssuerKind, Group: "cert-manager.io"}
	}
	objs := []client.Object{
		&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "selfsigned", Namespace: ns},
			Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{SelfSigned: &cmapi.SelfSignedIssuer{}}}},
		&cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: ns}, Spec: cmapi.CertificateSpec{
			IsCA: true, CommonName: "e2e CA", SecretName: "ca",
			PrivateKey: &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 256},
			IssuerRef:  issuerRef("selfsigned"),
		}},
		&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: ns},
			Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{SecretName: "ca"}}}},
		&cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Name: "server", Namespace: ns}, Spec: cmapi.CertificateSpec{
			SecretName: "server", DNSNames: []string{"server.certs.svc", "server.certs.svc.cluster.local"},
			Usages:    []cmapi.KeyUsage{cmapi.UsageDigitalSignature, cmapi.UsageKeyEncipherment, cmapi.UsageServerAuth, cmapi.UsageClientAuth},
			IssuerRef: issuerRef("ca"),
		}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "injected", Annotations: map[string]string{"cert-manager.io/inject-ca-from": ns + "/server"}},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "v.certs.example.com", AdmissionReviewVersions: []string{"v1"}, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/validate")},
				// Matches nothing, so the API server never calls it.
				Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"certs.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}}}},
			}},
		},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}

	for _, name := range []string{"ca", "server"} {
		cert := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		eventually(ctx, t, "Certificate "+name+" Ready", controller, func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(cert), cert); err != nil {
				return false, "", err
			}
			return conditionTrue(cert.Status.Conditions, cmapi.CertificateConditionReady)
		})
	}
	ca := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ca"}, ca); err != nil {
		t.Fatal(err)
	}
	server := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "server"}, server); err != nil {
		t.Fatal(err)
	}
	checkServerSecret(t, server, ca.Data["tls.crt"])

	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "injected"}}
	eventually(ctx, t, "the CA bundle injected", injector, func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(vwc), vwc); err != nil {
			return false, "", err
		}
		got := vwc.Webhooks[0].ClientConfig.CABundle
		return bytes.Equal(got, server.Data["ca.crt"]), fmt.Sprintf("caBundle of %d bytes", len(got)), nil
	})
}

// checkServerSecret checks what a TLS server and client reads of the Secret: a key
// matching its certificate, which names the DNS names, serves both ways and verifies
// against ca.crt, the CA's certificate.
func checkServerSecret(t *testing.T, s *corev1.Secret, caCert []byte) {
	t.Helper()
	if !bytes.Equal(s.Data["ca.crt"], caCert) {
		t.Errorf("ca.crt is not the CA's certificate")
	}
	pair, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"])
	if err != nil {
		t.Fatalf("tls.crt and tls.key: %v", err)
	}
	leaf := pair.Leaf
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.Data["ca.crt"]) {
		t.Fatalf("ca.crt holds no certificate: %q", s.Data["ca.crt"])
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "server.certs.svc", Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("verify for usage %d: %v", usage, err)
		}
	}
	if !slices.Equal(leaf.DNSNames, []string{"server.certs.svc", "server.certs.svc.cluster.local"}) || leaf.IsCA {
		t.Errorf("leaf DNS names %v, CA %v", leaf.DNSNames, leaf.IsCA)
	}
	block, _ := pem.Decode(caCert)
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil || !ca.IsCA {
		t.Errorf("the CA certificate: %v, IsCA %v", err, err == nil && ca.IsCA)
	}
}

func conditionTrue(conds []cmapi.CertificateCondition, typ cmapi.CertificateConditionType) (bool, string, error) {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status == cmmeta.ConditionTrue, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message), nil
		}
	}
	return false, "no " + string(typ) + " condition", nil
}

// startAPIServer starts envtest's kube-apiserver and etcd with cert-manager's CRDs from
// its module, with the binaries of $KUBEBUILDER_ASSETS or of make local-build.
func startAPIServer(t *testing.T) *envtest.Environment {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "..", ".cache", "k8s", "v1.37.2", "bin")
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			t.Fatalf("envtest needs %s in %s (set KUBEBUILDER_ASSETS or run make local-build): %v", bin, assets, err)
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager").Output()
	if err != nil {
		t.Fatalf("find cert-manager's module: %v", err)
	}
	env := &envtest.Environment{
		UseExistingCluster:    ptr.To(false),
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds")},
		ErrorIfCRDPathMissing: true,
		// A loaded 2-core machine starts kube-apiserver in more than envtest's 20 s.
		ControlPlaneStartTimeout: time.Minute,
	}
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop the API server: %v", err)
		}
	})
	return env
}

func newClient(t *testing.T, env *envtest.Environment) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(kscheme.AddToScheme(scheme))
	utilruntime.Must(cmscheme.AddToScheme(scheme))
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// adminKubeconfig writes a kubeconfig of a cluster administrator into dir.
func adminKubeconfig(t *testing.T, env *envtest.Environment, dir string) string {
	t.Helper()
	u, err := env.AddUser(envtest.User{Name: "cert-manager-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// command is one of the program's commands running as a process of the test binary.
type command struct {
	name, log string
	done      chan struct{}
	err       error
}

// startCommand runs the command with args, its output in dir/<command>.log, and stops it
// at the end of the test.
func startCommand(t *testing.T, dir, name string, args ...string) *command {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := &command{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(cmd.log)
	if err != nil {
		t.Fatal(err)
	}
	p := exec.Command(self, append([]string{name}, args...)...)
	p.Env = append(os.Environ(), runMainEnv+"=1")
	p.Stdout, p.Stderr = f, f
	p.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.err = p.Wait(); f.Close(); close(cmd.done) }()
	t.Cleanup(func() {
		_ = p.Process.Signal(syscall.SIGTERM)
		select {
		case <-cmd.done:
		case <-time.After(10 * time.Second):
			_ = p.Process.Kill()
			<-cmd.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(cmd.log)
			t.Logf("%s log:\n%s", name, b)
		}
	})
	return cmd
}

// eventually polls check until it is done, failing the test when ctx ends first or when
// the command it waits on exits.
func eventually(ctx context.Context, t *testing.T, what string, on *command, check func(context.Context) (bool, string, error)) {
	t.Helper()
	var detail string
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-on.done:
			return false, fmt.Errorf("%s exited: %v", on.name, on.err)
		default:
		}
		ok, d, err := check(ctx)
		if err != nil {
			d = err.Error()
		}
		detail = d
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last seen: %s", what, err, detail)
	}
}
