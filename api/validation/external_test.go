package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func TestValidateExternalAccess(t *testing.T) {
	ext := func(e v1alpha1.ExternalAccessSpec, image string) func(*v1alpha1.ValkeyCluster) {
		return func(c *v1alpha1.ValkeyCluster) {
			c.Spec.ExternalAccess = &e
			if image != "" {
				c.Spec.Image = image
			}
		}
	}
	runClusterCases(t, []clusterCase{
		{name: "none", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessNone}, "")},
		{name: "load balancer on 8.0", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer,
			LoadBalancerSourceRanges: []string{"203.0.113.0/24"}, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Annotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"},
			Labels:      map[string]string{"team": "cache"}, HostnameTemplate: "{member}.valkey.example.com"}, "valkey/valkey:8.0.1")},
		{name: "node port on 9.1", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessNodePort}, "valkey/valkey:9.1.2")},
		{name: "node port on an image whose tag names no version", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessNodePort}, "valkey/valkey:latest")},
		{name: "node port on 8.1", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessNodePort}, "valkey/valkey:8.1.1"),
			want: []string{"spec.externalAccess.type: Forbidden", "no client-only port", "cluster-announce-client-port exists from 9.0"}},
		{name: "node port on 8", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessNodePort}, "valkey/valkey:8"),
			want: []string{"spec.externalAccess.type: Forbidden"}},
		{name: "unknown type", mutate: ext(v1alpha1.ExternalAccessSpec{Type: "Ingress"}, ""),
			want: []string{"spec.externalAccess.type: Unsupported value"}},
		{name: "template without member", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, HostnameTemplate: "{cluster}.example.com"}, ""),
			want: []string{"spec.externalAccess.hostnameTemplate: Invalid value", "{member}"}},
		{name: "template with member inside a label", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, HostnameTemplate: "x{member}.example.com"}, ""),
			want: []string{"spec.externalAccess.hostnameTemplate"}},
		{name: "template with an unknown placeholder", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, HostnameTemplate: "{member}.{zone}.example.com"}, ""),
			want: []string{"spec.externalAccess.hostnameTemplate", "placeholders"}},
		{name: "template not a DNS name", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, HostnameTemplate: "{member}.Example_com"}, ""),
			want: []string{"spec.externalAccess.hostnameTemplate", "DNS name"}},
		{name: "bad source range", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, LoadBalancerSourceRanges: []string{"10.0.0.300/8"}}, ""),
			want: []string{"spec.externalAccess.loadBalancerSourceRanges[0]"}},
		{name: "source ranges without a load balancer", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessNodePort, LoadBalancerSourceRanges: []string{"10.0.0.0/8"}}, "valkey/valkey:9.1.2"),
			want: []string{"spec.externalAccess.loadBalancerSourceRanges: Forbidden"}},
		{name: "bad traffic policy", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, ExternalTrafficPolicy: "Nearest"}, ""),
			want: []string{"spec.externalAccess.externalTrafficPolicy: Unsupported value"}},
		{name: "operator label", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, Labels: map[string]string{v1alpha1.LabelNode: "x"}}, ""),
			want: []string{"spec.externalAccess.labels[valkey.io/node]: Forbidden"}},
		{name: "bad label value", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, Labels: map[string]string{"team": "a b"}}, ""),
			want: []string{"spec.externalAccess.labels"}},
		{name: "bad annotation key", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, Annotations: map[string]string{"a b": "x"}}, ""),
			want: []string{"spec.externalAccess.annotations"}},
		{name: "external-dns annotation with a template", mutate: ext(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer,
			HostnameTemplate: "{member}.example.com", Annotations: map[string]string{v1alpha1.AnnotationExternalDNSHostname: "x.example.com"}}, ""),
			want: []string{"is set by the operator"}},
	})
}

func TestHostnameTemplate(t *testing.T) {
	e := &v1alpha1.ExternalAccessSpec{HostnameTemplate: "{member}.{cluster}.{namespace}.example.com"}
	if got := e.Hostname("c-ab12", "c", "ns"); got != "c-ab12.c.ns.example.com" {
		t.Errorf("Hostname = %q", got)
	}
	if got := e.HostnamePattern("c", "ns"); got != "*.c.ns.example.com" {
		t.Errorf("HostnamePattern = %q", got)
	}
	if got := (*v1alpha1.ExternalAccessSpec)(nil).Hostname("m", "c", "n"); got != "" {
		t.Errorf("nil template = %q", got)
	}
}
