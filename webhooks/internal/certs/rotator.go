package certs

import (
	"bytes"
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Rotator keeps a self-signed CA and a serving certificate in a Secret, renews each at
// RenewAtFraction of its lifetime, and writes the CA into the caBundle of every
// webhook of a ValidatingWebhookConfiguration. Run it on the leader only; every
// replica serves the certificate through a Keeper.
type Rotator struct {
	// Client reads the webhook configuration and writes both objects.
	Client client.Client
	// Reader reads the Secret; use an uncached reader, so that a Secret just written
	// is never mistaken for a missing one (Client when nil).
	Reader client.Reader
	// Secret names the Secret holding the bundle.
	Secret types.NamespacedName
	// WebhookConfiguration is the name of the ValidatingWebhookConfiguration to patch.
	WebhookConfiguration string
	// Issuer describes the certificates.
	Issuer Issuer
	// Clock returns the current time (time.Now when nil).
	Clock func() time.Time
}

// Reconcile brings the Secret and the caBundle in line, then asks to run again when
// the next certificate is due. The caBundle is patched before the Secret is written,
// so that during a CA rotation the servers' new certificate is trusted before any
// server presents it.
func (r *Rotator) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	now := r.now()
	secret, err := r.getSecret(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	var current *Bundle
	if secret != nil {
		current = BundleFromData(secret.Data)
	}
	bundle, changed, err := r.Issuer.Plan(current, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.injectCABundle(ctx, bundle.TrustPEM()); err != nil {
		return reconcile.Result{}, err
	}
	if changed {
		if err := r.writeSecret(ctx, secret, bundle); err != nil {
			return reconcile.Result{}, err
		}
		log.FromContext(ctx).Info("issued webhook certificates", "secret", r.Secret,
			"servingNotAfter", bundle.Serving.Cert.NotAfter, "caNotAfter", bundle.CA.Cert.NotAfter)
	}
	return reconcile.Result{RequeueAfter: max(bundle.NextRenewal().Sub(now), time.Second)}, nil
}

// now returns the rotator's clock.
func (r *Rotator) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock()
}

// getSecret reads the Secret; it returns nil when the Secret does not exist.
func (r *Rotator) getSecret(ctx context.Context) (*corev1.Secret, error) {
	reader := r.Reader
	if reader == nil {
		reader = r.Client
	}
	secret := &corev1.Secret{}
	err := reader.Get(ctx, r.Secret, secret)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get secret %s: %w", r.Secret, err)
	}
	return secret, nil
}

// writeSecret creates the Secret, or updates it (optimistically: a conflict means
// another writer was first, and the next pass sees its result).
func (r *Rotator) writeSecret(ctx context.Context, secret *corev1.Secret, bundle *Bundle) error {
	if secret == nil {
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.Secret.Namespace, Name: r.Secret.Name},
			Type:       corev1.SecretTypeTLS,
			Data:       bundle.Data(),
		}
		if err := r.Client.Create(ctx, secret); err != nil {
			return fmt.Errorf("create secret %s: %w", r.Secret, err)
		}
		return nil
	}
	secret = secret.DeepCopy()
	secret.Data = bundle.Data()
	if err := r.Client.Update(ctx, secret); err != nil {
		return fmt.Errorf("update secret %s: %w", r.Secret, err)
	}
	return nil
}

// injectCABundle sets caBundle on every webhook of the configuration. A missing
// configuration is not an error: the watch on it runs this again once it exists.
func (r *Rotator) injectCABundle(ctx context.Context, trust []byte) error {
	if r.WebhookConfiguration == "" {
		return nil
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	err := r.Client.Get(ctx, types.NamespacedName{Name: r.WebhookConfiguration}, cfg)
	if apierrors.IsNotFound(err) {
		log.FromContext(ctx).Info("webhook configuration not found; caBundle not set yet",
			"validatingWebhookConfiguration", r.WebhookConfiguration)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get validating webhook configuration %s: %w", r.WebhookConfiguration, err)
	}
	// Only the CA bundle is ours: the chart owns everything else of the configuration
	// (failurePolicy among it), so a helm upgrade or a GitOps sync never fights us.
	patched := cfg.DeepCopy()
	for i := range patched.Webhooks {
		patched.Webhooks[i].ClientConfig.CABundle = trust
	}
	if sameCABundles(cfg, patched) {
		return nil
	}
	patch := client.MergeFromWithOptions(cfg, client.MergeFromWithOptimisticLock{})
	if err := r.Client.Patch(ctx, patched, patch); err != nil {
		return fmt.Errorf("patch caBundle of validating webhook configuration %s: %w", r.WebhookConfiguration, err)
	}
	log.FromContext(ctx).Info("set caBundle", "validatingWebhookConfiguration", r.WebhookConfiguration)
	return nil
}

// sameCABundles reports whether two versions of a configuration trust the same CAs.
func sameCABundles(a, b *admissionregistrationv1.ValidatingWebhookConfiguration) bool {
	for i := range a.Webhooks {
		if !bytes.Equal(a.Webhooks[i].ClientConfig.CABundle, b.Webhooks[i].ClientConfig.CABundle) {
			return false
		}
	}
	return true
}
