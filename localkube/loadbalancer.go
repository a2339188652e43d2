package localkube

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// The local load balancer gives every Service of type LoadBalancer an address of the node
// bridge, from LoadBalancerPool, and puts it on one node's interface, so anything on the
// bridge (the host, a client namespace) reaches it as it would a cloud load balancer's:
// the node answers for the address and kube-proxy forwards it to the Service's endpoints,
// as it does for any load-balancer ingress address. With externalTrafficPolicy Local the
// address sits on a node that runs a ready endpoint (kube-proxy drops it elsewhere).
// Services that name another spec.loadBalancerClass are left to their own controller.
const (
	// LoadBalancerClass is the class this load balancer serves, besides Services without one.
	LoadBalancerClass = "localkube.valkey.io/bridge"
	// LoadBalancerPool is the range of bridge addresses it hands out (the nodes have
	// .11 to .60, the host .1).
	LoadBalancerPoolFirst = bridgePrefix + ".200"
	LoadBalancerPoolLast  = bridgePrefix + ".249"
)

// loadBalancer assigns and places the addresses; run by the provisioner process.
type loadBalancer struct {
	cs    kubernetes.Interface
	nodes []Node
	svcs  cache.Indexer
	eps   cache.Indexer
	// exec runs ip(8); tests replace it.
	exec func(ctx context.Context, args ...string) (string, error)
}

// runLoadBalancer serves Services of type LoadBalancer until ctx ends.
func runLoadBalancer(ctx context.Context, cs kubernetes.Interface, nodes []Node) {
	f := informers.NewSharedInformerFactory(cs, 30*time.Second)
	svcInf := f.Core().V1().Services().Informer()
	epInf := f.Discovery().V1().EndpointSlices().Informer()
	lb := &loadBalancer{cs: cs, nodes: nodes, svcs: svcInf.GetIndexer(), eps: epInf.GetIndexer(),
		exec: func(ctx context.Context, args ...string) (string, error) { return run(ctx, "ip", args...) }}
	kick := make(chan struct{}, 1)
	notify := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	h := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { notify() }, UpdateFunc: func(any, any) { notify() }, DeleteFunc: func(any) { notify() }}
	_, _ = svcInf.AddEventHandler(h)
	_, _ = epInf.AddEventHandler(h)
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		if err := lb.sync(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "load balancer: %v\n", err)
			notify() // try again at once, then at the next event or tick
			time.Sleep(time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-tick.C:
		}
	}
}

// served reports whether the Service is one this load balancer answers for.
func served(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeLoadBalancer && s.DeletionTimestamp.IsZero() &&
		(s.Spec.LoadBalancerClass == nil || *s.Spec.LoadBalancerClass == LoadBalancerClass)
}

