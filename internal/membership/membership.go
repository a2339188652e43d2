// Package membership is the one definition of who is a member of a cluster, used by every
// controller that acts on a cluster's ValkeyNodes: how to list them (Of), how a member
// maps to its cluster (ClusterOf), and which member changes matter (Changed).
package membership

import (
	"context"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// Of returns the members of a cluster, oldest first: the ValkeyNodes labelled with its
// name that it controls (an owner reference with its UID). The label selects them in a
// cache or on the API server alike; the owner reference keeps out a ValkeyNode that
// only carries the labels, and the members of an earlier cluster of the same name.
func Of(ctx context.Context, c client.Reader, vc *v1alpha1.ValkeyCluster) ([]v1alpha1.ValkeyNode, error) {
	list, err := Labelled(ctx, c, client.ObjectKeyFromObject(vc))
	if err != nil {
		return nil, err
	}
	out := list[:0]
	for _, vn := range list {
		if metav1.IsControlledBy(&vn, vc) {
			out = append(out, vn)
		}
	}
	return out, nil
}

// Labelled returns the ValkeyNodes labelled for the cluster named key, whoever owns
// them, oldest first: once a cluster is gone, what is left of its members.
func Labelled(ctx context.Context, c client.Reader, key client.ObjectKey) ([]v1alpha1.ValkeyNode, error) {
	var list v1alpha1.ValkeyNodeList
	if err := c.List(ctx, &list, client.InNamespace(key.Namespace), client.MatchingLabels(v1alpha1.ClusterLabels(key.Name))); err != nil {
		return nil, fmt.Errorf("list the members of %s: %w", key.Name, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return Older(&list.Items[i], &list.Items[j]) })
	return list.Items, nil
}

// Older orders members by creation, then by name.
func Older(a, b *v1alpha1.ValkeyNode) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// ClusterOf maps a ValkeyNode to its cluster (also after the cluster is gone: its members
// must then be let go).
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
