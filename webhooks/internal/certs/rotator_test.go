package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var secretKey = types.NamespacedName{Namespace: "valkey-system", Name: "webhook-cert"}

func fakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func webhookConfig() *admissionregistrationv1.ValidatingWebhookConfiguration {
	path := "/validate"
	hook := func(name string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{Namespace: "valkey-system", Name: "hooks", Path: &path}}}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "valkey-operator"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{hook("a.valkey.io"), hook("b.valkey.io")},
	}
}

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func newRotator(c client.Client, clk *clock) *Rotator {
	return &Rotator{Client: c, Secret: secretKey, WebhookConfiguration: "valkey-operator", Issuer: issuer, Clock: clk.Now}
}

func reconcileOnce(t *testing.T, r *Rotator) reconcile.Result {
	t.Helper()
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: secretKey})
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return res
}

func getSecret(t *testing.T, c client.Client) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(context.Background(), secretKey, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func caBundles(t *testing.T, c client.Client) [][]byte {
	t.Helper()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(context.Background(), types.NamespacedName{Name: "valkey-operator"}, cfg); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, h := range cfg.Webhooks {
		out = append(out, h.ClientConfig.CABundle)
	}
	return out
}

func TestRotatorIssuesAndInjects(t *testing.T) {
	c, clk := fakeClient(t, webhookConfig()), &clock{now: t0}
	r := newRotator(c, clk)
	res := reconcileOnce(t, r)

	secret := getSecret(t, c)
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("secret type = %s, want %s", secret.Type, corev1.SecretTypeTLS)
	}
	for _, bundle := range caBundles(t, c) {
		if !bytes.Equal(bundle, secret.Data[KeyCACert]) {
			t.Errorf("caBundle does not hold the CA of the Secret")
		}
	}
	b := BundleFromData(secret.Data)
	if want := RenewAt(b.Serving.Cert).Sub(t0); res.RequeueAfter != want {
		t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, want)
	}

	// A second pass changes nothing.
	version := secret.ResourceVersion
	reconcileOnce(t, r)
	if getSecret(t, c).ResourceVersion != version {
		t.Error("an up-to-date Secret was rewritten")
	}
}

func TestRotatorRenewsServingCertificate(t *testing.T) {
	c, clk := fakeClient(t, webhookConfig()), &clock{now: t0}
	r := newRotator(c, clk)
	reconcileOnce(t, r)
	before := getSecret(t, c)

	clk.now = t0.Add(8 * time.Hour)
	reconcileOnce(t, r)
	after := getSecret(t, c)
	if bytes.Equal(before.Data[KeyServingCert], after.Data[KeyServingCert]) {
		t.Fatal("serving certificate not renewed")
	}
	if !bytes.Equal(before.Data[KeyCACert], after.Data[KeyCACert]) {
		t.Error("CA changed on a serving renewal")
	}
}

func TestRotatorRotatesCA(t *testing.T) {
	c, clk := fakeClient(t, webhookConfig()), &clock{now: t0}
	r := newRotator(c, clk)
	reconcileOnce(t, r)
	oldCA := getSecret(t, c).Data[KeyCACert]

	clk.now = t0.Add(81 * time.Hour)
	reconcileOnce(t, r)
	secret := getSecret(t, c)
	if bytes.Equal(secret.Data[KeyCACert], oldCA) {
		t.Fatal("CA not rotated")
	}
	if !bytes.Equal(secret.Data[KeyPreviousCACert], oldCA) {
		t.Error("previous CA not kept in the Secret")
	}
	for _, bundle := range caBundles(t, c) {
		if !bytes.Contains(bundle, oldCA) || !bytes.Contains(bundle, secret.Data[KeyCACert]) {
			t.Error("caBundle must hold the old and the new CA")
		}
	}
}

func TestRotatorWithoutWebhookConfiguration(t *testing.T) {
	c := fakeClient(t)
	reconcileOnce(t, newRotator(c, &clock{now: t0}))
	if len(getSecret(t, c).Data[KeyServingCert]) == 0 {
		t.Error("the Secret must be written even before the webhook configuration exists")
	}
}

func TestRotatorRepairsBrokenSecret(t *testing.T) {
	broken := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretKey.Namespace, Name: secretKey.Name},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{KeyCACert: []byte("junk")}}
	c := fakeClient(t, broken, webhookConfig())
	reconcileOnce(t, newRotator(c, &clock{now: t0}))
	secret := getSecret(t, c)
	if BundleFromData(secret.Data).Serving == nil {
		t.Error("broken Secret not repaired")
	}
	if secret.Type != corev1.SecretTypeOpaque {
		t.Error("the type of an existing Secret must be left alone")
	}
}

func TestKeeper(t *testing.T) {
	c := fakeClient(t, webhookConfig())
	k := &Keeper{Client: c, Secret: secretKey}
	if err := k.Checker(nil); err == nil {
		t.Error("want not ready before any certificate")
	}
	if _, err := k.GetCertificate(nil); err == nil {
		t.Error("want no certificate before the Secret exists")
	}
	if _, err := k.Reconcile(context.Background(), reconcile.Request{}); err != nil {
		t.Fatalf("missing Secret: %v", err)
	}

	clk := &clock{now: time.Now()}
	reconcileOnce(t, newRotator(c, clk))
	if _, err := k.Reconcile(context.Background(), reconcile.Request{}); err != nil {
		t.Fatal(err)
	}
	if err := k.Checker(nil); err != nil {
		t.Errorf("want ready, got %v", err)
	}
	b := BundleFromData(getSecret(t, c).Data)
	expectHandshake(t, k, b, svcNames[0])
	expectHandshake(t, k, b, svcNames[1])

	// A broken Secret keeps the loaded certificate.
	s := getSecret(t, c)
	s.Data[KeyServingKey] = []byte("junk")
	if err := c.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Reconcile(context.Background(), reconcile.Request{}); err != nil {
		t.Fatal(err)
	}
	expectHandshake(t, k, b, svcNames[0])
}

// expectHandshake serves the keeper's certificate and connects as the API server
// would: trusting the caBundle and checking the Service's DNS name.
func expectHandshake(t *testing.T, k *Keeper, b *Bundle, serverName string) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: k.GetCertificate})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ReadHeaderTimeout: time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(dialer, "tcp", ln.Addr().String(), &tls.Config{RootCAs: caPool(b), ServerName: serverName})
	if err != nil {
		t.Fatalf("handshake as %s: %v", serverName, err)
	}
	_ = conn.Close()
}