// sync assigns an address to every served Service that has none, records it in the
// Service's status, and places every assigned address on its node, removing the others.
func (lb *loadBalancer) sync(ctx context.Context) error {
	var svcs []*corev1.Service
	for _, o := range lb.svcs.List() {
		if s, ok := o.(*corev1.Service); ok && served(s) {
			svcs = append(svcs, s)
		}
	}
	slices.SortFunc(svcs, func(a, b *corev1.Service) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)*2 + strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	assigned := map[*corev1.Service]netip.Addr{}
	used := map[netip.Addr]bool{}
	for _, s := range svcs {
		if a, ok := poolAddress(s); ok && !used[a] {
			assigned[s], used[a] = a, true
		}
	}
	var errs []string
	for _, s := range svcs {
		if _, ok := assigned[s]; ok {
			continue
		}
		a, ok := freeAddress(used)
		if !ok {
			errs = append(errs, fmt.Sprintf("%s/%s: the pool %s-%s is exhausted", s.Namespace, s.Name, LoadBalancerPoolFirst, LoadBalancerPoolLast))
			continue
		}
		s = s.DeepCopy()
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: a.String(), IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}}
		if _, err := lb.cs.CoreV1().Services(s.Namespace).UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, fmt.Sprintf("%s/%s: %v", s.Namespace, s.Name, err))
			continue
		}
		assigned[s], used[a] = a, true
	}
	want := map[string]map[netip.Addr]bool{} // node netns -> addresses
	for s, a := range assigned {
		if n, ok := lb.placement(s); ok {
			if want[n.Netns()] == nil {
				want[n.Netns()] = map[netip.Addr]bool{}
			}
			want[n.Netns()][a] = true
		}
	}
	for _, n := range lb.nodes {
		if err := lb.place(ctx, n, want[n.Netns()]); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// placement is the node that answers for the Service's address: with
// externalTrafficPolicy Local one that runs a ready endpoint (none: nowhere), otherwise
// one picked by the Service's name, so the addresses spread over the nodes.
func (lb *loadBalancer) placement(s *corev1.Service) (Node, bool) {
	if len(lb.nodes) == 0 {
		return Node{}, false
	}
	if s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: s.Name})
		var hosts []string
		for _, o := range lb.eps.List() {
			es, ok := o.(*discoveryv1.EndpointSlice)
			if !ok || es.Namespace != s.Namespace || !sel.Matches(labels.Set(es.Labels)) {
				continue
			}
			for _, e := range es.Endpoints {
				if e.NodeName != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
					hosts = append(hosts, *e.NodeName)
				}
			}
		}
		slices.Sort(hosts)
		for _, h := range hosts {
			for _, n := range lb.nodes {
				if n.Name() == h {
					return n, true
				}
			}
		}
		return Node{}, false
	}
	sum := 0
	for _, c := range s.Namespace + "/" + s.Name {
		sum += int(c)
	}
	return lb.nodes[sum%len(lb.nodes)], true
}

// place makes the pool addresses on node n's interface exactly want.
func (lb *loadBalancer) place(ctx context.Context, n Node, want map[netip.Addr]bool) error {
	out, err := lb.exec(ctx, "-n", n.Netns(), "-o", "-4", "addr", "show", "dev", "eth0")
	if err != nil {
		return fmt.Errorf("addresses of node %s: %w", n.Name(), err)
	}
	have := map[netip.Addr]bool{}
	for _, f := range strings.Fields(out) {
		if p, err := netip.ParsePrefix(f); err == nil && InLoadBalancerPool(p.Addr()) {
			have[p.Addr()] = true
		}
	}
	for a := range want {
		if !have[a] {
			if _, err := lb.exec(ctx, "-n", n.Netns(), "addr", "add", a.String()+"/32", "dev", "eth0"); err != nil {
				return fmt.Errorf("put %s on node %s: %w", a, n.Name(), err)
			}
			// The address may have been on another node: the host forgets that node's
			// hardware address for it.
			_, _ = lb.exec(ctx, "neigh", "flush", "to", a.String())
		}
	}
	for a := range have {
		if !want[a] {
			if _, err := lb.exec(ctx, "-n", n.Netns(), "addr", "del", a.String()+"/32", "dev", "eth0"); err != nil {
				return fmt.Errorf("remove %s from node %s: %w", a, n.Name(), err)
			}
		}
	}
	return nil
}

// poolAddress is the pool address the Service's status already records.
func poolAddress(s *corev1.Service) (netip.Addr, bool) {
	for _, in := range s.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil && InLoadBalancerPool(a) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// InLoadBalancerPool reports whether a is one of the addresses the load balancer hands out.
func InLoadBalancerPool(a netip.Addr) bool {
	first, last := netip.MustParseAddr(LoadBalancerPoolFirst), netip.MustParseAddr(LoadBalancerPoolLast)
	return a.Compare(first) >= 0 && a.Compare(last) <= 0
}

// freeAddress is the lowest pool address not in used.
func freeAddress(used map[netip.Addr]bool) (netip.Addr, bool) {
	for a := netip.MustParseAddr(LoadBalancerPoolFirst); InLoadBalancerPool(a); a = a.Next() {
		if !used[a] {
			return a, true
		}
	}
	return netip.Addr{}, false
}
