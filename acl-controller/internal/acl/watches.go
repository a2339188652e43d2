package acl

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// Field indexes of the manager's cache.
const (
	// indexPasswordSecrets indexes ValkeyClusters by the names of their users'
	// password Secrets.
	indexPasswordSecrets = "spec.users.passwordSecret.name"
	// indexClusterName indexes ValkeyNodes by spec.clusterName.
	indexClusterName = "spec.clusterName"
)

// addIndexes registers the field indexes the controller lists with.
func addIndexes(ctx context.Context, mgr manager.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.ValkeyCluster{}, indexPasswordSecrets, passwordSecretNames); err != nil {
		return fmt.Errorf("index ValkeyClusters by password Secret: %w", err)
	}
	if err := idx.IndexField(ctx, &v1alpha1.ValkeyNode{}, indexClusterName, func(o client.Object) []string {
		return []string{o.(*v1alpha1.ValkeyNode).Spec.ClusterName}
	}); err != nil {
		return fmt.Errorf("index ValkeyNodes by cluster: %w", err)
	}
	return nil
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

// clusterOfNode maps a ValkeyNode to its cluster.
func clusterOfNode(_ context.Context, o client.Object) []reconcile.Request {
	vn := o.(*v1alpha1.ValkeyNode)
	if vn.Spec.ClusterName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: vn.Namespace, Name: vn.Spec.ClusterName}}}
}

// nodeChanged passes the member changes that matter to the ACL: a member appears or
// goes, its pod IP or server version changes, or its pod restarts (PodReady flips).
func nodeChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, ok1 := e.ObjectOld.(*v1alpha1.ValkeyNode)
			b, ok2 := e.ObjectNew.(*v1alpha1.ValkeyNode)
			if !ok1 || !ok2 {
				return false
			}
			return a.Status.PodIP != b.Status.PodIP || a.Status.Version != b.Status.Version ||
				conditions.IsTrue(a.Status.Conditions, v1alpha1.ConditionPodReady) != conditions.IsTrue(b.Status.Conditions, v1alpha1.ConditionPodReady)
		},
	}
}

// listNodes returns the cluster's members.
func (r *Reconciler) listNodes(ctx context.Context, vc *v1alpha1.ValkeyCluster) ([]v1alpha1.ValkeyNode, error) {
	var list v1alpha1.ValkeyNodeList
	if err := r.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingFields{indexClusterName: vc.Name}); err != nil {
		return nil, fmt.Errorf("list ValkeyNodes of %s: %w", vc.Name, err)
	}
	return list.Items, nil
}
