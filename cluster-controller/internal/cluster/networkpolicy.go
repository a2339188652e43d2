package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
)

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete

// metricsPort is the exporter's port in every member's pod.
const metricsPort = 9121

// NetworkPolicyDefaults are the operator's settings for the NetworkPolicies of the
// clusters (the cluster-controller's flags, from the chart's valkeyNetworkPolicy).
type NetworkPolicyDefaults struct {
	// Enabled is the default of clusters that leave spec.networkPolicy.enabled unset.
	Enabled bool
	// Metrics may scrape the exporters of clusters that list no metrics peers.
	Metrics []networkingv1.NetworkPolicyPeer
	// OperatorNamespace is where the operator's components run; they reach the members'
	// client and exporter ports. Empty: the cluster's namespace.
	OperatorNamespace string
}

// operatorPodLabels select the operator's components (every Deployment of the chart).
var operatorPodLabels = map[string]string{v1alpha1.LabelName: "valkey-operator"}

// reconcileNetworkPolicy keeps the cluster's NetworkPolicy (named like the cluster) when
// it is enabled, and deletes the operator's own one when it is not.
func (r *Reconciler) reconcileNetworkPolicy(ctx context.Context, s *scope) (time.Duration, error) {
	vc := s.VC
	if !vc.Spec.NetworkPolicyEnabled(r.NetworkPolicy.Enabled) {
		var np networkingv1.NetworkPolicy
		err := r.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: vc.Name}, &np)
		if apierrors.IsNotFound(err) || (err == nil && !metav1.IsControlledBy(&np, vc)) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		if err := r.Delete(ctx, &np); err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("delete NetworkPolicy %s: %w", np.Name, err)
		}
		return 0, nil
	}
	want := buildNetworkPolicy(vc, r.NetworkPolicy)
	cfg, err := networkPolicyApply(want)
	if err != nil {
		return 0, err
	}
	return 0, r.applyIfChanged(ctx, vc, &networkingv1.NetworkPolicy{}, want.Name, cfg, func(o client.Object) bool {
		return equality.Semantic.DeepEqual(o.(*networkingv1.NetworkPolicy).Spec, want.Spec)
	})
}

// buildNetworkPolicy is the cluster's policy: it selects the members' pods and admits
//   - the bus port (16379) and the client port from the cluster's own members (gossip,
//     replication, the pre-stop hand-over);
//   - the client port from spec.networkPolicy.clients, or every pod of the namespace;
//   - the client and exporter ports from the operator's components (the controllers
//     talk to every member, the acl-controller reloads exporters) and from the
//     operator's own Jobs of this cluster (the backup-controller's backup and restore
//     Jobs: app.kubernetes.io/name valkey-backup, the cluster's instance, managed-by
//     valkey-operator);
//   - the exporter port from the metrics peers of the spec, else of the operator.
//
// Anything else is refused: a pod of another namespace cannot MEET a member, claim
// slots or mark members failed on the unauthenticated bus.
// backupJobAppName is the app.kubernetes.io/name of the backup-controller's Jobs
// (backup.JobAppName; the components do not import each other).
const backupJobAppName = "valkey-backup"

func buildNetworkPolicy(vc *v1alpha1.ValkeyCluster, d NetworkPolicyDefaults) *networkingv1.NetworkPolicy {
	members := maps.Clone(v1alpha1.ClusterLabels(vc.Name))
	members[v1alpha1.LabelComponent] = "server"
	port := func(p int) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt(p))}
	}
	client, bus, metrics := port(valkeyconn.Port), port(busPort), port(metricsPort)

	clients := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	var metricsPeers []networkingv1.NetworkPolicyPeer
	if np := vc.Spec.NetworkPolicy; np != nil {
		if len(np.Clients) > 0 {
			clients = deepCopyPeers(np.Clients)
		}
		metricsPeers = deepCopyPeers(np.Metrics)
	}
	if len(metricsPeers) == 0 {
		metricsPeers = deepCopyPeers(d.Metrics)
	}
	opNS := d.OperatorNamespace
	if opNS == "" {
		opNS = vc.Namespace
	}
	operator := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: opNS}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: maps.Clone(operatorPodLabels)},
	}
	// The backup and restore Jobs' pods (the backup-controller's jobLabels: its
	// JobAppName, the cluster's instance, managed by the operator).
	ownJobs := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
		v1alpha1.LabelName: backupJobAppName, v1alpha1.LabelInstance: vc.Name, v1alpha1.LabelManagedBy: v1alpha1.ManagedBy}}}

	ingress := []networkingv1.NetworkPolicyIngressRule{
		{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(members)}}},
			Ports: []networkingv1.NetworkPolicyPort{bus, client}},
		{From: clients, Ports: []networkingv1.NetworkPolicyPort{client}},
		{From: []networkingv1.NetworkPolicyPeer{operator, ownJobs}, Ports: []networkingv1.NetworkPolicyPort{client, metrics}},
	}
	if len(metricsPeers) > 0 {
		ingress = append(ingress, networkingv1.NetworkPolicyIngressRule{From: metricsPeers, Ports: []networkingv1.NetworkPolicyPort{metrics}})
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: vc.Name, Namespace: vc.Namespace, Labels: v1alpha1.ClusterLabels(vc.Name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(vc, v1alpha1.GroupVersion.WithKind("ValkeyCluster"))}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: members},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     ingress,
		},
	}
}

// networkPolicyApply turns the built policy into the apply configuration the
// controller sends (every field of it is the controller's).
func networkPolicyApply(np *networkingv1.NetworkPolicy) (*networkingv1ac.NetworkPolicyApplyConfiguration, error) {
	b, err := json.Marshal(np)
	if err != nil {
		return nil, fmt.Errorf("encode NetworkPolicy: %w", err)
	}
	cfg := &networkingv1ac.NetworkPolicyApplyConfiguration{}
	if err := json.Unmarshal(b, cfg); err != nil {
		return nil, fmt.Errorf("decode NetworkPolicy: %w", err)
	}
	cfg.ObjectMetaApplyConfiguration.CreationTimestamp = nil
	return cfg, nil
}

func deepCopyPeers(in []networkingv1.NetworkPolicyPeer) []networkingv1.NetworkPolicyPeer {
	out := make([]networkingv1.NetworkPolicyPeer, 0, len(in))
	for i := range in {
		out = append(out, *in[i].DeepCopy())
	}
	return out
}
