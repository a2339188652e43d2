package node

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// usesClaim reports whether the node's data lives on a PersistentVolumeClaim.
// Persistence is only supported with StatefulSets (validation refuses the others).
func usesClaim(vn *v1alpha1.ValkeyNode) bool {
	return vn.Spec.Persistence != nil && vn.Spec.WorkloadType == v1alpha1.WorkloadStatefulSet
}

// claimName is the name of the node's claim. The controller creates the claim itself
// (no volumeClaimTemplate), so it can grow it and keep it after the StatefulSet.
func claimName(vn *v1alpha1.ValkeyNode) string { return vn.Name + "-data" }

// buildClaim is the node's claim as the spec asks for it.
func buildClaim(vn *v1alpha1.ValkeyNode) *corev1.PersistentVolumeClaim {
	p := vn.Spec.Persistence
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claimName(vn), Namespace: vn.Namespace, Labels: podLabels(vn)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: p.Size.DeepCopy()}},
		},
	}
	if p.StorageClassName != nil {
		pvc.Spec.StorageClassName = ptr.To(*p.StorageClassName)
	}
	return pvc
}

// ownsClaim reports whether the claim should carry the node's owner reference: only
// with reclaimPolicy Delete, so that Retain keeps the claim when the node is deleted.
func ownsClaim(vn *v1alpha1.ValkeyNode) bool {
	return vn.Spec.Persistence.ReclaimPolicyOrDefault() == v1alpha1.ReclaimDelete
}

// storageState is what StorageReady is computed from.
type storageState struct {
	used bool
	// claim is nil when it does not exist (yet).
	claim *corev1.PersistentVolumeClaim
	// want is the size the spec asks for.
	want resource.Quantity
	// infeasible explains why the claim cannot grow to want ("" when it can).
	infeasible string
	// blocker names why a Pending claim cannot bind (nil: nothing known).
	blocker *blocker
}

// reconcileStorage creates the node's claim, keeps its owner reference in line with
// the reclaim policy, and grows it when the spec asks for more.
func (r *Reconciler) reconcileStorage(ctx context.Context, s *scope) error {
	s.storage = storageState{used: usesClaim(s.node)}
	if !s.storage.used {
		return nil
	}
	s.storage.want = s.node.Spec.Persistence.Size
	if s.claim == nil {
		if s.deleting() {
			return nil
		}
		return r.createClaim(ctx, s)
	}
	s.storage.claim = s.claim
	if err := r.reconcileClaimOwner(ctx, s); err != nil {
		return err
	}
	return r.resizeClaim(ctx, s)
}

// createClaim creates the claim at the spec's size.
func (r *Reconciler) createClaim(ctx context.Context, s *scope) error {
	pvc := buildClaim(s.node)
	if ownsClaim(s.node) {
		if err := controllerutil.SetControllerReference(s.node, pvc, r.Scheme); err != nil {
			return fmt.Errorf("own claim: %w", err)
		}
	}
	if err := r.Create(ctx, pvc, fieldOwner); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache has not seen it yet; the watch brings it
		}
		return fmt.Errorf("create claim %s: %w", pvc.Name, err)
	}
	s.claim, s.storage.claim = pvc, pvc
	r.event(s, pvc, corev1.EventTypeNormal, "ClaimCreated", "CreateClaim",
		fmt.Sprintf("created claim %s of %s", pvc.Name, s.storage.want.String()))
	return nil
}

// reconcileClaimOwner adds or removes the node's owner reference when the reclaim
// policy changed.
func (r *Reconciler) reconcileClaimOwner(ctx context.Context, s *scope) error {
	want, has := ownsClaim(s.node), metav1.IsControlledBy(s.claim, s.node)
	if want == has {
		return nil
	}
	pvc := s.claim.DeepCopy()
	patch := client.MergeFromWithOptions(s.claim, client.MergeFromWithOptimisticLock{})
	if want {
		if err := controllerutil.SetControllerReference(s.node, pvc, r.Scheme); err != nil {
			return fmt.Errorf("own claim: %w", err)
		}
	} else if err := controllerutil.RemoveControllerReference(s.node, pvc, r.Scheme); err != nil {
		return fmt.Errorf("disown claim: %w", err)
	}
	if err := r.Patch(ctx, pvc, patch, fieldOwner); err != nil {
		return fmt.Errorf("update owner of claim %s: %w", pvc.Name, err)
	}
	s.claim, s.storage.claim = pvc, pvc
	return nil
}

