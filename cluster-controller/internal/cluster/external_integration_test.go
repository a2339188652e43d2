package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// loadBalancers stands in for a cloud's load-balancer controller: every per-member
// Service of type LoadBalancer gets an address of its own (a loopback address no server
// uses), where a TCP forwarder passes connections to the member's server. The servers
// listen on ports of their own, which they announce, so the forwarder listens on the
// address at the port of the member's current server.
type loadBalancers struct {
	e    *env
	stop chan struct{}
	wg   sync.WaitGroup

	mu        sync.Mutex
	addrs     map[string]string       // Service name -> its address
	listeners map[string]net.Listener // "ip:port" -> forwarder
}

func newLoadBalancers(e *env) *loadBalancers {
	lb := &loadBalancers{e: e, stop: make(chan struct{}), addrs: map[string]string{}, listeners: map[string]net.Listener{}}
	lb.wg.Add(1)
	go lb.run()
	DeferCleanup(lb.Close)
	return lb
}

func (lb *loadBalancers) Close() {
	close(lb.stop)
	lb.wg.Wait()
	lb.mu.Lock()
	defer lb.mu.Unlock()
	for _, l := range lb.listeners {
		_ = l.Close()
	}
}

// external reports whether ip is an address the load balancers gave.
func (lb *loadBalancers) external(ip string) bool {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	for _, a := range lb.addrs {
		if a == ip {
			return true
		}
	}
	return false
}

func (lb *loadBalancers) run() {
	defer lb.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-lb.stop:
			return
		case <-t.C:
			lb.pass()
		}
	}
}

func (lb *loadBalancers) pass() {
	ctx := context.Background()
	var list corev1.ServiceList
	if err := k8s.List(ctx, &list, client.InNamespace(lb.e.ns), client.MatchingLabels{v1alpha1.LabelComponent: componentExternal}); err != nil {
		return
	}
	for i := range list.Items {
		svc := &list.Items[i]
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		lb.mu.Lock()
		ip := lb.addrs[svc.Name]
		if ip == "" {
			ip = newIP()
			lb.addrs[svc.Name] = ip
		}
		lb.mu.Unlock()
		if srv := lb.e.kubelet.server(svc.Labels[v1alpha1.LabelNode]); srv != nil {
			lb.forward(net.JoinHostPort(ip, strconv.Itoa(srv.Port)), svc.Labels[v1alpha1.LabelNode])
		}
		if len(svc.Status.LoadBalancer.Ingress) == 0 {
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
			_ = k8s.Status().Update(ctx, svc)
		}
	}
}

// forward listens at addr and passes every connection to the member's current server.
func (lb *loadBalancers) forward(addr, member string) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if lb.listeners[addr] != nil {
		return
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return
	}
	lb.listeners[addr] = l
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				srv := lb.e.kubelet.server(member)
				if srv == nil {
					return
				}
				out, err := net.Dial("tcp", srv.Addr())
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in) }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
}

