//go:build e2e

package certmanager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
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
	var own, other *fixture
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
			if _, err := k.CreateCAIssuer(ctx, ns, "team-ca"); err != nil {
				t.Fatal(err)
			}
			vc := framework.NewValkeyCluster(ns, "other", 3, 1)
			vc.Spec.TLS = &v1alpha1.TLSSpec{CertManager: &v1alpha1.CertManagerSpec{IssuerRef: &v1alpha1.IssuerRef{Name: "team-ca", Kind: "Issuer"}}}
			other = create(ctx, t, k, vc)
			return ctx
		}).
		Assess("the bus of a cluster refuses the member certificate of another cluster", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			need(t, own)
			need(t, other)
			// From one member of own to another, so that the network policy, which admits
			// only the cluster's own members to the bus port, lets the connection through
			// and the servers' certificate check is what decides.
			members := own.k.Members(ctx, t, own.vc)
			from := own.k.PodOf(ctx, t, own.vc, members[0].Name)
			to := net.JoinHostPort(members[1].Status.PodIP, strconv.Itoa(framework.BusPort))
			if err := busAccepts(ctx, from, to, memberCertificate(ctx, t, own), own.cfg); err != nil {
				t.Fatalf("the bus of %s refused its own member certificate from %s: %v", own.vc.Name, from.Name, err)
			}
			err := busAccepts(ctx, from, to, memberCertificate(ctx, t, other), own.cfg)
			if err == nil {
				t.Fatalf("the bus of %s (%s) accepted the member certificate of %s", own.vc.Name, to, other.vc.Name)
			}
			t.Logf("the bus of %s at %s refused the member certificate of %s: %v", own.vc.Name, to, other.vc.Name, err)
			return ctx
		}).
		Assess("a second cluster of the same Issuer: both say their CA is shared", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			need(t, other)
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "twin", 1, 0)
			vc.Spec.TLS = other.vc.Spec.TLS.DeepCopy()
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				vc    *v1alpha1.ValkeyCluster
				names string
			}{{vc, other.vc.Name}, {other.vc, vc.Name}} {
				if err := framework.WaitFor(ctx, k.Client, c.vc, 2*time.Minute, "report TLSReady=True CAShared",
					framework.ConditionIs(v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonCAShared)); err != nil {
					t.Fatal(err)
				}
				msg := meta.FindStatusCondition(c.vc.Status.Conditions, v1alpha1.ConditionTLSReady).Message
				if !strings.Contains(msg, "ValkeyCluster "+c.names+" of this namespace") {
					t.Errorf("%s: TLSReady does not name %s: %s", c.vc.Name, c.names, msg)
				}
				t.Logf("%s: TLSReady %s: %s", c.vc.Name, v1alpha1.ReasonCAShared, msg)
			}
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

// memberCertificate is the certificate and key the members of fx's cluster present,
// from the Secret status.tls names.
func memberCertificate(ctx context.Context, t *testing.T, fx *fixture) tls.Certificate {
	t.Helper()
	var s corev1.Secret
	if err := fx.k.Client.Get(ctx, client.ObjectKey{Namespace: fx.vc.Namespace, Name: fx.vc.Status.TLS.SecretName}, &s); err != nil {
		t.Fatal(err)
	}
	c, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatalf("Secret %s: %v", s.Name, err)
	}
	return c
}

// busAccepts connects from pod to the cluster bus at addr with cert as the client
// certificate (server verified with cfg) and tells whether the server kept the link:
// nil when it neither refused the certificate nor closed the link within 2 s.
func busAccepts(ctx context.Context, pod *corev1.Pod, addr string, cert tls.Certificate, cfg *tls.Config) error {
	cfg = cfg.Clone()
	cfg.Certificates = []tls.Certificate{cert}
	cfg.MinVersion = tls.VersionTLS13 // the server's verdict on the client comes on the first read
	c, err := framework.DialFrom(ctx, pod, "server", addr, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return err
	}
	_, err = c.Read(make([]byte, 1))
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	if err == nil {
		return errors.New("the bus sent data before the client spoke")
	}
	return err
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
