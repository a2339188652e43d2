package validation

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func clients(peers ...networkingv1.NetworkPolicyPeer) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) { c.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Clients: peers} }
}

func TestValidateNetworkPolicy(t *testing.T) {
	app := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	runClusterCases(t, []clusterCase{
		{name: "pods of another namespace", mutate: clients(networkingv1.NetworkPolicyPeer{PodSelector: app,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "web"}}})},
		{name: "an address range with an exception", mutate: clients(networkingv1.NetworkPolicyPeer{
			IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}})},
		{name: "both kinds in one peer", mutate: clients(networkingv1.NetworkPolicyPeer{PodSelector: app, IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}),
			want: []string{"spec.networkPolicy.clients[0]: Forbidden: set either ipBlock or podSelector/namespaceSelector"}},
		{name: "an empty peer", mutate: clients(networkingv1.NetworkPolicyPeer{}),
			want: []string{"spec.networkPolicy.clients[0]: Required value"}},
		{name: "not a CIDR", mutate: clients(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.1"}}),
			want: []string{"spec.networkPolicy.clients[0].ipBlock.cidr: Invalid value"}},
		{name: "an address, not a network", mutate: clients(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.99.0.1/24"}}),
			want: []string{"spec.networkPolicy.clients[0].ipBlock.cidr: Invalid value: \"10.99.0.1/24\": has address bits set beyond the prefix length: write 10.99.0.0/24"}},
		{name: "an exception not a network", mutate: clients(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.1/16"}}}),
			want: []string{"spec.networkPolicy.clients[0].ipBlock.except[0]: Invalid value"}},
		{name: "an exception outside", mutate: clients(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/16", Except: []string{"10.1.0.0/24"}}}),
			want: []string{"spec.networkPolicy.clients[0].ipBlock.except[0]: Invalid value"}},
		{name: "a bad selector", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Metrics: []networkingv1.NetworkPolicyPeer{{
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}}}}}
		}, want: []string{"spec.networkPolicy.metrics[0].podSelector.matchLabels: Invalid value"}},
	})
}
