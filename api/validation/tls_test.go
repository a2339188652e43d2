package validation

import (
	"testing"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func tlsSecret(name string) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) {
		c.Spec.TLS = &v1alpha1.TLSSpec{Certificate: v1alpha1.CertificateSpec{SecretName: name}}
	}
}

func TestValidateTLS(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "secret named", mutate: tlsSecret("valkey-tls")},
		{name: "secret unnamed", mutate: tlsSecret(""),
			want: []string{"spec.tls.certificate.secretName: Required value"}},
		{name: "invalid secret name", mutate: tlsSecret("Valkey_TLS"),
			want: []string{"spec.tls.certificate.secretName: Invalid value"}},
	})
}

func TestValidateTLSUpdate(t *testing.T) {
	runUpdateCases(t, []updateCase{
		{name: "stays off"},
		{name: "secret renamed", mutateOld: tlsSecret("a"), mutateNew: tlsSecret("b")},
		{name: "turned on", mutateNew: tlsSecret("a"),
			want: []string{"spec.tls: Forbidden: TLS cannot be turned on after creation"}},
		{name: "turned off", mutateOld: tlsSecret("a"),
			want: []string{"spec.tls: Forbidden: TLS cannot be turned off after creation"}},
	})
}
