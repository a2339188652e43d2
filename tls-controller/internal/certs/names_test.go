package certs

import (
	"cmp"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// checkedNames are the names status.tls.missingNames reports of a Secret you keep, for
// a cluster without external access in cluster.local.
func checkedNames(cluster, namespace string) []string {
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster, Namespace: namespace}}
	return CertificateNames(vc, nil, DefaultClusterDomain).Checked
}

// member is a ValkeyNode of the names tests: a name and the address it announces.
func member(name, external string) v1alpha1.ValkeyNode {
	vn := v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	vn.Status.ExternalAddress = external
	return vn
}

func TestCertificateNames(t *testing.T) {
	// The names every cluster "vk" of namespace "ns" has: its two Services, in the four
	// forms clients write them.
	services := []string{"vk", "vk-nodes", "vk-nodes.ns", "vk-nodes.ns.svc", "vk-nodes.ns.svc.cluster.local",
		"vk.ns", "vk.ns.svc", "vk.ns.svc.cluster.local"}
	pods := []string{"*.vk-nodes.ns.svc", "*.vk-nodes.ns.svc.cluster.local"}
	client := []string{"vk.ns.svc", "vk.ns.svc.cluster.local"}
	sorted := func(lists ...[]string) []string {
		var out []string
		for _, l := range lists {
			out = append(out, l...)
		}
		slices.Sort(out)
		return out
	}
	leaving := member("vk-gone", "203.0.113.9:6379")
	leaving.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	lb := func(template string) *v1alpha1.ExternalAccessSpec {
		return &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, HostnameTemplate: template}
	}
	tests := []struct {
		name    string
		spec    func(s *v1alpha1.ValkeyClusterSpec)
		nodes   []v1alpha1.ValkeyNode
		domain  string
		dns     []string
		ips     []string
		checked []string
	}{
		{name: "the Services and the members' pods under the headless Service",
			dns: sorted(services, pods), checked: client},
		{name: "shards and replicas do not change the names",
			spec:  func(s *v1alpha1.ValkeyClusterSpec) { s.Shards, s.ReplicasPerShard = 10, ptr.To[int32](2) },
			nodes: []v1alpha1.ValkeyNode{member("vk-a", ""), member("vk-b", ""), member("vk-c", "")},
			dns:   sorted(services, pods), checked: client},
		{name: "a cluster domain with a final dot",
			domain: "example.org.",
			dns: sorted([]string{"vk", "vk-nodes", "vk-nodes.ns", "vk-nodes.ns.svc", "vk-nodes.ns.svc.example.org",
				"vk.ns", "vk.ns.svc", "vk.ns.svc.example.org", "*.vk-nodes.ns.svc", "*.vk-nodes.ns.svc.example.org"}),
			checked: []string{"vk.ns.svc", "vk.ns.svc.example.org"}},
		{name: "Deployment members have no names under the headless Service",
			spec: func(s *v1alpha1.ValkeyClusterSpec) { s.WorkloadType = v1alpha1.WorkloadDeployment },
			dns:  sorted(services), checked: client},
		{name: "Pod members have no names under the headless Service",
			spec: func(s *v1alpha1.ValkeyClusterSpec) { s.WorkloadType = v1alpha1.WorkloadPod },
			dns:  sorted(services), checked: client},
		{name: "LoadBalancer: each member's load balancer address, IPv4 and IPv6, members leaving left out",
			spec:  func(s *v1alpha1.ValkeyClusterSpec) { s.ExternalAccess = lb("") },
			nodes: []v1alpha1.ValkeyNode{member("vk-b", "[2001:db8::2]:6379"), member("vk-a", "203.0.113.20:6379"), member("vk-c", "198.51.100.7:6379"), leaving},
			dns:   sorted(services, pods), ips: []string{"198.51.100.7", "203.0.113.20", "2001:db8::2"}, checked: client},
		{name: "LoadBalancer known by name only (AWS): the load balancer's name",
			spec:  func(s *v1alpha1.ValkeyClusterSpec) { s.ExternalAccess = lb("") },
			nodes: []v1alpha1.ValkeyNode{member("vk-a", "a1.elb.example.com:6379"), member("vk-b", "")},
			dns:   sorted(services, pods, []string{"a1.elb.example.com"}), checked: client},
		{name: "NodePort: the nodes' addresses, each once",
			spec: func(s *v1alpha1.ValkeyClusterSpec) {
				s.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessNodePort}
			},
			nodes: []v1alpha1.ValkeyNode{member("vk-a", "192.0.2.11:31001"), member("vk-b", "192.0.2.12:31002"), member("vk-c", "192.0.2.11:31003")},
			dns:   sorted(services, pods), ips: []string{"192.0.2.11", "192.0.2.12"}, checked: client},
		{name: "external access None gives no external names",
			spec: func(s *v1alpha1.ValkeyClusterSpec) {
				s.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessNone}
			},
			nodes: []v1alpha1.ValkeyNode{member("vk-a", "")},
			dns:   sorted(services, pods), checked: client},
		{name: "a hostname template with {member} first: one wildcard, each member's name checked",
			spec:  func(s *v1alpha1.ValkeyClusterSpec) { s.ExternalAccess = lb("{member}.{namespace}.example.com") },
			nodes: []v1alpha1.ValkeyNode{member("vk-b", "vk-b.ns.example.com:6379"), member("vk-a", "vk-a.ns.example.com:6379"), leaving},
			dns:   sorted(services, pods, []string{"*.ns.example.com"}),
			// no IP address: members announce the hostnames, not their load balancers' addresses
			checked: append(slices.Clone(client), "vk-a.ns.example.com", "vk-b.ns.example.com")},
		{name: "a hostname template with {member} inside: each member's own name",
			spec:    func(s *v1alpha1.ValkeyClusterSpec) { s.ExternalAccess = lb("{cluster}.{member}.example.com") },
			nodes:   []v1alpha1.ValkeyNode{member("vk-b", ""), member("vk-a", "")},
			dns:     sorted(services, pods, []string{"vk.vk-a.example.com", "vk.vk-b.example.com"}),
			checked: append(slices.Clone(client), "vk.vk-a.example.com", "vk.vk-b.example.com")},
		{name: "extra names and addresses, deduplicated and in canonical form",
			spec: func(s *v1alpha1.ValkeyClusterSpec) {
				s.ExternalAccess = lb("")
				s.TLS = &v1alpha1.TLSSpec{CertManager: &v1alpha1.CertManagerSpec{
					DNSNames:    []string{"Cache.Example.com", "vk.ns.svc", "*.cache.example.com"},
					IPAddresses: []string{"2001:0db8:0000::0002", "203.0.113.20", "10.0.0.1"},
				}}
			},
			nodes: []v1alpha1.ValkeyNode{member("vk-a", "203.0.113.20:6379"), member("vk-b", "[2001:db8::2]:6379")},
			dns:   sorted(services, pods, []string{"*.cache.example.com", "cache.example.com"}),
			ips:   []string{"10.0.0.1", "203.0.113.20", "2001:db8::2"}, checked: client},
		{name: "extra names of a Secret you keep are not the operator's to add",
			spec: func(s *v1alpha1.ValkeyClusterSpec) {
				s.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "mine"}}
			},
			dns: sorted(services, pods), checked: client},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "vk", Namespace: "ns"}}
			if tc.spec != nil {
				tc.spec(&vc.Spec)
			}
			got := CertificateNames(vc, tc.nodes, cmp.Or(tc.domain, DefaultClusterDomain))
			if !slices.Equal(got.DNSNames, tc.dns) {
				t.Errorf("DNS names\n got %q\nwant %q", got.DNSNames, tc.dns)
			}
			if !slices.Equal(got.IPAddresses, tc.ips) {
				t.Errorf("IP addresses %q, want %q", got.IPAddresses, tc.ips)
			}
			if !slices.Equal(got.Checked, tc.checked) {
				t.Errorf("checked names %q, want %q", got.Checked, tc.checked)
			}
			if all := got.All(); len(all) != len(got.DNSNames)+len(got.IPAddresses) || !slices.Contains(all, got.DNSNames[0]) {
				t.Errorf("All() = %q", all)
			}
		})
	}
}
