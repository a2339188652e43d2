//go:build e2e

package certmanager

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// certificateGVK is cert-manager's Certificate; the suite reads and nudges it as
// unstructured objects, as kubectl would.
var certificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

// fixture is one cluster of the feature with its client TLS configuration.
type fixture struct {
	k   *framework.Cluster
	vc  *v1alpha1.ValkeyCluster
	cfg *tls.Config
	// members is how many members the cluster has now.
	members int
}

func TestCertManager(t *testing.T) {
	var own, shared *fixture
	need := func(t *testing.T, fx *fixture) {
		t.Helper()
		if fx == nil {
			t.Fatal("the cluster this step needs was not created")
		}
	}
	f := framework.NewFeature(suite, "TLS certificates from cert-manager").
		Assess("a cluster with a CA of its own reaches Ready with TLS on every link", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			vc.Spec.TLS = &v1alpha1.TLSSpec{CertManager: &v1alpha1.CertManagerSpec{}}
			own = create(ctx, t, k, vc)
			writeAndRead(ctx, t, own)
			return ctx
		}).
		Assess("a renewal by cert-manager reaches every member live, with no failed write", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			need(t, own)
			renew(ctx, t, own)
			return ctx
		}).
		Assess("a scale from 3 to 4 shards: the new members join with TLS", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			need(t, own)
			before := certificateNames(ctx, t, own)
			start := time.Now()
			own.k.UpdateSpec(ctx, t, own.vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = 4 })
			own.members = 8
			own.k.WaitClusterReady(ctx, t, own.vc, 5*time.Minute)
			own.k.WaitMembersCondition(ctx, t, own.vc, v1alpha1.ConditionTLSApplied, own.members, time.Minute)
			after := certificateNames(ctx, t, own)
			t.Logf("Ready with 4 shards %s after the change; the Certificate's names: %d before, %d after", time.Since(start).Round(100*time.Millisecond), len(before), len(after))
			checkServed(ctx, t, own)
			writeAndRead(ctx, t, own)
			return ctx
		}).
		Assess("a cluster can use an Issuer of its namespace, and its CA is its own", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			if err := k.CreateCAIssuer(ctx, ns, "team-ca"); err != nil {
				t.Fatal(err)
			}
			vc := framework.NewValkeyCluster(ns, "other", 3, 1)
			vc.Spec.TLS = &v1alpha1.TLSSpec{CertManager: &v1alpha1.CertManagerSpec{IssuerRef: &v1alpha1.IssuerReference{Name: "team-ca", Kind: "Issuer"}}}
			shared = create(ctx, t, k, vc)
			return ctx
		}).
		Assess("a member certificate of one cluster is refused on another cluster's bus", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			need(t, own)
			need(t, shared)
			mine, theirs := memberKeyPair(ctx, t, own), memberKeyPair(ctx, t, shared)
			m := own.k.Members(ctx, t, own.vc)[0]
			bus := net.JoinHostPort(m.Status.PodIP, strconv.Itoa(framework.ValkeyPort+10000))
			if err := busHandshake(ctx, bus, mine, own.cfg); err != nil {
				t.Fatalf("%s refused a certificate of its own cluster on its bus: %v", m.Name, err)
			}
			err := busHandshake(ctx, bus, theirs, own.cfg)
			if err == nil {
				t.Fatalf("%s accepted a member certificate of cluster %s on its bus", m.Name, shared.vc.Name)
			}
			t.Logf("%s's bus (%s): its own cluster's certificate accepted; %s's refused: %v", m.Name, bus, shared.vc.Name, err)
			return ctx
		}).
		Assess("the webhooks serve a certificate cert-manager issued", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			webhooksFromCertManager(ctx, t)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// create creates vc, waits for Ready with TLSReady and every member serving the
// accepted certificate, and returns the fixture.
func create(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) *fixture {
	t.Helper()
	start := time.Now()
	if err := k.Client.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	took := k.WaitClusterReady(ctx, t, vc, 4*time.Minute)
	if err := framework.WaitFor(ctx, k.Client, vc, 30*time.Second, "report TLSReady=True",
		framework.ConditionIs(v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateValid)); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s Ready with TLS from cert-manager %s after apply (wait %s); status.tls: secretName %s, fingerprint %s, notAfter %s",
		vc.Name, time.Since(start).Round(100*time.Millisecond), took.Round(100*time.Millisecond),
		vc.Status.TLS.SecretName, vc.Status.TLS.Fingerprint, vc.Status.TLS.NotAfter.UTC())
	if n := vc.Status.TLS.MissingNames; len(n) > 0 {
		t.Errorf("the issued certificate misses names: %v", n)
	}
	fx := &fixture{k: k, vc: vc, cfg: k.ClusterTLS(ctx, t, vc), members: 6}
	k.WaitMembersCondition(ctx, t, vc, v1alpha1.ConditionTLSApplied, fx.members, 30*time.Second)
	checkServed(ctx, t, fx)
	k.CheckStatusContract(ctx, t, vc)
	return fx
}

