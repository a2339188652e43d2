package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// validateTLS checks that TLS names its certificate Secret.
func validateTLS(t *v1alpha1.TLSSpec, p *field.Path) field.ErrorList {
	if t == nil {
		return nil
	}
	return validateSecretName(t.Certificate.SecretName, true, p.Child("certificate", "secretName"))
}

// validateTLSUpdate refuses turning TLS on or off; the Secret name may change.
func validateTLSUpdate(old, t *v1alpha1.TLSSpec, p *field.Path) field.ErrorList {
	switch {
	case old == nil && t != nil:
		return field.ErrorList{field.Forbidden(p, "TLS cannot be turned on after creation")}
	case old != nil && t == nil:
		return field.ErrorList{field.Forbidden(p, "TLS cannot be turned off after creation; only tls.certificate.secretName may change")}
	}
	return nil
}
