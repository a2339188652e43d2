package validation

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func tlsSecret(name string) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) {
		c.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: name}}
	}
}

// certManager sets spec.tls.certManager, changed by mutate.
func certManager(mutate func(cm *v1alpha1.CertManagerSpec)) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) {
		cm := &v1alpha1.CertManagerSpec{}
		if mutate != nil {
			mutate(cm)
		}
		c.Spec.TLS = &v1alpha1.TLSSpec{CertManager: cm}
	}
}

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestValidateTLS(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "secret named", mutate: tlsSecret("valkey-tls")},
		{name: "secret unnamed", mutate: tlsSecret(""),
			want: []string{"spec.tls.certificate.secretName: Required value"}},
		{name: "invalid secret name", mutate: tlsSecret("Valkey_TLS"),
			want: []string{"spec.tls.certificate.secretName: Invalid value"}},
		{name: "neither source", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.TLS = &v1alpha1.TLSSpec{} },
			want: []string{"spec.tls: Required value: set exactly one of certificate (a Secret you keep) and certManager"}},
		{name: "both sources", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "mine"}, CertManager: &v1alpha1.CertManagerSpec{}}
		}, want: []string{"spec.tls: Forbidden: set exactly one of certificate (a Secret you keep) and certManager", "not both"}},
		{name: "cert-manager with every default", mutate: certManager(nil)},
		{name: "cert-manager with everything set", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.IssuerRef = &v1alpha1.IssuerRef{Name: "corp-ca", Kind: v1alpha1.IssuerKindClusterIssuer, Group: v1alpha1.CertManagerGroup}
			cm.Duration, cm.RenewBefore = duration(2160*time.Hour), duration(360*time.Hour)
			cm.PrivateKey = &v1alpha1.PrivateKeySpec{Algorithm: v1alpha1.PrivateKeyECDSA, Size: 384}
			cm.DNSNames = []string{"cache.example.com", "*.cache.example.com"}
			cm.IPAddresses = []string{"203.0.113.10", "2001:db8::10"}
		})},
	})
}

func TestValidateCertManager(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "issuer unnamed", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) { cm.IssuerRef = &v1alpha1.IssuerRef{} }),
			want: []string{"spec.tls.certManager.issuerRef.name: Required value"}},
		{name: "issuer name invalid", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) { cm.IssuerRef = &v1alpha1.IssuerRef{Name: "Corp_CA"} }),
			want: []string{`spec.tls.certManager.issuerRef.name: Invalid value: "Corp_CA"`}},
		{name: "issuer of another kind", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.IssuerRef = &v1alpha1.IssuerRef{Name: "corp", Kind: "VaultIssuer"}
		}), want: []string{`spec.tls.certManager.issuerRef.kind: Unsupported value: "VaultIssuer": supported values: "Issuer", "ClusterIssuer"`}},
		{name: "issuer group invalid", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.IssuerRef = &v1alpha1.IssuerRef{Name: "corp", Group: "Cert Manager"}
		}), want: []string{`spec.tls.certManager.issuerRef.group: Invalid value: "Cert Manager"`}},
		{name: "duration of an hour", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) { cm.Duration = duration(time.Hour) })},
		{name: "duration too short", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) { cm.Duration = duration(59 * time.Minute) }),
			want: []string{`spec.tls.certManager.duration: Invalid value: "59m0s": must be at least 1h0m0s`}},
		{name: "renewBefore too short", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) { cm.RenewBefore = duration(time.Minute) }),
			want: []string{`spec.tls.certManager.renewBefore: Invalid value: "1m0s": must be at least 5m0s`}},
		{name: "renewBefore not below duration", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.Duration, cm.RenewBefore = duration(24*time.Hour), duration(24*time.Hour)
		}), want: []string{`spec.tls.certManager.renewBefore: Invalid value: "24h0m0s": must be less than the certificate's duration (24h0m0s)`}},
		{name: "renewBefore not below cert-manager's default duration", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.RenewBefore = duration(100 * 24 * time.Hour)
		}), want: []string{"spec.tls.certManager.renewBefore: Invalid value: \"2400h0m0s\": must be less than the certificate's cert-manager's default duration (2160h0m0s)"}},
		{name: "renewBefore below cert-manager's default duration", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.RenewBefore = duration(30 * 24 * time.Hour)
		})},
		{name: "RSA of the default size", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.PrivateKey = &v1alpha1.PrivateKeySpec{Algorithm: v1alpha1.PrivateKeyRSA}
		})},
		{name: "RSA 4096", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.PrivateKey = &v1alpha1.PrivateKeySpec{Algorithm: v1alpha1.PrivateKeyRSA, Size: 4096}
		})},
		{name: "RSA too small", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.PrivateKey = &v1alpha1.PrivateKeySpec{Algorithm: v1alpha1.PrivateKeyRSA, Size: 1024}
		}), want: []string{"spec.tls.certManager.privateKey.size: Invalid value: 1024: must be between 2048 and 8192 for an RSA key"}},
		{name: "a size without an algorithm is RSA's", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.PrivateKey = &v1alpha1.PrivateKeySpec{Size: 256}
		}), want: []string{"spec.tls.certManager.privateKey.size: Invalid value: 256: must be between 2048 and 8192 for an RSA key"}},
		{name: "ECDSA 521", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.PrivateKey = &v1alpha1.PrivateKeySpec{Algorithm: v1alpha1.PrivateKeyECDSA, Size: 521}
		})},
		{name: "ECDSA of a curve cert-manager lacks", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.PrivateKey = &v1alpha1.PrivateKeySpec{Algorithm: v1alpha1.PrivateKeyECDSA, Size: 2048}
		}), want: []string{`spec.tls.certManager.privateKey.size: Unsupported value: 2048: supported values: "256", "384", "521"`}},
		{name: "Ed25519", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.PrivateKey = &v1alpha1.PrivateKeySpec{Algorithm: v1alpha1.PrivateKeyEd25519}
		})},
		{name: "an unknown algorithm", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.PrivateKey = &v1alpha1.PrivateKeySpec{Algorithm: "DSA"}
		}), want: []string{`spec.tls.certManager.privateKey.algorithm: Unsupported value: "DSA"`}},
		{name: "a name with a wildcard in front", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) { cm.DNSNames = []string{"*.example.com"} })},
		{name: "a wildcard inside a name", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) { cm.DNSNames = []string{"a.*.example.com"} }),
			want: []string{`spec.tls.certManager.dnsNames[0]: Invalid value: "a.*.example.com"`}},
		{name: "a name that is no DNS name", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) { cm.DNSNames = []string{"ok.example.com", "not a name"} }),
			want: []string{`spec.tls.certManager.dnsNames[1]: Invalid value: "not a name"`}},
		{name: "an address that is no IP", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) { cm.IPAddresses = []string{"10.0.0.1", "cache.example.com"} }),
			want: []string{`spec.tls.certManager.ipAddresses[1]: Invalid value: "cache.example.com": must be an IPv4 or IPv6 address`}},
		{name: "an address with a prefix", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) { cm.IPAddresses = []string{"10.0.0.0/8"} }),
			want: []string{`spec.tls.certManager.ipAddresses[0]: Invalid value: "10.0.0.0/8"`}},
	})
}

