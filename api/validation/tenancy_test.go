package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func externalAccess(e v1alpha1.ExternalAccessSpec) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) { c.Spec.ExternalAccess = &e }
}

var (
	loadBalancer = v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer}
	lbAnnotated  = v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, Annotations: map[string]string{
		"service.beta.kubernetes.io/aws-load-balancer-internal": "true", "external-dns.alpha.kubernetes.io/ttl": "60",
		"service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing"}}
	lbNamed     = v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, HostnameTemplate: "{member}.valkey.team-a.example.com"}
	withSidecar = containers(corev1.Container{Name: "side", Image: "busybox"})
	npOff       = func(c *v1alpha1.ValkeyCluster) {
		c.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: ptr.To(false)}
	}
)

// The default profile admits every external access, sidecar and NetworkPolicy choice;
// its allow-lists, when set, are the only things admitted.
func TestPolicyProfileDefault(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "a load balancer with any annotation", mutate: externalAccess(lbAnnotated)},
		{name: "any hostname", mutate: externalAccess(lbNamed)},
		{name: "a sidecar", mutate: withSidecar},
		{name: "the NetworkPolicy off", mutate: npOff},
	})
	withPolicy(t, Policy{ExternalAccess: ExternalAccessPolicy{Types: []v1alpha1.ExternalAccessType{v1alpha1.ExternalAccessNodePort},
		Annotations: []string{"external-dns.alpha.kubernetes.io/"}}})
	runClusterCases(t, []clusterCase{
		{name: "a type not listed", mutate: externalAccess(loadBalancer),
			want: []string{"spec.externalAccess.type: Forbidden: LoadBalancer is not admitted by this operator's policy (policy.externalAccess.allowedTypes: NodePort)"}},
		{name: "annotations outside the listed prefix", mutate: externalAccess(v1alpha1.ExternalAccessSpec{Annotations: lbAnnotated.Annotations}),
			want: []string{
				`spec.externalAccess.annotations[service.beta.kubernetes.io/aws-load-balancer-internal]: Forbidden: is not admitted by this operator's policy (policy.externalAccess.allowedAnnotations: external-dns.alpha.kubernetes.io/)`,
				`spec.externalAccess.annotations[service.beta.kubernetes.io/aws-load-balancer-scheme]: Forbidden`,
			}},
		{name: "no hostname list: any hostname", mutate: externalAccess(v1alpha1.ExternalAccessSpec{HostnameTemplate: lbNamed.HostnameTemplate})},
	})
}

func TestPolicyProfileMultiTenant(t *testing.T) {
	withPolicy(t, Policy{Profile: ProfileMultiTenant})
	runClusterCases(t, []clusterCase{
		{name: "no external access", mutate: externalAccess(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessNone})},
		{name: "the server patched", mutate: containers(corev1.Container{Name: "server", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}})},
		{name: "the NetworkPolicy on", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: ptr.To(true)}
		}},
		{name: "a load balancer", mutate: externalAccess(loadBalancer),
			want: []string{"spec.externalAccess.type: Forbidden: LoadBalancer is not admitted by this operator's policy (policy.externalAccess.allowedTypes: none)"}},
		{name: "annotations", mutate: externalAccess(v1alpha1.ExternalAccessSpec{Annotations: map[string]string{"a.example.com/x": "1"}}),
			want: []string{"spec.externalAccess.annotations[a.example.com/x]: Forbidden: is not admitted by this operator's policy (policy.externalAccess.allowedAnnotations: none)"}},
		{name: "a hostname", mutate: externalAccess(v1alpha1.ExternalAccessSpec{HostnameTemplate: lbNamed.HostnameTemplate}),
			want: []string{"spec.externalAccess.hostnameTemplate: Forbidden: must end with a suffix this operator's policy admits (policy.externalAccess.allowedHostnameSuffixes: none)"}},
		{name: "a sidecar", mutate: withSidecar, want: []string{"spec.containers[0]: Forbidden: sidecars are refused by the operator's administrator"}},
		{name: "the NetworkPolicy off", mutate: npOff,
			want: []string{"spec.networkPolicy.enabled: Forbidden: may not be false under this operator's multiTenant policy profile"}},
	})
	withPolicy(t, Policy{Profile: ProfileMultiTenant, ExternalAccess: ExternalAccessPolicy{
		Types:            []v1alpha1.ExternalAccessType{v1alpha1.ExternalAccessLoadBalancer},
		Annotations:      []string{"service.beta.kubernetes.io/aws-load-balancer-internal", "external-dns.alpha.kubernetes.io/"},
		HostnameSuffixes: []string{".team-a.example.com"},
	}})
	runClusterCases(t, []clusterCase{
		{name: "what the lists admit", mutate: externalAccess(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer,
			HostnameTemplate: "{member}.valkey.team-a.example.com", Annotations: map[string]string{
				"service.beta.kubernetes.io/aws-load-balancer-internal": "true", "external-dns.alpha.kubernetes.io/ttl": "60"}})},
		{name: "a key beside the listed one", mutate: externalAccess(lbAnnotated),
			want: []string{"spec.externalAccess.annotations[service.beta.kubernetes.io/aws-load-balancer-scheme]: Forbidden"}},
		{name: "a hostname of another team", mutate: externalAccess(v1alpha1.ExternalAccessSpec{HostnameTemplate: "{member}.team-b.example.com"}),
			want: []string{"spec.externalAccess.hostnameTemplate: Forbidden: must end with a suffix this operator's policy admits (policy.externalAccess.allowedHostnameSuffixes: .team-a.example.com)"}},
		{name: "a suffix that only ends like the listed one", mutate: externalAccess(v1alpha1.ExternalAccessSpec{HostnameTemplate: "{member}.evilteam-a.example.com"}),
			want: []string{"spec.externalAccess.hostnameTemplate: Forbidden"}},
	})
}

func TestParsePolicyFlags(t *testing.T) {
	for _, tc := range []struct {
		name, profile, types, annotations, suffixes string
		want                                        string
	}{
		{name: "defaults"},
		{name: "every list", profile: "multiTenant", types: "NodePort, LoadBalancer", annotations: "a.example.com/x,external-dns.alpha.kubernetes.io/", suffixes: ".team-a.example.com"},
		{name: "unknown profile", profile: "strict", want: `--policy-profile: "strict": want default or multiTenant`},
		{name: "unknown type", types: "ClusterIP", want: `--external-access-types: "ClusterIP": want NodePort or LoadBalancer`},
		{name: "wildcard annotation", annotations: "*", want: `--external-access-annotations: "*"`},
		{name: "suffix without a dot", suffixes: "example.com", want: `--external-access-hostname-suffixes: "example.com": want a DNS suffix starting with a dot`},
		{name: "a top-level domain alone", suffixes: ".com", want: `--external-access-hostname-suffixes: ".com"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, perr := ParseProfile(tc.profile)
			_, eerr := ParseExternalAccessPolicy(tc.types, tc.annotations, tc.suffixes)
			err := perr
			if err == nil {
				err = eerr
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
