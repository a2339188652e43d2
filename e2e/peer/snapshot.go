package peer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// State is what an operator's install and removal leave at cluster scope, by kind: the
// sorted names of each kind's objects that are not being deleted.
type State map[string][]string

// snapshotKinds are the kinds a State lists.
var snapshotKinds = []schema.GroupVersionKind{
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
	{Version: "v1", Kind: "Namespace"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"},
}

// Snapshot lists the objects of every kind of snapshotKinds (metadata only). Objects
// being deleted are left out: a namespace an earlier step deleted may still be going.
func Snapshot(ctx context.Context, c client.Client) (State, error) {
	s := State{}
	for _, gvk := range snapshotKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list); err != nil {
			return nil, fmt.Errorf("list %ss: %w", gvk.Kind, err)
		}
		names := []string{}
		for _, o := range list.Items {
			if o.DeletionTimestamp == nil {
				names = append(names, o.Name)
			}
		}
		slices.Sort(names)
		s[gvk.Kind] = names
	}
	return s, nil
}

// Diff lists, by kind, the names after has that s lacks and those s has that after lacks,
// one line per kind that differs; none when both are equal.
func (s State) Diff(after State) []string {
	var out []string
	for _, kind := range unionKeys(s, after) {
		added, removed := difference(after[kind], s[kind]), difference(s[kind], after[kind])
		var parts []string
		if len(added) > 0 {
			parts = append(parts, "added "+strings.Join(added, ", "))
		}
		if len(removed) > 0 {
			parts = append(parts, "removed "+strings.Join(removed, ", "))
		}
		if len(parts) > 0 {
			out = append(out, kind+": "+strings.Join(parts, "; "))
		}
	}
	return out
}

// String counts the names by kind ("CustomResourceDefinition 4, Namespace 9, ...").
func (s State) String() string {
	var parts []string
	for _, kind := range unionKeys(s, nil) {
		parts = append(parts, fmt.Sprintf("%s %d", kind, len(s[kind])))
	}
	return strings.Join(parts, ", ")
}

// difference is the names of a not in b, in a's order.
func difference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// unionKeys is the sorted kinds of a and b.
func unionKeys(a, b State) []string {
	var keys []string
	for _, m := range []State{a, b} {
		for k := range m {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}
