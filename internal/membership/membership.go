// Package membership is how the controllers that act on every member of a cluster (the acl-
// and tls-controllers) find a cluster's ValkeyNodes and hear about the changes of theirs
// that matter: one field index, one mapping from a member to its cluster, one predicate.
package membership

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// IndexClusterName indexes ValkeyNodes by spec.clusterName in a manager's cache.
const IndexClusterName = "spec.clusterName"

// AddIndex registers IndexClusterName.
func AddIndex(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &v1alpha1.ValkeyNode{}, IndexClusterName, func(o client.Object) []string {
		return []string{o.(*v1alpha1.ValkeyNode).Spec.ClusterName}
	}); err != nil {
		return fmt.Errorf("index ValkeyNodes by cluster: %w", err)
	}
	return nil
}

// List returns the members of a cluster, through IndexClusterName.
func List(ctx context.Context, c client.Reader, vc *v1alpha1.ValkeyCluster) ([]v1alpha1.ValkeyNode, error) {
	var list v1alpha1.ValkeyNodeList
	if err := c.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingFields{IndexClusterName: vc.Name}); err != nil {
		return nil, fmt.Errorf("list ValkeyNodes of %s: %w", vc.Name, err)
	}
	return list.Items, nil
}

// ClusterOf maps a ValkeyNode to its cluster.
func ClusterOf(_ context.Context, o client.Object) []reconcile.Request {
	vn, ok := o.(*v1alpha1.ValkeyNode)
	if !ok || vn.Spec.ClusterName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: vn.Namespace, Name: vn.Spec.ClusterName}}}
}

// Changed passes the member updates that every such controller acts on: the pod IP
// changes, or the pod restarts (PodReady flips), and those that also reports.
// Creations and deletions always pass.
func Changed(also func(before, after *v1alpha1.ValkeyNode) bool) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, ok1 := e.ObjectOld.(*v1alpha1.ValkeyNode)
			b, ok2 := e.ObjectNew.(*v1alpha1.ValkeyNode)
			if !ok1 || !ok2 {
				return false
			}
			return a.Status.PodIP != b.Status.PodIP ||
				conditions.IsTrue(a.Status.Conditions, v1alpha1.ConditionPodReady) != conditions.IsTrue(b.Status.Conditions, v1alpha1.ConditionPodReady) ||
				(also != nil && also(a, b))
		},
	}
}
