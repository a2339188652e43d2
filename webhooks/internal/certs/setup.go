// Package certs gives the webhook server its serving certificate in self-signed mode:
// a Rotator (leader only) keeps a CA and a serving certificate in a Secret and the CA
// in the webhook configuration's caBundle; a Keeper (every replica) serves the
// certificate from that Secret.
package certs

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// The rules below are rendered by the chart (hack/generate.sh) with the names it gives
// the Secret and the webhook configuration: the webhooks read and write those two
// objects only (list and watch are allowed by name because the cache selects the one
// object by metadata.name). Creating cannot be limited to a name.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;update,resourceNames=valkey-operator-webhooks-cert,namespace=operator
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create,namespace=operator
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=list;watch;patch,resourceNames=valkey-operator-webhooks

// Options name what self-signed mode manages.
type Options struct {
	// Secret holds the CA and the serving certificate.
	Secret types.NamespacedName
	// WebhookConfiguration is the ValidatingWebhookConfiguration whose caBundle is set.
	WebhookConfiguration string
	// Issuer describes the certificates.
	Issuer Issuer
}

// CacheOptions restricts the manager's cache to the one Secret and the one webhook
// configuration self-signed mode reads, so it needs no wider access.
func CacheOptions(o Options) cache.Options {
	byObject := map[client.Object]cache.ByObject{
		&corev1.Secret{}: {
			Namespaces: map[string]cache.Config{o.Secret.Namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", o.Secret.Name),
		},
	}
	if o.WebhookConfiguration != "" {
		byObject[&admissionregistrationv1.ValidatingWebhookConfiguration{}] = cache.ByObject{
			Field: fields.OneTermEqualSelector("metadata.name", o.WebhookConfiguration),
		}
	}
	return cache.Options{ByObject: byObject}
}

// Setup adds the rotator (leader only) and the keeper (every replica) to the manager.
// The keeper may be given to the webhook server (GetCertificate) before Setup runs;
// until it loads a certificate, TLS handshakes fail and readiness stays false.
func Setup(mgr ctrl.Manager, o Options, keeper *Keeper) error {
	rotator := &Rotator{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(),
		Secret: o.Secret, WebhookConfiguration: o.WebhookConfiguration, Issuer: o.Issuer,
	}
	request := reconcile.Request{NamespacedName: o.Secret}
	b := ctrl.NewControllerManagedBy(mgr).Named("webhook-cert-rotator").
		WatchesRawSource(secretSource(mgr, o.Secret, request)).
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(request) // the Secret may not exist yet: run once at start
			return nil
		}))
	if o.WebhookConfiguration != "" {
		b = b.WatchesRawSource(source.Kind(mgr.GetCache(), &admissionregistrationv1.ValidatingWebhookConfiguration{},
			fixedRequest[*admissionregistrationv1.ValidatingWebhookConfiguration](request),
			named[*admissionregistrationv1.ValidatingWebhookConfiguration](types.NamespacedName{Name: o.WebhookConfiguration})))
	}
	if err := b.Complete(rotator); err != nil {
		return fmt.Errorf("set up the certificate rotator: %w", err)
	}
	keeper.Client, keeper.Secret = mgr.GetClient(), o.Secret
	err := ctrl.NewControllerManagedBy(mgr).Named("webhook-cert-loader").
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)}).
		WatchesRawSource(secretSource(mgr, o.Secret, request)).
		Complete(keeper)
	if err != nil {
		return fmt.Errorf("set up the certificate loader: %w", err)
	}
	return nil
}

// secretSource watches the one Secret.
func secretSource(mgr ctrl.Manager, key types.NamespacedName, request reconcile.Request) source.Source {
	return source.Kind(mgr.GetCache(), &corev1.Secret{}, fixedRequest[*corev1.Secret](request), named[*corev1.Secret](key))
}

// fixedRequest maps every event to the same request.
func fixedRequest[T client.Object](request reconcile.Request) handler.TypedEventHandler[T, reconcile.Request] {
	return handler.TypedEnqueueRequestsFromMapFunc(func(context.Context, T) []reconcile.Request {
		return []reconcile.Request{request}
	})
}

// named lets through the events of one object.
func named[T client.Object](key types.NamespacedName) predicate.TypedPredicate[T] {
	return predicate.NewTypedPredicateFuncs(func(o T) bool {
		return o.GetName() == key.Name && o.GetNamespace() == key.Namespace
	})
}
