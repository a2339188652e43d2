package validation

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// The bounds cert-manager puts on a Certificate, refused here so that a cluster never
// asks for a Certificate cert-manager refuses.
const (
	// MinCertificateDuration is the shortest duration cert-manager issues for.
	MinCertificateDuration = time.Hour
	// MinRenewBefore is the shortest renewBefore cert-manager takes.
	MinRenewBefore = 5 * time.Minute
	// DefaultCertificateDuration is cert-manager's duration when none is given, which a
	// renewBefore must stay below.
	DefaultCertificateDuration = 90 * 24 * time.Hour
	// MinRSAKeySize and MaxRSAKeySize bound an RSA key's size.
	MinRSAKeySize = 2048
	MaxRSAKeySize = 8192
)

// ecdsaKeySizes are the ECDSA key sizes cert-manager generates (the P-256, P-384 and
// P-521 curves).
var ecdsaKeySizes = []int32{256, 384, 521}

// validateTLS checks that TLS has exactly one certificate source, and that source.
func validateTLS(t *v1alpha1.TLSSpec, p *field.Path) field.ErrorList {
	if t == nil {
		return nil
	}
	switch {
	case t.Certificate != nil && t.CertManager != nil:
		return field.ErrorList{field.Forbidden(p, "set exactly one of certificate (a Secret you keep) and certManager (a certificate cert-manager issues and renews), not both")}
	case t.Certificate != nil:
		return validateSecretName(t.Certificate.SecretName, true, p.Child("certificate", "secretName"))
	case t.CertManager != nil:
		return validateCertManager(t.CertManager, p.Child("certManager"))
	}
	return field.ErrorList{field.Required(p, "set exactly one of certificate (a Secret you keep) and certManager (a certificate cert-manager issues and renews)")}
}

// validateCertManager checks the certificate a cluster asks cert-manager for as
// cert-manager's own webhook would.
func validateCertManager(cm *v1alpha1.CertManagerSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateIssuerRef(cm.IssuerRef, p.Child("issuerRef"))...)
	errs = append(errs, validateCertificateDurations(cm, p)...)
	errs = append(errs, validatePrivateKey(cm.PrivateKey, p.Child("privateKey"))...)
	for i, n := range cm.DNSNames {
		errs = append(errs, validateCertificateDNSName(n, p.Child("dnsNames").Index(i))...)
	}
	for i, ip := range cm.IPAddresses {
		if _, err := netip.ParseAddr(ip); err != nil {
			errs = append(errs, field.Invalid(p.Child("ipAddresses").Index(i), ip, "must be an IPv4 or IPv6 address, such as 203.0.113.10"))
		}
	}
	return errs
}

// validateIssuerRef checks the issuer's name, kind and group.
func validateIssuerRef(r *v1alpha1.IssuerRef, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if r.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "the name of an Issuer or ClusterIssuer"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(r.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
		}
	}
	switch r.Kind {
	case "", v1alpha1.IssuerKindIssuer, v1alpha1.IssuerKindClusterIssuer:
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), r.Kind, []string{string(v1alpha1.IssuerKindIssuer), string(v1alpha1.IssuerKindClusterIssuer)}))
	}
	if r.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(r.Group) {
			errs = append(errs, field.Invalid(p.Child("group"), r.Group, msg))
		}
	}
	return errs
}