// expectAnnouncedExternal checks what clients learn from every member's server: every
// address in CLUSTER SLOTS, and the MOVED target of a key asked at the wrong member, is
// a load balancer's; each member's status names its Service's address, and the
// cluster's seed endpoints are the primaries'.
func expectAnnouncedExternal(g Gomega, e *env, lb *loadBalancers, name string) {
	ctx := context.Background()
	members := e.members(g, name)
	for _, vn := range members {
		host, _, err := net.SplitHostPort(vn.Status.ExternalAddress)
		g.Expect(err).NotTo(HaveOccurred(), "external address of %s: %q", vn.Name, vn.Status.ExternalAddress)
		g.Expect(lb.external(host)).To(BeTrue(), "%s reports %s", vn.Name, vn.Status.ExternalAddress)
		var svc corev1.Service
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: v1alpha1.ExternalServiceName(vn.Name)}, &svc)).To(Succeed())
		srv := e.kubelet.server(vn.Name)
		g.Expect(srv).NotTo(BeNil())
		c := dial(g, srv)
		slots, err := c.DoValue(ctx, "CLUSTER", "SLOTS")
		g.Expect(err).NotTo(HaveOccurred())
		for _, rng := range slots.([]any) {
			for _, node := range rng.([]any)[2:] {
				ip := node.([]any)[0].(string)
				g.Expect(lb.external(ip)).To(BeTrue(), "CLUSTER SLOTS of %s names %s", vn.Name, ip)
			}
		}
		// A key of a slot this member does not serve is redirected.
		for _, key := range []string{"a", "b", "c", "d", "e", "f"} {
			_, err := c.Do(ctx, "GET", key)
			if msg, ok := valkey.ServerMessage(err); ok {
				g.Expect(msg).To(MatchRegexp(`^MOVED \d+ `))
				var slot int
				var target string
				_, _ = fmt.Sscanf(msg, "MOVED %d %s", &slot, &target)
				host, _, err := net.SplitHostPort(target)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(lb.external(host)).To(BeTrue(), "%s redirects %s to %s", vn.Name, key, target)
			}
		}
		c.Close()
	}
	vc := e.cluster(g, name)
	g.Expect(vc.Status.SeedEndpoints).To(HaveLen(int(vc.Spec.ShardCount())))
	for _, sh := range vc.Status.Shards {
		g.Expect(sh.ExternalAddresses).To(HaveKey(sh.Primary))
	}
	cond := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionExternalAddressPending)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonAddressesAnnounced), cond.Message)
	var list corev1.ServiceList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(e.ns), client.MatchingLabels{v1alpha1.LabelInstance: name, v1alpha1.LabelComponent: componentExternal})).To(Succeed())
	g.Expect(list.Items).To(HaveLen(len(members)), "one Service per member, none of a retired one")
}

