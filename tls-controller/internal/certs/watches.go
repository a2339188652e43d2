package certs

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/membership"
)

// Field indexes of the manager's cache.
const (
	// indexCertificateSecret indexes ValkeyClusters by spec.tls.certificate.secretName.
	indexCertificateSecret = "spec.tls.certificate.secretName"
)

// addIndexes registers the field indexes the controller lists with.
func addIndexes(ctx context.Context, mgr manager.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.ValkeyCluster{}, indexCertificateSecret, certificateSecretName); err != nil {
		return fmt.Errorf("index ValkeyClusters by certificate Secret: %w", err)
	}
	return membership.AddIndex(ctx, idx)
}

// certificateSecretName is the certificate Secret a cluster names, if any.
func certificateSecretName(o client.Object) []string {
	vc := o.(*v1alpha1.ValkeyCluster)
	if vc.Spec.TLS == nil || vc.Spec.TLS.Certificate.SecretName == "" {
		return nil
	}
	return []string{vc.Spec.TLS.Certificate.SecretName}
}

// clustersOfSecret maps a Secret to the clusters it matters to: those naming it as
// their certificate Secret, and the cluster whose copy or system users' Secret it is.
func (r *Reconciler) clustersOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	var list v1alpha1.ValkeyClusterList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{indexCertificateSecret: o.GetName()}); err == nil {
		for _, vc := range list.Items {
			out = append(out, request(vc.Namespace, vc.Name))
		}
	}
	labels := o.GetLabels()
	if cluster := labels[v1alpha1.LabelInstance]; cluster != "" && labels[v1alpha1.LabelManagedBy] == v1alpha1.ManagedBy &&
		(o.GetName() == v1alpha1.TLSSecretName(cluster) || o.GetName() == v1alpha1.SystemUsersSecretName(cluster)) {
		out = append(out, request(o.GetNamespace(), cluster))
	}
	return out
}

func request(namespace, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}
}

// clusterChanged passes the cluster events that matter: a cluster with TLS (or with
// TLS status left over) appears, or its spec changes.
func clusterChanged() predicate.Predicate {
	relevant := func(o client.Object) bool {
		vc, ok := o.(*v1alpha1.ValkeyCluster)
		return ok && (vc.Spec.TLS != nil || hasOwnedStatus(vc))
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return relevant(e.Object) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return relevant(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() && (relevant(e.ObjectOld) || relevant(e.ObjectNew))
		},
	}
}

// nodeChanged passes the member changes that matter to the certificate: a member
// appears or goes, its pod IP or mounted Secret changes, or its pod restarts (PodReady
// flips).
func nodeChanged() predicate.Predicate {
	return membership.Changed(func(a, b *v1alpha1.ValkeyNode) bool {
		return a.Spec.TLSSecretName != b.Spec.TLSSecretName
	})
}
