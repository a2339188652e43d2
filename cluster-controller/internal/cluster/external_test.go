package cluster

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
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
		ext     *plan.External
		want    map[string]string
	}{
		{"off on 8.0: the defaults", v8, nil, defaults8},
		{"off on 9.1: the client port too", v9, nil, defaults9},
		{"pending: the defaults", v8, &plan.External{Pending: "no address"}, defaults8},
		{"load balancer on 8.0: the address only", v8, &plan.External{Host: "203.0.113.7", Port: 6379}, with(defaults8, keyClientIPv4, "203.0.113.7")},
		{"node port on 9.1: the address and the port", v9, &plan.External{Host: "198.51.100.2", Port: 31001}, with(defaults9, keyClientIPv4, "198.51.100.2", keyClientPort, "31001", keyClientTLSPort, "31001")},
		{"a hostname template", v9, &plan.External{Host: "203.0.113.7", Port: 6379, Hostname: "m-1.vk.example.com"},
			with(defaults9, keyClientIPv4, "203.0.113.7", keyHostname, "m-1.vk.example.com", keyPreferredType, "hostname")},
		{"a load balancer known by name", v8, &plan.External{Host: "lb-1.elb.example.com", Port: 6379, Hostname: "lb-1.elb.example.com"},
			with(defaults8, keyHostname, "lb-1.elb.example.com", keyPreferredType, "hostname")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &plan.Member{Node: &v1alpha1.ValkeyNode{}, Reachable: true, Version: tc.version}
			if got := announceWanted(m, tc.ext); !maps.Equal(got, tc.want) {
				t.Errorf("announceWanted = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestExternalCondition(t *testing.T) {
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "vk", Namespace: "ns"}}
	m := &plan.Member{Node: &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: "vk-a"}}, Reachable: true}
	s := &scope{Cluster: plan.Cluster{VC: vc, Topo: plan.NewTopology([]*plan.Member{m}, metav1.Now().Time)}}
	if c := externalCondition(s, 1); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonExternalAccessOff {
		t.Errorf("off: %+v", c)
	}
	vc.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer}
	m.External = &plan.External{Pending: "Service vk-a-external has no load-balancer address yet"}
	if c := externalCondition(s, 1); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonAddressPending ||
		c.Message != "1 members have no external address yet: vk-a: Service vk-a-external has no load-balancer address yet" {
		t.Errorf("pending: %+v", c)
	}
	m.External = &plan.External{Host: "203.0.113.1", Port: 6379, Announced: true}
	if c := externalCondition(s, 1); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonAddressesAnnounced {
		t.Errorf("announced: %+v", c)
	}
}

func TestExternalService(t *testing.T) {
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "vk", Namespace: "ns"}, Spec: v1alpha1.ValkeyClusterSpec{
		ExternalAccess: &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, HostnameTemplate: "{member}.vk.example.com",
			LoadBalancerSourceRanges: []string{"203.0.113.0/24"}, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Labels: map[string]string{"team": "cache"}}}}
	m := &plan.Member{Node: &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: "vk-a"}, Spec: v1alpha1.ValkeyNodeSpec{ShardIndex: 2}}}
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