var _ = Describe("External access", func() {
	var e *env
	ctx := context.Background()

	BeforeEach(func() { e = newEnv() })

	lbAccess := func(s *v1alpha1.ValkeyClusterSpec) {
		s.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer,
			Annotations: map[string]string{"example.com/lb": "internal"}}
	}

	It("waits for each member's load balancer, then announces it to clients through a failover and a roll", Label("slow"), func() {
		e.createCluster("ext", 3, 1, lbAccess)

		By("creating a Service per member and waiting for their addresses")
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "ext")
			c := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionExternalAddressPending)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(BeEquivalentTo("True"), c.Message)
			g.Expect(conditions.IsTrue(vc.Status.Conditions, v1alpha1.ConditionReady)).To(BeFalse())
			var list corev1.ServiceList
			g.Expect(k8s.List(ctx, &list, client.InNamespace(e.ns), client.MatchingLabels{v1alpha1.LabelComponent: componentExternal})).To(Succeed())
			g.Expect(list.Items).To(HaveLen(6))
			for _, svc := range list.Items {
				g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
				g.Expect(svc.Annotations).To(HaveKeyWithValue("example.com/lb", "internal"))
				g.Expect(svc.Spec.Selector).To(HaveKey(v1alpha1.LabelNode))
			}
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) {
			for _, srv := range e.kubelet.servers() {
				g.Expect(nodesOf(g, srv)).To(HaveLen(1), "a member joined before it had its external address")
			}
		}).WithTimeout(2 * time.Second).Should(Succeed())

		lb := newLoadBalancers(e)
		e.expectReady("ext", time.Minute)
		Eventually(func(g Gomega) { expectAnnouncedExternal(g, e, lb, "ext") }).WithTimeout(20 * time.Second).Should(Succeed())
		keys := writeKeys(e.anyServer("ext"), 200)

		By("keeping every announced address through a primary's crash")
		dead := e.member(Default, "ext", 0, true)
		replica := e.member(Default, "ext", 0, false)
		expectCaughtUp(e, dead.Name, replica.Name)
		Expect(e.kubelet.crash(ctx, &dead)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(e.cluster(g, "ext").Status.Shards[0].Primary).To(Equal(replica.Name))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		e.kubelet.release(dead.Name)
		e.expectReady("ext", time.Minute)
		Eventually(func(g Gomega) { expectAnnouncedExternal(g, e, lb, "ext") }).WithTimeout(20 * time.Second).Should(Succeed())

		By("giving a roll's successors their own Services before they join")
		e.update("ext", withNewResources)
		e.expectReady("ext", 3*time.Minute)
		Eventually(func(g Gomega) {
			for _, vn := range e.members(g, "ext") {
				g.Expect(hasNewResources(vn)).To(BeTrue(), vn.Name)
			}
			expectAnnouncedExternal(g, e, lb, "ext")
		}).WithTimeout(time.Minute).Should(Succeed())
		expectKeys(Default, e.anyServer("ext"), keys)

		By("giving a scale's new members their Services first, and removing a retired member's")
		e.update("ext", func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = 4 })
		e.expectReady("ext", 4*time.Minute)
		Eventually(func(g Gomega) { expectAnnouncedExternal(g, e, lb, "ext") }).WithTimeout(20 * time.Second).Should(Succeed())
		e.update("ext", func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = 3 })
		e.expectReady("ext", 4*time.Minute)
		Eventually(func(g Gomega) { expectAnnouncedExternal(g, e, lb, "ext") }).WithTimeout(20 * time.Second).Should(Succeed())
		expectKeys(Default, e.anyServer("ext"), keys)

		By("announcing the pod addresses again once external access is off")
		e.update("ext", func(s *v1alpha1.ValkeyClusterSpec) { s.ExternalAccess = nil })
		Eventually(func(g Gomega) {
			var list corev1.ServiceList
			g.Expect(k8s.List(ctx, &list, client.InNamespace(e.ns), client.MatchingLabels{v1alpha1.LabelComponent: componentExternal})).To(Succeed())
			g.Expect(list.Items).To(BeEmpty())
			for _, vn := range e.members(g, "ext") {
				g.Expect(vn.Status.ExternalAddress).To(BeEmpty())
				for _, n := range nodesOf(g, e.kubelet.server(vn.Name)) {
					g.Expect(lb.external(n.IP)).To(BeFalse(), "%s still shows %s", vn.Name, n.Addr())
				}
			}
		}).WithTimeout(30 * time.Second).Should(Succeed())
		e.expectReady("ext", time.Minute)
	})

	It("announces the names of the hostname template, which redirections then use", func() {
		e.createCluster("dns", 1, 0, func(s *v1alpha1.ValkeyClusterSpec) {
			lbAccess(s)
			s.ExternalAccess.HostnameTemplate = "{member}.{namespace}.example.com"
		})
		newLoadBalancers(e)
		e.expectReady("dns", time.Minute)
		vn := e.members(Default, "dns")[0]
		name := vn.Name + "." + e.ns + ".example.com"
		Expect(vn.Status.ExternalAddress).To(Equal(name + ":6379"))
		var svc corev1.Service
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: v1alpha1.ExternalServiceName(vn.Name)}, &svc)).To(Succeed())
		Expect(svc.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationExternalDNSHostname, name))
		c := dial(Default, e.kubelet.server(vn.Name))
		defer c.Close()
		slots, err := c.DoValue(ctx, "CLUSTER", "SLOTS")
		Expect(err).NotTo(HaveOccurred())
		Expect(slots.([]any)[0].([]any)[2].([]any)[0]).To(Equal(name), "the preferred endpoint of the slot map")
		cfg, err := c.ConfigGet(ctx, "cluster-preferred-endpoint-type")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg).To(HaveKeyWithValue("cluster-preferred-endpoint-type", "hostname"))
	})

	It("reports NodePort as pending on a Valkey 8 server, whose tag did not say so", func() {
		e.createCluster("np", 1, 0, func(s *v1alpha1.ValkeyClusterSpec) {
			s.Image = "valkey/valkey:latest"
			s.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessNodePort}
		})
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "np")
			c := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionExternalAddressPending)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(BeEquivalentTo("True"))
			g.Expect(c.Message).To(ContainSubstring("no client-only port"))
			var svc corev1.ServiceList
			g.Expect(k8s.List(ctx, &svc, client.InNamespace(e.ns), client.MatchingLabels{v1alpha1.LabelComponent: componentExternal})).To(Succeed())
			g.Expect(svc.Items).To(HaveLen(1))
			g.Expect(svc.Items[0].Spec.Type).To(Equal(corev1.ServiceTypeNodePort))
			g.Expect(svc.Items[0].Spec.Ports[0].NodePort).NotTo(BeZero())
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})
})
