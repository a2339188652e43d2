package localkube

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// fakeNodes records the addresses the load balancer puts on each node's interface, as
// ip(8) would (the exec seam: the real one needs the nodes' namespaces).
type fakeNodes struct {
	addrs map[string][]string // netns -> "a.b.c.d/32"
	calls []string
}

func (f *fakeNodes) exec(_ context.Context, args ...string) (string, error) {
	f.calls = append(f.calls, strings.Join(args, " "))
	if len(args) < 3 || args[0] != "-n" {
		return "", nil // neigh flush on the host
	}
	ns := args[1]
	switch {
	case slices.Contains(args, "show"):
		var out []string
		for _, a := range f.addrs[ns] {
			out = append(out, "2: eth0    inet "+a+" scope global eth0")
		}
		return strings.Join(out, "\n"), nil
	case args[2] == "addr" && args[3] == "add":
		f.addrs[ns] = append(f.addrs[ns], args[4])
	case args[2] == "addr" && args[3] == "del":
		f.addrs[ns] = slices.DeleteFunc(f.addrs[ns], func(a string) bool { return a == args[4] })
	}
	return "", nil
}

func lbService(name string, created int, mutate func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(time.Unix(int64(created), 0))},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

func TestLoadBalancerAssignsAndPlaces(t *testing.T) {
	ctx := context.Background()
	// a kept its address across a restart; b and c get the lowest free ones; d names
	// another class; e keeps client sources (Local) and has its endpoint on n2.
	svcs := []*corev1.Service{
		lbService("a", 1, func(s *corev1.Service) {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.99.0.201"}}
		}),
		lbService("b", 2, nil),
		lbService("c", 3, nil),
		lbService("d", 4, func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/cloud") }),
		lbService("e", 5, func(s *corev1.Service) {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}),
		{ObjectMeta: metav1.ObjectMeta{Name: "cluster-ip", Namespace: "ns"}},
	}
	cs := fake.NewClientset()
	svcIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, s := range svcs {
		if _, err := cs.CoreV1().Services(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_ = svcIdx.Add(s)
	}
	epIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = epIdx.Add(&discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "e-1", Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: "e"}},
		Endpoints: []discoveryv1.Endpoint{
			{NodeName: ptr.To("n3"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
			{NodeName: ptr.To("n2"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		},
	})
	nodes := &fakeNodes{addrs: map[string][]string{"vk-n1": {"10.99.0.11/24", "10.99.0.249/32"}}}
	lb := &loadBalancer{cs: cs, nodes: []Node{{Index: 1}, {Index: 2}, {Index: 3}}, svcs: svcIdx, eps: epIdx, exec: nodes.exec}
	if err := lb.sync(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, name := range []string{"a", "b", "c", "d", "e", "cluster-ip"} {
		s, err := cs.CoreV1().Services("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range s.Status.LoadBalancer.Ingress {
			got[name] = in.IP
		}
	}
	want := map[string]string{"a": "10.99.0.201", "b": "10.99.0.200", "c": "10.99.0.202", "e": "10.99.0.203"}
	for name, ip := range want {
		if got[name] != ip {
			t.Errorf("Service %s has %q, want %q", name, got[name], ip)
		}
	}
	for _, name := range []string{"d", "cluster-ip"} {
		if got[name] != "" {
			t.Errorf("Service %s got %q, want no address (not ours)", name, got[name])
		}
	}
	// Every assigned address is on exactly one node, e's on n2; the stale .249 is gone
	// and the node's own address untouched.
	on := map[string]string{}
	for ns, as := range nodes.addrs {
		for _, a := range as {
			if prev, dup := on[a]; dup {
				t.Errorf("%s on %s and %s", a, prev, ns)
			}
			on[a] = ns
		}
	}
	if on["10.99.0.203/32"] != "vk-n2" {
		t.Errorf("e's address on %q, want vk-n2 (its ready endpoint's node)", on["10.99.0.203/32"])
	}
	if _, ok := on["10.99.0.249/32"]; ok {
		t.Error("a pool address no Service has stayed on its node")
	}
	if on["10.99.0.11/24"] != "vk-n1" {
		t.Error("the node's own address was removed")
	}
	for _, ip := range want {
		if on[ip+"/32"] == "" {
			t.Errorf("%s is on no node", ip)
		}
	}

	// A second pass with nothing changed changes nothing.
	nodes.calls = nil
	for _, name := range []string{"b", "c", "e"} {
		s, _ := cs.CoreV1().Services("ns").Get(ctx, name, metav1.GetOptions{})
		_ = svcIdx.Update(s)
	}
	if err := lb.sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range nodes.calls {
		if !strings.Contains(c, " show ") {
			t.Errorf("second pass ran ip %s", c)
		}
	}
}