// checkServed checks every member serves the certificate status.tls names.
func checkServed(ctx context.Context, t *testing.T, fx *fixture) {
	t.Helper()
	if err := fx.k.Client.Get(ctx, client.ObjectKeyFromObject(fx.vc), fx.vc); err != nil {
		t.Fatal(err)
	}
	fp := fx.vc.Status.TLS.Fingerprint
	if got := fx.k.ServedFingerprints(ctx, fx.vc, fx.cfg); !framework.AllServe(got, fx.members, fp) {
		t.Errorf("members serve %v, want %s on all %d", got, fp, fx.members)
	}
}

// renew asks cert-manager to issue the cluster's certificate again, as `cmctl renew`
// does (the Certificate's Issuing condition set to True), and checks the new
// certificate reaches every member live while a strict writer writes: no failed or lost
// write, every member's cluster_state ok throughout, no pod restarted.
func renew(ctx context.Context, t *testing.T, fx *fixture) {
	t.Helper()
	old := fx.vc.Status.TLS.Fingerprint
	before := fx.k.PodsState(ctx, t, fx.vc)
	states := fx.k.WatchClusterState(ctx, t, fx.vc, fx.cfg)
	ch := fx.k.StartCheckerWith(ctx, t, fx.vc, checker.Options{TLS: fx.cfg})
	time.Sleep(time.Second) // some writes before the renewal

	start := time.Now()
	name := certificateName(ctx, t, fx)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := &unstructured.Unstructured{}
		c.SetGroupVersionKind(certificateGVK)
		if err := fx.k.Client.Get(ctx, client.ObjectKey{Namespace: fx.vc.Namespace, Name: name}, c); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
		conds = append(conds, map[string]any{"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
			"message": "renewal asked by the e2e suite", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
			"observedGeneration": c.GetGeneration()})
		if err := unstructured.SetNestedSlice(c.Object, conds, "status", "conditions"); err != nil {
			return err
		}
		return fx.k.Client.Status().Update(ctx, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	var fp string
	err = framework.WaitFor(ctx, fx.k.Client, fx.vc, 2*time.Minute, "a new certificate in status.tls", func(vc *v1alpha1.ValkeyCluster) (bool, string) {
		if vc.Status.TLS == nil {
			return false, "no status.tls"
		}
		fp = vc.Status.TLS.Fingerprint
		return fp != old, "fingerprint " + fp
	})
	if err != nil {
		t.Fatal(err)
	}
	accepted := time.Since(start)
	err = framework.Until(ctx, time.Minute, "every member serving the renewed certificate "+fp, func(ctx context.Context) (bool, string, error) {
		got := fx.k.ServedFingerprints(ctx, fx.vc, fx.cfg)
		return framework.AllServe(got, fx.members, fp), fmt.Sprint(got), nil
	})
	served := time.Since(start)
	sr := states.Stop()
	r := framework.StopChecker(ctx, t, ch, "", true)
	if err != nil {
		t.Error(err)
	}
	t.Logf("renewal: accepted by the operator %s after it was asked, served by all %d members after %s", accepted.Round(100*time.Millisecond), fx.members, served.Round(100*time.Millisecond))
	t.Logf("%s", sr)
	if sr.Failures > 0 {
		t.Errorf("cluster_state was not ok on some member in %d of %d samples", sr.Failures, sr.Samples)
	}
	if r.Errors > 0 {
		t.Errorf("%d writes failed during the renewal", r.Errors)
	}
	if r.Acked == 0 {
		t.Error("no write was acknowledged during the renewal")
	}
	for _, c := range fx.k.PodsState(ctx, t, fx.vc).Changes(before) {
		t.Error(c)
	}
}

// certificateName is the cert-manager Certificate the operator owns for the cluster:
// the one in its namespace whose owner is the ValkeyCluster and whose Secret is the one
// status.tls names.
func certificateName(ctx context.Context, t *testing.T, fx *fixture) string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(certificateGVK.GroupVersion().WithKind("CertificateList"))
	if err := fx.k.Client.List(ctx, list, client.InNamespace(fx.vc.Namespace)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list.Items {
		secret, _, _ := unstructured.NestedString(c.Object, "spec", "secretName")
		owned := slices.ContainsFunc(c.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.UID == fx.vc.UID })
		if owned && secret == fx.vc.Status.TLS.SecretName {
			return c.GetName()
		}
		names = append(names, c.GetName()+" (Secret "+secret+")")
	}
	t.Fatalf("no Certificate owned by %s writes Secret %s; Certificates: %v", fx.vc.Name, fx.vc.Status.TLS.SecretName, names)
	return ""
}

