package cluster

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestAnnounceWanted(t *testing.T) {
	v8, v9 := valkey.Version{Major: 8, Minor: 0, Patch: 1}, valkey.Version{Major: 9, Minor: 1, Patch: 2}
	defaults8 := map[string]string{keyClientIPv4: "", keyHostname: "", keyPreferredType: "ip"}
	defaults9 := map[string]string{keyClientIPv4: "", keyHostname: "", keyPreferredType: "ip", keyClientPort: "0", keyClientTLSPort: "0"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		version valkey.Version
		ext     *external
		want    map[string]string
	}{
		{"off on 8.0: the defaults", v8, nil, defaults8},
		{"off on 9.1: the client port too", v9, nil, defaults9},
		{"pending: the defaults", v8, &external{pending: "no address"}, defaults8},
		{"load balancer on 8.0: the address only", v8, &external{host: "203.0.113.7", port: 6379}, with(defaults8, keyClientIPv4, "203.0.113.7")},
		{"node port on 9.1: the address and the port", v9, &external{host: "198.51.100.2", port: 31001}, with(defaults9, keyClientIPv4, "198.51.100.2", keyClientPort, "31001", keyClientTLSPort, "31001")},
		{"a hostname template", v9, &external{host: "203.0.113.7", port: 6379, hostname: "m-1.vk.example.com"},
			with(defaults9, keyClientIPv4, "203.0.113.7", keyHostname, "m-1.vk.example.com", keyPreferredType, "hostname")},
		{"a load balancer known by name", v8, &external{host: "lb-1.elb.example.com", port: 6379, hostname: "lb-1.elb.example.com"},
			with(defaults8, keyHostname, "lb-1.elb.example.com", keyPreferredType, "hostname")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &member{node: &v1alpha1.ValkeyNode{}, reachable: true, version: tc.version}
			if got := announceWanted(m, tc.ext); !maps.Equal(got, tc.want) {
				t.Errorf("announceWanted = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClientView(t *testing.T) {
	node := func(name, id, podIP, ext string) *v1alpha1.ValkeyNode {
		return &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: v1alpha1.ValkeyNodeStatus{NodeID: id, PodIP: podIP, ExternalAddress: ext}}
	}
	a := &member{node: node("a", "A", "10.0.0.1", ""), addr: "10.0.0.1:6379", reachable: true,
		self: valkey.ClusterNode{ID: "A", IP: "203.0.113.1", Port: 6379, Myself: true}}
	a.view = []valkey.ClusterNode{a.self, {ID: "B", IP: "203.0.113.2", Port: 6379}, {ID: "C", IP: "10.0.0.9", Port: 6379}}
	// b does not answer: its recorded external address says what it announces.
	b := &member{node: node("b", "B", "10.0.0.2", "203.0.113.2:6379"), addr: "10.0.0.2:6379"}
	// c moved to a new pod: an entry at another address stays as it is.
	c := &member{node: node("c", "C", "10.0.0.3", ""), addr: "10.0.0.3:6379", reachable: true,
		self: valkey.ClusterNode{ID: "C", IP: "10.0.0.3", Port: 6379, Myself: true}}
	clientView([]*member{a, b, c})
	want := []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.9:6379"}
	for i, n := range a.view {
		if n.Addr() != want[i] {
			t.Errorf("entry %s at %s, want %s", n.ID, n.Addr(), want[i])
		}
	}
	if a.self.Addr() != "10.0.0.1:6379" {
		t.Errorf("self at %s", a.self.Addr())
	}
}

func TestExternalCondition(t *testing.T) {
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "vk", Namespace: "ns"}}
	m := &member{node: &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: "vk-a"}}, reachable: true}
	s := &scope{vc: vc, topo: newTopology([]*member{m}, metav1.Now().Time)}
	if c := externalCondition(s, 1); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonExternalAccessOff {
		t.Errorf("off: %+v", c)
	}
	vc.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer}
	m.external = &external{pending: "Service vk-a-external has no load-balancer address yet"}
	if c := externalCondition(s, 1); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonAddressPending ||
		c.Message != "1 members have no external address yet: vk-a: Service vk-a-external has no load-balancer address yet" {
		t.Errorf("pending: %+v", c)
	}
	m.external = &external{host: "203.0.113.1", port: 6379, announced: true}
	if c := externalCondition(s, 1); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonAddressesAnnounced {
		t.Errorf("announced: %+v", c)
	}
}

