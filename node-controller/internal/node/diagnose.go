package node

import (
	"context"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list
// +kubebuilder:rbac:groups="",resources=events,verbs=list

// blocker is why a member's pod does not exist although its workload does, or why its
// claim stays Pending: what a user must fix, named.
type blocker struct {
	reason, message string
}

// defaultClassAnnotation marks the cluster's default StorageClass.
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// diagnose looks for the cause of a member that cannot start, only when it cannot: a
// missing PriorityClass or StorageClass, or the workload controller's refusal to create
// the pod. It reads the API server directly (these are rare reads of objects the
// controller does not cache).
func (r *Reconciler) diagnose(ctx context.Context, s *scope) error {
	if s.claim != nil && s.claim.Status.Phase != corev1.ClaimBound {
		b, err := r.storageBlocker(ctx, s.claim)
		if err != nil {
			return err
		}
		s.storage.blocker = b
	}
	if s.pod != nil || s.deleting() {
		return nil
	}
	b, err := r.podBlocker(ctx, s)
	if err != nil {
		return err
	}
	s.podBlocker = b
	return nil
}

// storageBlocker names a StorageClass that does not exist, or the lack of a default one.
func (r *Reconciler) storageBlocker(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (*blocker, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	if name := pvc.Spec.StorageClassName; name != nil && *name != "" {
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: *name}, &storagev1.StorageClass{})
		switch {
		case apierrors.IsNotFound(err):
			return &blocker{v1alpha1.ReasonStorageClassNotFound, fmt.Sprintf(
				"StorageClass %s not found: the claim stays Pending until it exists (spec.persistence.storageClassName)", *name)}, nil
		case err != nil:
			return nil, fmt.Errorf("read StorageClass %s: %w", *name, err)
		}
		return nil, nil
	}
	var list storagev1.StorageClassList
	if err := r.APIReader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list StorageClasses: %w", err)
	}
	for _, sc := range list.Items {
		if sc.Annotations[defaultClassAnnotation] == "true" {
			return nil, nil
		}
	}
	return &blocker{v1alpha1.ReasonStorageClassNotFound,
		"no StorageClass is named and the cluster has no default one: the claim stays Pending (set spec.persistence.storageClassName)"}, nil
}

// podBlocker names what keeps the workload from creating the member's pod.
func (r *Reconciler) podBlocker(ctx context.Context, s *scope) (*blocker, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	if sc := s.node.Spec.Scheduling; sc != nil && sc.PriorityClassName != "" {
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: sc.PriorityClassName}, &schedulingv1.PriorityClass{})
		switch {
		case apierrors.IsNotFound(err):
			return &blocker{v1alpha1.ReasonPriorityClassNotFound, fmt.Sprintf(
				"PriorityClass %s not found: the pod cannot be created until it exists (spec.scheduling.priorityClassName)", sc.PriorityClassName)}, nil
		case err != nil:
			return nil, fmt.Errorf("read PriorityClass %s: %w", sc.PriorityClassName, err)
		}
	}
	switch {
	case s.deployment != nil:
		for _, c := range s.deployment.Status.Conditions {
			if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
				return &blocker{v1alpha1.ReasonFailedCreate, "the pod cannot be created: " + c.Message}, nil
			}
		}
	case s.statefulSet != nil:
		return r.failedCreate(ctx, s.statefulSet.Namespace, "StatefulSet", s.statefulSet.Name)
	}
	return nil, nil
}

// eventPage bounds the events one list reads.
const eventPage = 100

// failedCreate returns the newest FailedCreate warning of a workload, if any.
func (r *Reconciler) failedCreate(ctx context.Context, ns, kind, name string) (*blocker, error) {
	var list corev1.EventList
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name, "reason": "FailedCreate"}.AsSelector()
	// One page at most: anyone who may create events in the namespace decides how many
	// match; the workload controller's own warnings are few (it counts repeats).
	if err := r.APIReader.List(ctx, &list, client.InNamespace(ns), client.MatchingFieldsSelector{Selector: sel},
		client.Limit(eventPage)); err != nil {
		return nil, fmt.Errorf("list the events of %s %s: %w", kind, name, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	sort.Slice(list.Items, func(i, j int) bool { return eventTime(list.Items[i]).Before(eventTime(list.Items[j])) })
	return &blocker{v1alpha1.ReasonFailedCreate, "the pod cannot be created: " + list.Items[len(list.Items)-1].Message}, nil
}

// eventTime is when an event last happened, whichever time field its source set.
func eventTime(e corev1.Event) time.Time {
	for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time, e.CreationTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}
