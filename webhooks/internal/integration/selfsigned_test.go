package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/webhooks/internal/certs"
	"github.com/valkey-operator/valkey-operator/webhooks/internal/handlers"
	"github.com/valkey-operator/valkey-operator/webhooks/internal/server"
)

const certNamespace = "webhook-certs"

// selfSignedSetup creates the namespace and a webhook configuration that matches no
// real request (so it cannot disturb other tests), for the rotator to patch.
func selfSignedSetup(t *testing.T) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: certNamespace}}
	if err := admin.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "self-signed-test"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "nothing.example.com", AdmissionReviewVersions: []string{"v1"},
			SideEffects:   ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy: ptr.To(admissionregistrationv1.Fail), // as the chart installs it
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: certNamespace, Name: "hooks", Path: ptr.To("/nothing")}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}},
			}},
		}},
	}
	if err := admin.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), cfg) })
	return cfg
}

// TestSelfSignedMode runs the binary's manager in self-signed mode against the API
// server: it must write its Secret, set the caBundle, serve the certificate for the
// Service's names, report ready, and repair a deleted Secret or a reset caBundle.
func TestSelfSignedMode(t *testing.T) {
	cfg := selfSignedSetup(t)
	port, probePort := freePort(t), freePort(t)
	operators, err := handlers.ParseServiceAccounts("valkey-system:valkey-operator-cluster-controller")
	if err != nil {
		t.Fatal(err)
	}
	secretKey := types.NamespacedName{Namespace: certNamespace, Name: "webhook-cert"}
	mgr, err := server.NewManager(env.Config, server.Options{
		CertMode: server.CertModeSelfSigned, CertSecret: secretKey, WebhookConfiguration: cfg.Name,
		Service: types.NamespacedName{Namespace: certNamespace, Name: "hooks"},
		Host:    "127.0.0.1", Port: port, Operators: operators,
		MetricsAddr: "0", ProbeAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(probePort)),
		LeaderElection: true, LeaderElectionNamespace: certNamespace, LeaderElectionID: "webhooks-test",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	first := waitServing(t, cfg.Name, secretKey, addr)
	waitReady(t, probePort)

	// A deleted Secret is issued again, and the new CA is trusted.
	if err := admin.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: certNamespace, Name: secretKey.Name}}); err != nil {
		t.Fatal(err)
	}
	second := waitServing(t, cfg.Name, secretKey, addr)
	if bytes.Equal(first, second) {
		t.Error("a deleted Secret should have been issued again with a new CA")
	}

	// A caBundle reset (as a chart upgrade would do) is set again.
	latest := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := admin.Get(ctx, types.NamespacedName{Name: cfg.Name}, latest); err != nil {
		t.Fatal(err)
	}
	latest.Webhooks[0].ClientConfig.CABundle = nil
	if err := admin.Update(ctx, latest); err != nil {
		t.Fatal(err)
	}
	waitServing(t, cfg.Name, secretKey, addr)
}

// waitServing waits until the Secret holds a CA, the configuration's caBundle is that
// CA, and the server presents a certificate for the Service name that the caBundle
// trusts. It returns the CA.
func waitServing(t *testing.T, configName string, secretKey types.NamespacedName, addr string) []byte {
	t.Helper()
	var last error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var ca []byte
		if ca, last = servingCA(configName, secretKey, addr); last == nil {
			return ca
		}
	}
	t.Fatalf("self-signed mode did not converge: %v", last)
	return nil
}

// servingCA checks the three conditions of waitServing once.
func servingCA(configName string, secretKey types.NamespacedName, addr string) ([]byte, error) {
	ctx := context.Background()
	secret := &corev1.Secret{}
	if err := admin.Get(ctx, secretKey, secret); err != nil {
		return nil, fmt.Errorf("get secret: %w", err)
	}
	ca := secret.Data[certs.KeyCACert]
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := admin.Get(ctx, types.NamespacedName{Name: configName}, cfg); err != nil {
		return nil, fmt.Errorf("get configuration: %w", err)
	}
	bundle := cfg.Webhooks[0].ClientConfig.CABundle
	if len(ca) == 0 || !bytes.Contains(bundle, ca) {
		return nil, fmt.Errorf("caBundle does not hold the Secret's CA yet")
	}
	if fp := cfg.Webhooks[0].FailurePolicy; fp == nil || *fp != admissionregistrationv1.Fail {
		return nil, fmt.Errorf("the rotator changed the chart's failurePolicy to %v", fp)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	for _, name := range []string{certNamespace, certNamespace + ".svc.cluster.local"} {
		serverName := "hooks." + name
		if name == certNamespace {
			serverName = "hooks." + certNamespace + ".svc"
		}
		dialer := &net.Dialer{Timeout: 2 * time.Second}
		conn, err := tls.DialWithDialer(dialer, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: serverName})
		if err != nil {
			return nil, fmt.Errorf("handshake as %s: %w", serverName, err)
		}
		_ = conn.Close()
	}
	return ca, nil
}

// waitReady waits for /readyz of the probe endpoint to answer 200.
func waitReady(t *testing.T, port int) {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	httpClient := &http.Client{Timeout: 2 * time.Second}
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := httpClient.Get(url)
		if err != nil {
			last = err.Error()
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		last = resp.Status
	}
	t.Fatalf("/readyz never answered 200: %s", last)
}
