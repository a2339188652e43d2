package publish

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/membership"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/watches"
)

// Watches are what starts a pass of a controller in the frame.
type Watches struct {
	// Name is the controller's name.
	Name string
	// Cluster passes the cluster events that start a pass; a change of the Paused
	// condition always does.
	Cluster predicate.Predicate
	// SecretRefs index the clusters by the users' Secrets they name: a change of one
	// starts a pass of those clusters.
	SecretRefs watches.SecretRefs
	// OperatorSecrets name the operator's Secrets of a cluster whose changes start a
	// pass, seen through the watch of Secret names.
	OperatorSecrets []func(cluster string) string
	// Owns are the kinds of objects the controller creates for a cluster (controlled by
	// it), watched as metadata.
	Owns []client.Object
	// Member passes the member changes that matter besides those every such
	// controller acts on (membership.Changed).
	Member func(before, after *v1alpha1.ValkeyNode) bool
	// Sources are further sources of the controller's requests (a watch the controller
	// starts itself, once the API it watches exists).
	Sources []source.Source
}

// SetupWithManager registers the controller, its field index and its watches. Users'
// Secrets are watched by name only (operator.SecretNames), in no cache.
func (f *Frame[S]) SetupWithManager(ctx context.Context, mgr manager.Manager, maxConcurrent int) error {
	w := f.Watches
	if err := w.SecretRefs.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	secrets, err := operator.SecretNames(mgr, f.Namespaces, handler.TypedEnqueueRequestsFromMapFunc(
		func(ctx context.Context, o *metav1.PartialObjectMetadata) []reconcile.Request {
			return append(w.SecretRefs.Clusters(ctx, f.Client, o), watches.OperatorSecretOf(o, w.OperatorSecrets...)...)
		}))
	if err != nil {
		return err
	}
	b := builder.ControllerManagedBy(mgr).
		Named(w.Name).
		For(&v1alpha1.ValkeyCluster{}, builder.WithPredicates(predicate.Or(w.Cluster, watches.PausedChanged())))
	for _, o := range w.Owns {
		b = b.Owns(o, builder.OnlyMetadata)
	}
	for _, src := range w.Sources {
		b = b.WatchesRawSource(src)
	}
	return b.WatchesRawSource(secrets).
		Watches(&v1alpha1.ValkeyNode{}, handler.EnqueueRequestsFromMapFunc(membership.ClusterOf),
			builder.WithPredicates(membership.Changed(w.Member))).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(f)
}