// certificateNames are the DNS names and IP addresses of the cluster's Certificate.
func certificateNames(ctx context.Context, t *testing.T, fx *fixture) []string {
	t.Helper()
	c := &unstructured.Unstructured{}
	c.SetGroupVersionKind(certificateGVK)
	if err := fx.k.Client.Get(ctx, client.ObjectKey{Namespace: fx.vc.Namespace, Name: certificateName(ctx, t, fx)}, c); err != nil {
		t.Fatal(err)
	}
	dns, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "dnsNames")
	ips, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "ipAddresses")
	return append(dns, ips...)
}

// memberKeyPair is the certificate and key the members of the cluster use (the Secret
// cert-manager wrote).
func memberKeyPair(ctx context.Context, t *testing.T, fx *fixture) tls.Certificate {
	t.Helper()
	var s corev1.Secret
	if err := fx.k.Client.Get(ctx, client.ObjectKey{Namespace: fx.vc.Namespace, Name: fx.vc.Status.TLS.SecretName}, &s); err != nil {
		t.Fatal(err)
	}
	kp, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatalf("Secret %s: %v", s.Name, err)
	}
	return kp
}

// busHandshake opens a TLS connection to a member's cluster bus presenting kp, as a
// member of a cluster would, and tells whether the member accepted it: with TLS 1.3 the
// server judges the client's certificate after the handshake, so a refusal arrives as
// an alert on the first read; a member that accepted it waits for a bus message, and
// the read times out.
func busHandshake(ctx context.Context, addr string, kp tls.Certificate, server *tls.Config) error {
	cfg := server.Clone()
	cfg.Certificates = []tls.Certificate{kp}
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 3 * time.Second}, Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	if err == nil {
		return nil
	}
	return err
}

// writeAndRead writes through a TLS cluster client for a few seconds and reads every
// acknowledged write back: none may fail or be lost.
func writeAndRead(ctx context.Context, t *testing.T, fx *fixture) {
	t.Helper()
	ch := fx.k.StartCheckerWith(ctx, t, fx.vc, checker.Options{TLS: fx.cfg, Prefix: "wr" + strconv.Itoa(fx.members)})
	time.Sleep(3 * time.Second)
	r := framework.StopChecker(ctx, t, ch, "over TLS", true)
	if r.Errors > 0 || r.Acked == 0 {
		t.Errorf("%d writes failed, %d acknowledged", r.Errors, r.Acked)
	}
}

// webhooksFromCertManager checks the chart's certManager mode: the webhook
// configuration's CA bundle is the one cert-manager's cainjector put there from the
// webhooks' Certificate, and the webhooks answer a server-side dry run (a spec asking for
// both a Secret and cert-manager is refused, naming the field).
func webhooksFromCertManager(ctx context.Context, t *testing.T) {
	t.Helper()
	k := framework.ClusterFrom(ctx, t)
	name := framework.OperatorDeployment("webhooks")
	var s corev1.Secret
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: framework.OperatorNamespace, Name: name + "-cert"}, &s); err != nil {
		t.Fatal(err)
	}
	if s.Annotations["cert-manager.io/certificate-name"] != name {
		t.Errorf("Secret %s was not written by cert-manager for Certificate %s (annotations %v)", s.Name, name, s.Annotations)
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := k.Client.Get(ctx, client.ObjectKey{Name: name}, &vwc); err != nil {
		t.Fatal(err)
	}
	for _, w := range vwc.Webhooks {
		if string(w.ClientConfig.CABundle) != string(s.Data["ca.crt"]) {
			t.Errorf("webhook %s: the CA bundle is not the ca.crt of %s", w.Name, s.Name)
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data["ca.crt"]) {
		t.Fatalf("Secret %s: no CA in ca.crt", s.Name)
	}
	vc := framework.NewValkeyCluster(framework.Namespace(ctx), "both", 3, 1)
	vc.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "mine"}, CertManager: &v1alpha1.CertManagerSpec{}}
	err := k.Client.Create(ctx, vc, client.DryRunAll)
	switch {
	case err == nil:
		t.Fatal("a spec with both spec.tls.certificate and spec.tls.certManager was admitted")
	case !strings.Contains(err.Error(), "spec.tls"):
		t.Errorf("the refusal does not name spec.tls: %v", err)
	case !strings.Contains(err.Error(), "admission webhook"):
		t.Errorf("the refusal did not come from the webhook: %v", err)
	default:
		t.Logf("refused by the webhook: %v", err)
	}
}