func TestPrivateKeySizeWarning(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  *v1alpha1.PrivateKeySpec
		want string
	}{
		{name: "no key"},
		{name: "Ed25519 without a size", key: &v1alpha1.PrivateKeySpec{Algorithm: v1alpha1.PrivateKeyEd25519}},
		{name: "ECDSA with a size", key: &v1alpha1.PrivateKeySpec{Algorithm: v1alpha1.PrivateKeyECDSA, Size: 256}},
		{name: "Ed25519 with a size", key: &v1alpha1.PrivateKeySpec{Algorithm: v1alpha1.PrivateKeyEd25519, Size: 256},
			want: "spec.tls.certManager.privateKey.size is ignored: an Ed25519 key has no size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validCluster()
			certManager(func(cm *v1alpha1.CertManagerSpec) { cm.PrivateKey = tc.key })(c)
			var got string
			for _, w := range ClusterWarnings(c) {
				if w != "" {
					got = w
				}
			}
			if got != tc.want {
				t.Errorf("warning %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateTLSUpdate(t *testing.T) {
	runUpdateCases(t, []updateCase{
		{name: "stays off"},
		{name: "secret renamed", mutateOld: tlsSecret("a"), mutateNew: tlsSecret("b")},
		{name: "from a Secret to cert-manager", mutateOld: tlsSecret("a"), mutateNew: certManager(nil)},
		{name: "from cert-manager to a Secret", mutateOld: certManager(nil), mutateNew: tlsSecret("a")},
		{name: "to another issuer", mutateOld: certManager(nil), mutateNew: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.IssuerRef = &v1alpha1.IssuerRef{Name: "corp", Kind: v1alpha1.IssuerKindClusterIssuer}
		})},
		{name: "turned on", mutateNew: tlsSecret("a"),
			want: []string{"spec.tls: Forbidden: TLS cannot be turned on after creation"}},
		{name: "turned off", mutateOld: tlsSecret("a"),
			want: []string{"spec.tls: Forbidden: TLS cannot be turned off after creation"}},
		{name: "cert-manager's turned off", mutateOld: certManager(nil),
			want: []string{"spec.tls: Forbidden: TLS cannot be turned off after creation"}},
	})
}