func TestExternalService(t *testing.T) {
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "vk", Namespace: "ns"}, Spec: v1alpha1.ValkeyClusterSpec{
		ExternalAccess: &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, HostnameTemplate: "{member}.vk.example.com",
			LoadBalancerSourceRanges: []string{"203.0.113.0/24"}, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Labels: map[string]string{"team": "cache"}}}}
	m := &member{node: &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: "vk-a"}, Spec: v1alpha1.ValkeyNodeSpec{ShardIndex: 2}}}
	svc := externalService(vc, m)
	if *svc.Name != "vk-a-external" || *svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Spec.Selector[v1alpha1.LabelNode] != "vk-a" ||
		*svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal || svc.Spec.LoadBalancerSourceRanges[0] != "203.0.113.0/24" ||
		svc.Annotations[v1alpha1.AnnotationExternalDNSHostname] != "vk-a.vk.example.com" || svc.Labels["team"] != "cache" ||
		svc.Labels[v1alpha1.LabelShardIndex] != "2" || svc.Annotations[annotationExternalHash] == "" {
		t.Errorf("service: %+v", svc)
	}
	before := svc.Annotations[annotationExternalHash]
	vc.Spec.ExternalAccess.Annotations = map[string]string{"x": "y"}
	if externalService(vc, m).Annotations[annotationExternalHash] == before {
		t.Error("the hash did not change with the annotations")
	}
}

func TestMarkUnseen(t *testing.T) {
	mk := func(name, id, podIP string, self valkey.ClusterNode) *member {
		self.ID, self.Port, self.Myself = id, 6379, true
		return &member{node: &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: v1alpha1.ValkeyNodeStatus{NodeID: id, PodIP: podIP}}, addr: podIP + ":6379", reachable: true, self: self}
	}
	// a announces its node port, b a hostname, c nothing (its pod address).
	a := mk("a", "A", "10.0.0.1", valkey.ClusterNode{IP: "198.51.100.1", Port: 31001})
	a.self.Port = 31001
	b := mk("b", "B", "10.0.0.2", valkey.ClusterNode{IP: "10.0.0.2", Hostname: "b.vk.example.com"})
	c := mk("c", "C", "10.0.0.3", valkey.ClusterNode{IP: "10.0.0.3"})
	a.view = []valkey.ClusterNode{a.self, {ID: "B", IP: "10.0.0.2", Port: 6379, Hostname: "b.vk.example.com"}, {ID: "C", IP: "10.0.0.3", Port: 6379}}
	// b has not heard a's announce yet, and lists c in handshake.
	b.view = []valkey.ClusterNode{b.self, {ID: "A", IP: "10.0.0.1", Port: 6379}, {ID: "C", IP: "10.0.0.3", Port: 6379, Handshake: true}}
	// c shows a's address, and b without its hostname.
	c.view = []valkey.ClusterNode{c.self, {ID: "A", IP: "198.51.100.1", Port: 31001}, {ID: "B", IP: "10.0.0.2", Port: 6379}}
	// d does not answer: its view is not asked.
	d := &member{node: &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: "d"}}, view: []valkey.ClusterNode{{ID: "A", IP: "10.0.0.1", Port: 6379}}}
	markUnseen([]*member{a, b, c, d})
	for _, tc := range []struct {
		m    *member
		want []string
	}{{a, []string{"b"}}, {b, []string{"c"}}, {c, nil}, {d, nil}} {
		if !slices.Equal(tc.m.unseenBy, tc.want) {
			t.Errorf("%s unseen by %v, want %v", tc.m.name(), tc.m.unseenBy, tc.want)
		}
	}
	// Once gossip has spread a's address to b, nobody waits.
	b.view[1] = valkey.ClusterNode{ID: "A", IP: "198.51.100.1", Port: 31001}
	markUnseen([]*member{a, b, c, d})
	if len(a.unseenBy) != 0 {
		t.Errorf("a unseen by %v after gossip, want none", a.unseenBy)
	}
}
