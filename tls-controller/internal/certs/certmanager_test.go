package certs

import (
	"crypto/x509"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/operator"
)

// cmCluster is a cluster vk of namespace ns with spec.tls.certManager changed by mutate.
func cmCluster(mutate func(cm *v1alpha1.CertManagerSpec)) *v1alpha1.ValkeyCluster {
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "vk", Namespace: "ns", UID: types.UID("uid-vk")}}
	cm := &v1alpha1.CertManagerSpec{}
	if mutate != nil {
		mutate(cm)
	}
	vc.Spec.TLS = &v1alpha1.TLSSpec{CertManager: cm}
	return vc
}

// expectOwned checks that an object is labelled as the cluster's and controlled by it.
func expectOwned(t *testing.T, o client.Object, vc *v1alpha1.ValkeyCluster) {
	t.Helper()
	for k, v := range v1alpha1.ClusterLabels(vc.Name) {
		if o.GetLabels()[k] != v {
			t.Errorf("%s: label %s=%q, want %q", o.GetName(), k, o.GetLabels()[k], v)
		}
	}
	if !metav1.IsControlledBy(o, vc) {
		t.Errorf("%s is not controlled by the cluster: %v", o.GetName(), o.GetOwnerReferences())
	}
}

func TestWantedObjects(t *testing.T) {
	names := Names{DNSNames: []string{"vk.ns.svc"}, IPAddresses: []string{"203.0.113.1"}}
	describe := func(objs []client.Object) []string {
		var out []string
		for _, o := range objs {
			out = append(out, kindOf(o)+" "+o.GetName())
		}
		return out
	}
	tests := []struct {
		name string
		vc   *v1alpha1.ValkeyCluster
		want []string
	}{
		{name: "no cert-manager", vc: &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "vk"}}},
		{name: "a Secret you keep", vc: func() *v1alpha1.ValkeyCluster {
			vc := cmCluster(nil)
			vc.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "mine"}}
			return vc
		}()},
		{name: "the cluster's own CA first, then the members' Certificate", vc: cmCluster(nil),
			want: []string{"Issuer vk-selfsigned", "Certificate vk-ca", "Issuer vk-ca", "Certificate vk-tls"}},
		{name: "an issuer of the user's: the members' Certificate alone", vc: cmCluster(func(cm *v1alpha1.CertManagerSpec) {
			cm.IssuerRef = &v1alpha1.IssuerRef{Name: "corp", Kind: v1alpha1.IssuerKindClusterIssuer}
		}), want: []string{"Certificate vk-tls"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := wantedObjects(tc.vc, names)
			if got := describe(objs); !slices.Equal(got, tc.want) {
				t.Fatalf("objects %q, want %q", got, tc.want)
			}
			for _, o := range objs {
				expectOwned(t, o, tc.vc)
			}
			// Every object wanted is one the controller looks for when it is not wanted.
			owned := describe(ownedObjects(tc.vc))
			for _, w := range tc.want {
				if !slices.Contains(owned, w) {
					t.Errorf("%s is not among the objects the controller deletes when not wanted (%q)", w, owned)
				}
			}
		})
	}
}