// validateCertificateDurations checks duration and renewBefore against cert-manager's
// bounds: a duration of at least an hour, a renewBefore of at least 5 minutes and below
// the duration (cert-manager's default of 90 days when none is given).
func validateCertificateDurations(cm *v1alpha1.CertManagerSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	duration := DefaultCertificateDuration
	if cm.Duration != nil {
		duration = cm.Duration.Duration
		if duration < MinCertificateDuration {
			errs = append(errs, field.Invalid(p.Child("duration"), duration.String(),
				fmt.Sprintf("must be at least %s (cert-manager issues nothing shorter)", MinCertificateDuration)))
		}
	}
	if cm.RenewBefore == nil {
		return errs
	}
	rb := cm.RenewBefore.Duration
	switch {
	case rb < MinRenewBefore:
		errs = append(errs, field.Invalid(p.Child("renewBefore"), rb.String(), fmt.Sprintf("must be at least %s", MinRenewBefore)))
	case rb >= duration:
		what := "duration"
		if cm.Duration == nil {
			what = "cert-manager's default duration"
		}
		errs = append(errs, field.Invalid(p.Child("renewBefore"), rb.String(),
			fmt.Sprintf("must be less than the certificate's %s (%s): cert-manager would renew it all the time", what, duration)))
	}
	return errs
}

// validatePrivateKey checks the key's size for its algorithm as cert-manager does:
// RSA 2048 to 8192 bits, ECDSA 256, 384 or 521; Ed25519 has no size (cert-manager
// ignores one, which ClusterWarnings says).
func validatePrivateKey(k *v1alpha1.PrivateKeySpec, p *field.Path) field.ErrorList {
	if k == nil {
		return nil
	}
	size := p.Child("size")
	switch k.Algorithm {
	case "", v1alpha1.PrivateKeyRSA:
		if k.Size != 0 && (k.Size < MinRSAKeySize || k.Size > MaxRSAKeySize) {
			return field.ErrorList{field.Invalid(size, k.Size, fmt.Sprintf("must be between %d and %d for an RSA key", MinRSAKeySize, MaxRSAKeySize))}
		}
	case v1alpha1.PrivateKeyECDSA:
		if k.Size != 0 && !slices.Contains(ecdsaKeySizes, k.Size) {
			return field.ErrorList{field.NotSupported(size, k.Size, []string{"256", "384", "521"})}
		}
	case v1alpha1.PrivateKeyEd25519:
	default:
		return field.ErrorList{field.NotSupported(p.Child("algorithm"), k.Algorithm,
			[]string{string(v1alpha1.PrivateKeyRSA), string(v1alpha1.PrivateKeyECDSA), string(v1alpha1.PrivateKeyEd25519)})}
	}
	if k.Size < 0 {
		return field.ErrorList{field.Invalid(size, k.Size, "must not be negative")}
	}
	return nil
}

// validateCertificateDNSName checks an extra name of the certificate: a DNS name,
// optionally with a wildcard as its whole first label.
func validateCertificateDNSName(name string, p *field.Path) field.ErrorList {
	check := strings.TrimPrefix(name, "*.")
	msgs := validation.IsDNS1123Subdomain(strings.ToLower(check))
	if strings.Contains(check, "*") {
		msgs = append(msgs, "a wildcard may only be the whole first label (*.example.com)")
	}
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// privateKeySizeWarning warns that cert-manager ignores a size given for an Ed25519 key.
func privateKeySizeWarning(t *v1alpha1.TLSSpec, p *field.Path) string {
	if t == nil || t.CertManager == nil || t.CertManager.PrivateKey == nil {
		return ""
	}
	k := t.CertManager.PrivateKey
	if k.Algorithm != v1alpha1.PrivateKeyEd25519 || k.Size == 0 {
		return ""
	}
	return fmt.Sprintf("%s is ignored: an Ed25519 key has no size", p.Child("certManager", "privateKey", "size"))
}

// validateTLSUpdate refuses turning TLS on or off; its source may change.
func validateTLSUpdate(old, t *v1alpha1.TLSSpec, p *field.Path) field.ErrorList {
	switch {
	case old == nil && t != nil:
		return field.ErrorList{field.Forbidden(p, "TLS cannot be turned on after creation")}
	case old != nil && t == nil:
		return field.ErrorList{field.Forbidden(p, "TLS cannot be turned off after creation; tls.certificate and tls.certManager may change")}
	}
	return nil
}
