package cluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
)

// busPortOffset is how far above its client port a server's cluster bus listens.
const busPortOffset = 10000

const busPort = valkeyconn.Port + busPortOffset

// ownerRef is the controller reference every object of a cluster carries.
func ownerRef(vc *v1alpha1.ValkeyCluster) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(v1alpha1.GroupVersion.String()).WithKind("ValkeyCluster").
		WithName(vc.Name).WithUID(vc.UID).WithController(true).WithBlockOwnerDeletion(true)
}

// reconcileServices keeps the headless Service of the members (stable DNS names for
// each pod, published before the pods are ready) and the client Service.
func (r *Reconciler) reconcileServices(ctx context.Context, s *scope) (time.Duration, error) {
	vc := s.VC
	selector := v1alpha1.ClusterLabels(vc.Name)
	headless := corev1ac.Service(v1alpha1.HeadlessServiceName(vc.Name), vc.Namespace).
		WithLabels(v1alpha1.ClusterLabels(vc.Name)).WithOwnerReferences(ownerRef(vc)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(selector).
			WithPorts(
				corev1ac.ServicePort().WithName("client").WithPort(valkeyconn.Port).WithTargetPort(intstr.FromString("client")),
				corev1ac.ServicePort().WithName("bus").WithPort(busPort).WithTargetPort(intstr.FromString("bus")),
			))
	clientSvc := corev1ac.Service(v1alpha1.ClientServiceName(vc.Name), vc.Namespace).
		WithLabels(v1alpha1.ClusterLabels(vc.Name)).WithOwnerReferences(ownerRef(vc)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(selector).
			WithPorts(corev1ac.ServicePort().WithName("client").WithPort(valkeyconn.Port).WithTargetPort(intstr.FromString("client"))))
	for _, svc := range []*corev1ac.ServiceApplyConfiguration{headless, clientSvc} {
		if err := r.applyIfChanged(ctx, vc, &corev1.Service{}, *svc.Name, svc, func(o client.Object) bool {
			return serviceMatches(o.(*corev1.Service), svc)
		}); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

// applyIfChanged server-side applies cfg unless the existing object already matches it,
// so a steady cluster costs no API writes. An object of that name that the cluster does
// not control is never taken over: its author could have chosen what the operator would
// then trust (a Service's selector, a budget's pods).
func (r *Reconciler) applyIfChanged(ctx context.Context, vc *v1alpha1.ValkeyCluster, existing client.Object, name string, cfg runtime.ApplyConfiguration, matches func(client.Object) bool) error {
	ns := vc.Namespace
	key := client.ObjectKey{Namespace: ns, Name: name}
	err := r.Get(ctx, key, existing)
	if apierrors.IsNotFound(err) && r.APIReader != nil {
		// The cache holds the operator's objects only (operator.CacheOptions): one of
		// that name that someone else made is on the API server. Read only before a
		// create, so a steady cluster costs no read either.
		err = r.APIReader.Get(ctx, key, existing)
	}
	if err == nil && !metav1.IsControlledBy(existing, vc) {
		return &NameConflictError{Kind: kindOf(existing), Name: name}
	}
	if err == nil && matches(existing) {
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := r.Apply(ctx, cfg, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s/%s: %w", ns, name, err)
	}
	return nil
}

func serviceMatches(svc *corev1.Service, want *corev1ac.ServiceApplyConfiguration) bool {
	if len(svc.Spec.Ports) != len(want.Spec.Ports) || !labelsContain(svc.Spec.Selector, want.Spec.Selector) ||
		len(svc.Spec.Selector) != len(want.Spec.Selector) || len(svc.OwnerReferences) == 0 {
		return false
	}
	for i, p := range want.Spec.Ports {
		got := svc.Spec.Ports[i]
		if got.Name != *p.Name || got.Port != *p.Port || got.TargetPort != *p.TargetPort {
			return false
		}
	}
	if want.Spec.PublishNotReadyAddresses != nil && svc.Spec.PublishNotReadyAddresses != *want.Spec.PublishNotReadyAddresses {
		return false
	}
	return true
}

func labelsContain(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// pdbName names the cluster-wide budget ("{cluster}") and the per-shard ones.
func pdbName(cluster string, shard int32) string {
	if shard < 0 {
		return cluster
	}
	return cluster + "-shard-" + strconv.Itoa(int(shard))
}

// reconcilePDBs keeps the disruption budgets the spec's mode asks for and deletes any
// other budget of ours: Cluster (one over every pod), Shard (one per shard) or Disabled.
func (r *Reconciler) reconcilePDBs(ctx context.Context, s *scope) (time.Duration, error) {
	vc := s.VC
	want := map[string]map[string]string{}
	switch vc.Spec.PDB() {
	case v1alpha1.PDBCluster:
		want[pdbName(vc.Name, -1)] = v1alpha1.ClusterLabels(vc.Name)
	case v1alpha1.PDBShard:
		for sh := int32(0); sh < s.Shards(); sh++ {
			want[pdbName(vc.Name, sh)] = v1alpha1.ShardLabels(vc.Name, sh)
		}
	}
	for name, sel := range want {
		cfg := policyv1ac.PodDisruptionBudget(name, vc.Namespace).
			WithLabels(v1alpha1.ClusterLabels(vc.Name)).WithOwnerReferences(ownerRef(vc)).
			WithSpec(policyv1ac.PodDisruptionBudgetSpec().
				WithMaxUnavailable(intstr.FromInt32(1)).
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(sel)))
		if err := r.applyIfChanged(ctx, vc, &policyv1.PodDisruptionBudget{}, name, cfg, func(o client.Object) bool {
			p := o.(*policyv1.PodDisruptionBudget)
			return p.Spec.MaxUnavailable != nil && p.Spec.MaxUnavailable.IntValue() == 1 && p.Spec.Selector != nil &&
				len(p.Spec.Selector.MatchLabels) == len(sel) && labelsContain(p.Spec.Selector.MatchLabels, sel)
		}); err != nil {
			return 0, err
		}
	}
	var list policyv1.PodDisruptionBudgetList
	if err := r.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels(v1alpha1.ClusterLabels(vc.Name))); err != nil {
		return 0, err
	}
	for i := range list.Items {
		p := &list.Items[i]
		if _, keep := want[p.Name]; keep || !metav1.IsControlledBy(p, vc) {
			continue
		}
		if err := r.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("delete PodDisruptionBudget %s: %w", p.Name, err)
		}
		r.event(vc, nil, eventNormal, "DisruptionBudgetDeleted", "Delete", "deleted PodDisruptionBudget %s (mode %s)", p.Name, vc.Spec.PDB())
	}
	return 0, nil
}

// NameConflictError says that an object the operator would create for the cluster
// exists and is not the cluster's: the operator leaves it alone and the cluster reports
// NameConflict until it is renamed or deleted.
type NameConflictError struct {
	Kind, Name string
}

func (e *NameConflictError) Error() string {
	return fmt.Sprintf("%s %s exists and is not this cluster's; the operator does not take it over: delete or rename it", e.Kind, e.Name)
}

// kindOf names the kind of the objects applyIfChanged writes.
func kindOf(o client.Object) string {
	switch o.(type) {
	case *corev1.Service:
		return "Service"
	case *policyv1.PodDisruptionBudget:
		return "PodDisruptionBudget"
	case *networkingv1.NetworkPolicy:
		return "NetworkPolicy"
	}
	return fmt.Sprintf("%T", o)
}
