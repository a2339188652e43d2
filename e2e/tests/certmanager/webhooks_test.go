//go:build e2e

package certmanager

import (
	"context"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// TestWebhooksCertificate is the chart's webhooks.certificates.mode=certManager, which
// the suite installs the operator with: the webhooks serve a certificate cert-manager
// issued, cert-manager's cainjector put its CA in the webhook configuration, and the API
// server reaches the webhooks with it. And cert-manager's own webhook, which the suite
// runs, validates cert-manager's resources.
func TestWebhooksCertificate(t *testing.T) {
	f := framework.NewFeature(suite, "webhooks with cert-manager's certificate").
		Assess("the webhooks serve a certificate cert-manager issued", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			webhooksFromCertManager(ctx, t)
			return ctx
		}).
		Assess("cert-manager's own webhook refuses a Certificate that names nothing", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			err := framework.CertManagerWebhookRefusal(ctx, framework.ClusterFrom(ctx, t).Client, framework.Namespace(ctx))
			if !framework.CertManagerWebhookRefused(err) {
				t.Fatalf("want cert-manager's webhook to refuse it, got %v", err)
			}
			t.Logf("refused: %v", err)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// webhooksFromCertManager checks the Secret the webhooks serve from was written by
// cert-manager for the chart's Certificate, every webhook of the configuration carries
// its CA, and the webhooks answer a server-side dry run through the API server (a
// reserved user name is refused, naming the field).
func webhooksFromCertManager(ctx context.Context, t *testing.T) {
	t.Helper()
	k := framework.ClusterFrom(ctx, t)
	name := framework.OperatorDeployment("webhooks")
	var s corev1.Secret
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: framework.OperatorNamespace, Name: name + "-cert"}, &s); err != nil {
		t.Fatal(err)
	}
	if got := s.Annotations["cert-manager.io/certificate-name"]; got != name {
		t.Errorf("Secret %s was not written by cert-manager for Certificate %s (certificate-name %q)", s.Name, name, got)
	}
	if len(s.Data["ca.crt"]) == 0 {
		t.Fatalf("Secret %s holds no ca.crt", s.Name)
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := k.Client.Get(ctx, client.ObjectKey{Name: name}, &vwc); err != nil {
		t.Fatal(err)
	}
	want, err := framework.PEMCertificates(s.Data["ca.crt"])
	if err != nil || len(want) == 0 {
		t.Fatalf("Secret %s: ca.crt: %d certificates, %v", s.Name, len(want), err)
	}
	for _, w := range vwc.Webhooks {
		got, err := framework.PEMCertificates(w.ClientConfig.CABundle)
		if err != nil {
			t.Fatalf("webhook %s: CA bundle: %v", w.Name, err)
		}
		for _, c := range want {
			if !slices.ContainsFunc(got, c.Equal) {
				t.Errorf("webhook %s: the CA bundle (%d certificates) lacks %q of Secret %s's ca.crt", w.Name, len(got), c.Subject, s.Name)
			}
		}
		if extra := len(got) - len(want); extra > 0 {
			// The suites before this one ran the chart in selfSigned mode, whose
			// webhooks keep their CAs in the bundle until their pods are gone.
			t.Logf("webhook %s: the CA bundle also holds %d certificates of the previous mode", w.Name, extra)
		}
	}
	vc := framework.NewValkeyCluster(framework.Namespace(ctx), "reserved", 3, 1)
	vc.Spec.Users = []v1alpha1.UserSpec{{Name: "_mine", NoPass: true}}
	err = k.Client.Create(ctx, vc, client.DryRunAll)
	switch {
	case err == nil:
		t.Fatal("a user named _mine was admitted")
	case !strings.Contains(err.Error(), "admission webhook"):
		t.Errorf("the refusal did not come from the webhook: %v", err)
	case !strings.Contains(err.Error(), "spec.users[0].name"):
		t.Errorf("the refusal does not name spec.users[0].name: %v", err)
	default:
		t.Logf("%d webhooks carry cert-manager's CA; a dry run was refused by the webhook: %v", len(vwc.Webhooks), err)
	}
}
