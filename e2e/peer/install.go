package peer

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// fieldOwner is the field manager of the objects Install applies.
const fieldOwner = "e2e-peer"

// Install applies the manifest's objects (server-side apply, so a leftover of an
// interrupted run is taken over), waits until its CRDs are established and its manager
// is available, and returns how long that took.
func Install(ctx context.Context, c client.Client, m Manifest, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	for _, o := range m.Objects {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return 0, fmt.Errorf("install the peer: apply %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	for _, o := range m.Objects {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(o.GroupVersionKind())
		crd.SetName(o.GetName())
		if err := framework.WaitFor(ctx, c, crd, timeout, "CRD "+o.GetName()+" established", established); err != nil {
			return 0, fmt.Errorf("install the peer: %w", err)
		}
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Deployment}}
	if err := framework.WaitFor(ctx, c, d, timeout, "the peer's manager available", available); err != nil {
		return 0, fmt.Errorf("install the peer: %w", err)
	}
	return time.Since(start), nil
}

// established is a WaitFor condition: the CRD's Established condition is True.
func established(u *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] == "Established" {
			return cm["status"] == "True", fmt.Sprintf("Established=%v", cm["status"])
		}
	}
	return false, "no Established condition yet"
}

// available is a WaitFor condition: every replica of the current generation is available.
func available(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.AvailableReplicas == want,
		fmt.Sprintf("updated %d, available %d of %d", st.UpdatedReplicas, st.AvailableReplicas, want)
}

// Remove deletes the manifest's objects, the last applied first (the manager before its
// RBAC, its namespace, and the CRDs with any ValkeyCluster of the peer still there), and
// waits until each is gone.
func Remove(ctx context.Context, c client.Client, m Manifest, timeout time.Duration) error {
	objs := slices.Clone(m.Objects)
	slices.Reverse(objs)
	bg := metav1.DeletePropagationBackground
	for _, o := range objs {
		if err := c.Delete(ctx, o.DeepCopy(), &client.DeleteOptions{PropagationPolicy: &bg}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("remove the peer: delete %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	for _, o := range objs {
		if err := framework.WaitForDeletion(ctx, c, o.DeepCopy(), timeout); err != nil {
			return fmt.Errorf("remove the peer: %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}