// resizeClaim raises the claim's request to the spec's size when the claim is bound
// and its StorageClass allows expansion; otherwise it records why it cannot.
func (r *Reconciler) resizeClaim(ctx context.Context, s *scope) error {
	cur := s.claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if s.storage.want.Cmp(cur) <= 0 || s.claim.Status.Phase != corev1.ClaimBound {
		return nil
	}
	ok, why, err := r.expandable(ctx, s.claim)
	if err != nil {
		return err
	}
	if !ok {
		s.storage.infeasible = fmt.Sprintf("the spec asks for %s but claim %s stays at %s: %s",
			s.storage.want.String(), s.claim.Name, cur.String(), why)
		return nil
	}
	pvc := s.claim.DeepCopy()
	pvc.Spec.Resources.Requests[corev1.ResourceStorage] = s.storage.want.DeepCopy()
	if err := r.Patch(ctx, pvc, client.MergeFrom(s.claim), fieldOwner); err != nil {
		return fmt.Errorf("resize claim %s: %w", pvc.Name, err)
	}
	s.claim, s.storage.claim = pvc, pvc
	r.event(s, pvc, corev1.EventTypeNormal, "ClaimResizing", "ResizeClaim",
		fmt.Sprintf("raised claim %s from %s to %s", pvc.Name, cur.String(), s.storage.want.String()))
	return nil
}

// expandable reports whether the claim's StorageClass allows volume expansion, and
// why not.
func (r *Reconciler) expandable(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (bool, string, error) {
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return false, "the claim has no StorageClass, so it cannot be expanded", nil
	}
	name := *pvc.Spec.StorageClassName
	var sc storagev1.StorageClass
	if err := r.Get(ctx, client.ObjectKey{Name: name}, &sc); err != nil {
		if apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("StorageClass %s does not exist", name), nil
		}
		return false, "", fmt.Errorf("read StorageClass %s: %w", name, err)
	}
	if sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
		return false, fmt.Sprintf("StorageClass %s does not allow volume expansion (allowVolumeExpansion is not true)", name), nil
	}
	return true, "", nil
}

// storageCondition computes StorageReady.
func storageCondition(st storageState, gen int64) metav1.Condition {
	cond := func(ok bool, reason, msg string) metav1.Condition {
		return conditions.New(v1alpha1.ConditionStorageReady, ok, reason, msg, gen)
	}
	if !st.used {
		return cond(true, v1alpha1.ReasonStorageNotUsed, "the node has no persistence: its data directory is an emptyDir")
	}
	pvc := st.claim
	if pvc == nil {
		return cond(false, v1alpha1.ReasonStoragePending, "the claim is being created")
	}
	if st.infeasible != "" {
		return cond(false, v1alpha1.ReasonResizeInfeasible, st.infeasible)
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		if st.blocker != nil {
			return cond(false, st.blocker.reason, st.blocker.message)
		}
		return cond(false, v1alpha1.ReasonStoragePending, fmt.Sprintf("claim %s is %s", pvc.Name, phaseOr(pvc.Status.Phase)))
	}
	if msg := resizeRefused(pvc); msg != "" {
		return cond(false, v1alpha1.ReasonResizeInfeasible, msg)
	}
	req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := pvc.Status.Capacity[corev1.ResourceStorage]
	if capacity.Cmp(req) < 0 {
		return cond(false, v1alpha1.ReasonStorageResizing, fmt.Sprintf("claim %s grows from %s to %s%s",
			pvc.Name, capacity.String(), req.String(), resizeStep(pvc)))
	}
	return cond(true, v1alpha1.ReasonStorageBound, fmt.Sprintf("claim %s is bound with %s", pvc.Name, capacity.String()))
}

// phaseOr names a claim phase, Pending when unset.
func phaseOr(p corev1.PersistentVolumeClaimPhase) corev1.PersistentVolumeClaimPhase {
	if p == "" {
		return corev1.ClaimPending
	}
	return p
}

// resizeRefused returns the reason a volume driver gave up resizing, or "".
func resizeRefused(pvc *corev1.PersistentVolumeClaim) string {
	switch pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] {
	case corev1.PersistentVolumeClaimControllerResizeInfeasible, corev1.PersistentVolumeClaimNodeResizeInfeasible:
		for _, c := range pvc.Status.Conditions {
			if c.Message != "" && (c.Type == corev1.PersistentVolumeClaimControllerResizeError || c.Type == corev1.PersistentVolumeClaimNodeResizeError) {
				return fmt.Sprintf("the volume driver cannot resize claim %s: %s", pvc.Name, c.Message)
			}
		}
		return fmt.Sprintf("the volume driver cannot resize claim %s", pvc.Name)
	}
	return ""
}

// resizeStep describes the resize step a claim waits for, from its conditions.
func resizeStep(pvc *corev1.PersistentVolumeClaim) string {
	for _, c := range pvc.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case corev1.PersistentVolumeClaimFileSystemResizePending:
			return " (the volume grew; its file system grows when the node mounts it)"
		case corev1.PersistentVolumeClaimResizing:
			return " (the volume driver is resizing it)"
		}
	}
	return ""
}
