package acl

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/membership"
)

// Field indexes of the manager's cache.
const (
	// indexPasswordSecrets indexes ValkeyClusters by the names of their users'
	// password Secrets.
	indexPasswordSecrets = "spec.users.passwordSecret.name"
)

// addIndexes registers the field indexes the controller lists with.
func addIndexes(ctx context.Context, mgr manager.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.ValkeyCluster{}, indexPasswordSecrets, passwordSecretNames); err != nil {
		return fmt.Errorf("index ValkeyClusters by password Secret: %w", err)
	}
	return membership.AddIndex(ctx, idx)
}

// passwordSecretNames lists the password Secrets a cluster's users reference.
func passwordSecretNames(o client.Object) []string {
	vc := o.(*v1alpha1.ValkeyCluster)
	var out []string
	for _, u := range vc.Spec.Users {
		if u.PasswordSecret != nil && u.PasswordSecret.Name != "" && !slices.Contains(out, u.PasswordSecret.Name) {
			out = append(out, u.PasswordSecret.Name)
		}
	}
	return out
}

// clustersOfSecret maps a Secret to the clusters whose users reference it.
func (r *Reconciler) clustersOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.ValkeyClusterList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{indexPasswordSecrets: o.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, vc := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: vc.Namespace, Name: vc.Name}})
	}
	return out
}

// nodeChanged passes the member changes that matter to the ACL: a member appears or
// goes, its pod IP or server version changes, or its pod restarts (PodReady flips).
func nodeChanged() predicate.Predicate {
	return membership.Changed(func(a, b *v1alpha1.ValkeyNode) bool {
		return a.Status.Version != b.Status.Version
	})
}
