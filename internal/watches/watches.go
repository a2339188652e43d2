// Package watches holds the watch plumbing the controllers share: how a change of a Secret
// reaches the ValkeyClusters that read it.
package watches

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// SecretRefs indexes ValkeyClusters in a manager's cache by the Secrets their spec names
// (users' passwords, the certificate), so that a Secret's change reaches exactly the
// clusters that read it.
type SecretRefs struct {
	// Index is the name of the field index.
	Index string
	// Names lists the Secrets a cluster names.
	Names func(*v1alpha1.ValkeyCluster) []string
}

// Register adds the index to the cache.
func (s SecretRefs) Register(ctx context.Context, idx client.FieldIndexer) error {
	err := idx.IndexField(ctx, &v1alpha1.ValkeyCluster{}, s.Index, func(o client.Object) []string {
		var out []string
		for _, n := range s.Names(o.(*v1alpha1.ValkeyCluster)) {
			if n != "" && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		return out
	})
	if err != nil {
		return fmt.Errorf("index ValkeyClusters by %s: %w", s.Index, err)
	}
	return nil
}

// Clusters maps a Secret to the clusters of its namespace that name it.
func (s SecretRefs) Clusters(ctx context.Context, c client.Reader, secret client.Object) []reconcile.Request {
	var list v1alpha1.ValkeyClusterList
	if err := c.List(ctx, &list, client.InNamespace(secret.GetNamespace()), client.MatchingFields{s.Index: secret.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, vc := range list.Items {
		out = append(out, Request(vc.Namespace, vc.Name))
	}
	return out
}

// OperatorSecretOf maps a Secret the operator made for a cluster (labelled with the
// cluster and managed-by the operator, and named as one of names gives for that cluster)
// to that cluster.
func OperatorSecretOf(secret client.Object, names ...func(cluster string) string) []reconcile.Request {
	l := secret.GetLabels()
	cluster := l[v1alpha1.LabelInstance]
	if cluster == "" || l[v1alpha1.LabelManagedBy] != v1alpha1.ManagedBy {
		return nil
	}
	for _, name := range names {
		if secret.GetName() == name(cluster) {
			return []reconcile.Request{Request(secret.GetNamespace(), cluster)}
		}
	}
	return nil
}

// Request is the reconcile request of a cluster.
func Request(namespace, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}
}

// PausedChanged passes the updates of a ValkeyCluster whose Paused condition (written by
// the cluster-controller) turns True or stops being True: a controller that holds its
// rollout while a cluster is paused resumes it from this watch, not from a requeue.
func PausedChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, ok1 := e.ObjectOld.(*v1alpha1.ValkeyCluster)
			b, ok2 := e.ObjectNew.(*v1alpha1.ValkeyCluster)
			return ok1 && ok2 && v1alpha1.Paused(a) != v1alpha1.Paused(b)
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