func TestMemberCertificate(t *testing.T) {
	names := Names{DNSNames: []string{"*.vk-nodes.ns.svc", "vk.ns.svc"}, IPAddresses: []string{"203.0.113.1"}}
	usages := []cmapi.KeyUsage{cmapi.UsageServerAuth, cmapi.UsageClientAuth, cmapi.UsageDigitalSignature, cmapi.UsageKeyEncipherment}
	tests := []struct {
		name   string
		mutate func(cm *v1alpha1.CertManagerSpec)
		issuer cmmeta.IssuerReference
		check  func(t *testing.T, s cmapi.CertificateSpec)
	}{
		{name: "defaults: the cluster's own CA, cert-manager's lifetime and key",
			issuer: cmmeta.IssuerReference{Name: "vk-ca", Kind: "Issuer", Group: "cert-manager.io"},
			check: func(t *testing.T, s cmapi.CertificateSpec) {
				if s.Duration != nil || s.RenewBefore != nil || s.PrivateKey.Algorithm != "" || s.PrivateKey.Size != 0 {
					t.Errorf("lifetime %v, renewal %v, key %+v: want cert-manager's defaults", s.Duration, s.RenewBefore, s.PrivateKey)
				}
			}},
		{name: "a ClusterIssuer of the user's, a lifetime, a renewal and an ECDSA key",
			mutate: func(cm *v1alpha1.CertManagerSpec) {
				cm.IssuerRef = &v1alpha1.IssuerRef{Name: "corp", Kind: v1alpha1.IssuerKindClusterIssuer}
				cm.Duration = &metav1.Duration{Duration: 2160 * time.Hour}
				cm.RenewBefore = &metav1.Duration{Duration: 360 * time.Hour}
				cm.PrivateKey = &v1alpha1.PrivateKeySpec{Algorithm: v1alpha1.PrivateKeyECDSA, Size: 384}
			},
			issuer: cmmeta.IssuerReference{Name: "corp", Kind: "ClusterIssuer", Group: "cert-manager.io"},
			check: func(t *testing.T, s cmapi.CertificateSpec) {
				if s.Duration.Duration != 2160*time.Hour || s.RenewBefore.Duration != 360*time.Hour {
					t.Errorf("lifetime %v, renewal %v", s.Duration, s.RenewBefore)
				}
				if s.PrivateKey.Algorithm != cmapi.ECDSAKeyAlgorithm || s.PrivateKey.Size != 384 {
					t.Errorf("key %+v", s.PrivateKey)
				}
			}},
		{name: "an issuer of another group",
			mutate: func(cm *v1alpha1.CertManagerSpec) {
				cm.IssuerRef = &v1alpha1.IssuerRef{Name: "pca", Kind: v1alpha1.IssuerKindIssuer, Group: "awspca.cert-manager.io"}
			},
			issuer: cmmeta.IssuerReference{Name: "pca", Kind: "Issuer", Group: "awspca.cert-manager.io"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vc := cmCluster(tc.mutate)
			c := memberCertificate(vc, names)
			s := c.Spec
			if c.Name != "vk-tls" || c.Namespace != "ns" || s.SecretName != "vk-tls" {
				t.Errorf("Certificate %s/%s writes Secret %s, want ns/vk-tls writing vk-tls", c.Namespace, c.Name, s.SecretName)
			}
			if s.IssuerRef != tc.issuer {
				t.Errorf("issuer %+v, want %+v", s.IssuerRef, tc.issuer)
			}
			if !slices.Equal(s.DNSNames, names.DNSNames) || !slices.Equal(s.IPAddresses, names.IPAddresses) {
				t.Errorf("names %q %q, want %q %q", s.DNSNames, s.IPAddresses, names.DNSNames, names.IPAddresses)
			}
			if !slices.Equal(s.Usages, usages) {
				t.Errorf("usages %q, want %q: members are servers and clients of each other", s.Usages, usages)
			}
			if s.IsCA {
				t.Error("the members' certificate is a CA")
			}
			if s.PrivateKey.Encoding != cmapi.PKCS8 || s.PrivateKey.RotationPolicy != cmapi.RotationPolicyAlways {
				t.Errorf("key %+v: want PKCS #8, a new key at each issuance", s.PrivateKey)
			}
			if s.SecretTemplate == nil || !maps.Equal(s.SecretTemplate.Labels, v1alpha1.ClusterLabels("vk")) {
				t.Errorf("the Secret's labels %v, want the cluster's (the operator's caches select them)", s.SecretTemplate)
			}
			if s.RevisionHistoryLimit == nil || *s.RevisionHistoryLimit != 1 {
				t.Errorf("revision history %v, want 1", s.RevisionHistoryLimit)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestClusterCA(t *testing.T) {
	vc := cmCluster(nil)
	self, ca, caIss := selfSignedIssuer(vc), caCertificate(vc), caIssuer(vc)
	if self.Name != "vk-selfsigned" || self.Spec.SelfSigned == nil {
		t.Errorf("self-signed Issuer %s: %+v", self.Name, self.Spec)
	}
	s := ca.Spec
	if ca.Name != "vk-ca" || !s.IsCA || s.SecretName != "vk-ca" || s.CommonName != "vk-ca" {
		t.Errorf("CA Certificate %s: isCA %v, Secret %s, common name %s", ca.Name, s.IsCA, s.SecretName, s.CommonName)
	}
	if s.IssuerRef.Name != "vk-selfsigned" || s.IssuerRef.Kind != "Issuer" {
		t.Errorf("the CA is signed by %+v, want the self-signed Issuer", s.IssuerRef)
	}
	if s.Duration == nil || s.Duration.Duration != 10*365*24*time.Hour {
		t.Errorf("the CA lasts %v, want ten years", s.Duration)
	}
	if s.PrivateKey.RotationPolicy != cmapi.RotationPolicyNever {
		t.Errorf("the CA's key is rotated (%q): a renewed CA would not verify the members' certificates", s.PrivateKey.RotationPolicy)
	}
	if !slices.Contains(s.Usages, cmapi.UsageCertSign) {
		t.Errorf("the CA may not sign certificates: %q", s.Usages)
	}
	if caIss.Name != "vk-ca" || caIss.Spec.CA == nil || caIss.Spec.CA.SecretName != "vk-ca" {
		t.Errorf("CA Issuer %s: %+v", caIss.Name, caIss.Spec)
	}
	if got := memberIssuer(vc); got.Name != caIss.Name || got.Kind != "Issuer" {
		t.Errorf("the members' certificate is signed by %+v, want the cluster's CA Issuer", got)
	}
}

func TestIssuanceOf(t *testing.T) {
	failed := metav1.Now()
	cond := func(typ cmapi.CertificateConditionType, st cmmeta.ConditionStatus, reason, msg string, gen int64) cmapi.CertificateCondition {
		return cmapi.CertificateCondition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: gen}
	}
	tests := []struct {
		name    string
		conds   []cmapi.CertificateCondition
		failure *metav1.Time
		gen     int64
		want    issuance
	}{
		{name: "just created", gen: 1, want: issuance{Pending: "cert-manager has not reported on it yet"}},
		{name: "issuing", gen: 1, conds: []cmapi.CertificateCondition{
			cond(cmapi.CertificateConditionReady, cmmeta.ConditionFalse, "DoesNotExist", "Issuing certificate as Secret does not exist", 1),
			cond(cmapi.CertificateConditionIssuing, cmmeta.ConditionTrue, "DoesNotExist", "Issuing certificate as Secret does not exist", 1),
		}, want: issuance{Pending: "Ready=False DoesNotExist: Issuing certificate as Secret does not exist"}},
		{name: "ready", gen: 2, conds: []cmapi.CertificateCondition{
			cond(cmapi.CertificateConditionReady, cmmeta.ConditionTrue, "Ready", "Certificate is up to date and has not expired", 2),
		}, want: issuance{}},
		{name: "ready for an earlier spec", gen: 3, conds: []cmapi.CertificateCondition{
			cond(cmapi.CertificateConditionReady, cmmeta.ConditionTrue, "Ready", "Certificate is up to date and has not expired", 2),
		}, want: issuance{Pending: "cert-manager has not looked at its latest change yet"}},
		{name: "failed, waiting for the retry", gen: 1, failure: &failed, conds: []cmapi.CertificateCondition{
			cond(cmapi.CertificateConditionReady, cmmeta.ConditionFalse, "DoesNotExist", "Issuing certificate as Secret does not exist", 1),
			cond(cmapi.CertificateConditionIssuing, cmmeta.ConditionFalse, "Failed", "The certificate request has failed to complete and will be retried: the issuer refused", 1),
		}, want: issuance{Failed: "The certificate request has failed to complete and will be retried: the issuer refused"}},
		{name: "retrying after a failure", gen: 1, failure: &failed, conds: []cmapi.CertificateCondition{
			cond(cmapi.CertificateConditionReady, cmmeta.ConditionFalse, "DoesNotExist", "Issuing certificate as Secret does not exist", 1),
			cond(cmapi.CertificateConditionIssuing, cmmeta.ConditionTrue, "DoesNotExist", "Issuing certificate as Secret does not exist", 1),
		}, want: issuance{Pending: "Ready=False DoesNotExist: Issuing certificate as Secret does not exist"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Name: "vk-tls", Generation: tc.gen}}
			c.Status.Conditions, c.Status.LastFailureTime = tc.conds, tc.failure
			tc.want.Certificate = "vk-tls"
			if got := issuanceOf(c); got != tc.want {
				t.Errorf("issuance %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestExpiryWindow(t *testing.T) {
	now := time.Now()
	leaf := func(lifetime time.Duration) *x509.Certificate {
		return &x509.Certificate{NotBefore: now, NotAfter: now.Add(lifetime)}
	}
	day := 24 * time.Hour
	tests := []struct {
		name   string
		window time.Duration
		cm     *v1alpha1.CertManagerSpec
		leaf   *x509.Certificate
		want   time.Duration
	}{
		{name: "a Secret you keep: the flag's window", window: 30 * day, leaf: leaf(90 * day), want: 30 * day},
		{name: "cert-manager's default renewal, a third of 90 days: half of it", window: 30 * day, cm: &v1alpha1.CertManagerSpec{},
			leaf: leaf(90 * day), want: 15 * day},
		{name: "a renewBefore: half of it", window: 30 * day, cm: &v1alpha1.CertManagerSpec{RenewBefore: &metav1.Duration{Duration: 2 * day}},
			leaf: leaf(90 * day), want: day},
		{name: "a shorter flag window stays", window: 7 * day, cm: &v1alpha1.CertManagerSpec{}, leaf: leaf(365 * day), want: 7 * day},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExpiryWindow(tc.window, tc.cm, tc.leaf); got != tc.want {
				t.Errorf("window %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTrimCertManager: the cache keeps what the controller reads of the operator's
// cert-manager objects, and a stub of one too large to be the operator's.
func TestTrimCertManager(t *testing.T) {
	vc := cmCluster(nil)
	crt := memberCertificate(vc, Names{DNSNames: []string{"vk.ns.svc"}})
	crt.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 1000)}
	crt.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
	crt.Status.Conditions = []cmapi.CertificateCondition{{Type: cmapi.CertificateConditionReady, Status: cmmeta.ConditionTrue, Message: strings.Repeat("m", 10000)}}
	out, _ := trimCertManager(crt)
	got := out.(*cmapi.Certificate)
	if got.Annotations != nil || got.ManagedFields != nil {
		t.Errorf("kept annotations %v or managed fields", got.Annotations)
	}
	if !slices.Equal(got.Spec.DNSNames, crt.Spec.DNSNames) || !metav1.IsControlledBy(got, vc) || len(got.Status.Conditions) != 1 {
		t.Errorf("lost what the controller reads: %+v", got)
	}
	if n := len(got.Status.Conditions[0].Message); n > 4096 {
		t.Errorf("a condition message of %d bytes", n)
	}
	big := memberCertificate(vc, Names{DNSNames: slices.Repeat([]string{strings.Repeat("n", 250)}, 200)})
	out, _ = trimCertManager(big)
	if stub := out.(*cmapi.Certificate); stub.Annotations[operator.AnnotationCacheStub] == "" || len(stub.Spec.DNSNames) != 0 {
		t.Errorf("a Certificate of %d names is kept whole", len(big.Spec.DNSNames))
	}
	iss, _ := trimCertManager(caIssuer(vc))
	if got := iss.(*cmapi.Issuer); got.Spec.CA == nil || !metav1.IsControlledBy(got, vc) {
		t.Errorf("trimmed Issuer: %+v", got)
	}
}
