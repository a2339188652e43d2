package localkube

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// guardRules drops anything from the cluster's networks that would leave through another
// interface. The host never forwards (ip_forward stays 0); this is the second fence.
func guardRules() string {
	return fmt.Sprintf(`table inet %[1]s {
	chain guard {
		type filter hook forward priority -10; policy accept;
		iifname "%[2]s" oifname != "%[2]s" drop
		ip saddr %[3]s oifname != "%[2]s" drop
	}
}
`, guardTable, BridgeName, PodCIDR)
}

// setupNetwork creates the bridge, the guard, and for each node its namespace, veth pair,
// addresses and routes. Node namespaces get no default route: only the bridge network,
// the other nodes' pod networks and the service network are reachable from them.
func (c Config) setupNetwork(ctx context.Context) error {
	steps := [][]string{
		{"ip", "link", "add", BridgeName, "type", "bridge"},
		{"ip", "addr", "add", fmt.Sprintf("%s/%d", BridgeIP, bridgeMaskBits), "dev", BridgeName},
		{"ip", "link", "set", BridgeName, "up"},
	}
	for _, s := range steps {
		if _, err := run(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	if err := runStdin(ctx, guardRules(), "nft", "-f", "-"); err != nil {
		return fmt.Errorf("install guard: %w", err)
	}
	if err := c.rememberRunNetns(); err != nil {
		return err
	}
	for _, n := range c.nodes() {
		if err := c.setupNode(ctx, n); err != nil {
			return fmt.Errorf("network of node %s: %w", n.Name(), err)
		}
	}
	return nil
}

// rememberRunNetns records whether /run/netns existed before us, so local-down removes it
// only if it was ours.
func (c Config) rememberRunNetns() error {
	if _, err := os.Stat("/run/netns"); os.IsNotExist(err) {
		return os.WriteFile(c.runNetnsMarker(), nil, 0o644)
	}
	return nil
}

func (c Config) setupNode(ctx context.Context, n Node) error {
	ns := n.Netns()
	in := func(args ...string) []string { return append([]string{"ip", "-n", ns}, args...) }
	steps := [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "link", "add", n.HostVeth(), "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"ip", "link", "set", n.HostVeth(), "master", BridgeName},
		{"ip", "link", "set", n.HostVeth(), "up"},
		in("link", "set", "lo", "up"),
		in("addr", "add", fmt.Sprintf("%s/%d", n.IP(), bridgeMaskBits), "dev", "eth0"),
		in("link", "set", "eth0", "up"),
		in("route", "add", ServiceCIDR, "via", BridgeIP),
		{"ip", "route", "add", n.PodSubnet(), "via", n.IP()},
	}
	for _, o := range c.nodes() {
		if o.Index != n.Index {
			steps = append(steps, in("route", "add", o.PodSubnet(), "via", o.IP()))
		}
	}
	for _, s := range steps {
		if _, err := run(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	return c.makeCgroupRoot(n)
}

// cgroupHierarchies lists the mounted cgroup hierarchies (v1 controllers and unified).
func cgroupHierarchies() []string {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && (f[2] == "cgroup" || f[2] == "cgroup2") && strings.HasPrefix(f[1], "/sys/fs/cgroup") {
			out = append(out, f[1])
		}
	}
	return out
}

// makeCgroupRoot creates the node's cgroup parent in every hierarchy; kubelet refuses a
// cgroupRoot that does not exist, and cpuset children need cpus and mems before use.
func (c Config) makeCgroupRoot(n Node) error {
	for _, h := range cgroupHierarchies() {
		dir := filepath.Join(h, n.CgroupRoot())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("cgroup %s/%s: %w", dir, f, err)
				}
			}
		}
	}
	return nil
}

// SetLink cuts (up=false) or restores the link of a node to the bridge: a network
// partition of that node from the control plane and the other nodes.
func (c Config) SetLink(ctx context.Context, node int, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	_, err := run(ctx, "ip", "link", "set", Node{Index: node}.HostVeth(), state)
	return err
}

// The outside namespace is a network namespace on the node bridge with no route beyond
// it: what runs there reaches the nodes' addresses (and the load balancer's, which the
// nodes answer for) but neither the pod nor the Service network, as a machine outside the
// Kubernetes cluster would. The e2e suite of external access runs its clients there.
// local-down removes it with the nodes' namespaces.
const (
	OutsideNetns = netnsPrefix + "outside"
	OutsideIP    = bridgePrefix + ".9"
	outsideVeth  = vethPrefix + "o"
)

// AddOutside creates the outside namespace, anew if it exists.
func AddOutside(ctx context.Context) error {
	RemoveOutside(ctx)
	in := func(args ...string) []string { return append([]string{"ip", "-n", OutsideNetns}, args...) }
	for _, s := range [][]string{
		{"ip", "netns", "add", OutsideNetns},
		{"ip", "link", "add", outsideVeth, "type", "veth", "peer", "name", "eth0", "netns", OutsideNetns},
		{"ip", "link", "set", outsideVeth, "master", BridgeName},
		{"ip", "link", "set", outsideVeth, "up"},
		in("link", "set", "lo", "up"),
		in("addr", "add", fmt.Sprintf("%s/%d", OutsideIP, bridgeMaskBits), "dev", "eth0"),
		in("link", "set", "eth0", "up"),
	} {
		if _, err := run(ctx, s[0], s[1:]...); err != nil {
			return fmt.Errorf("outside namespace: %w", err)
		}
	}
	return nil
}

// RemoveOutside deletes the outside namespace (its veth pair goes with it).
func RemoveOutside(ctx context.Context) {
	_, _ = run(ctx, "ip", "netns", "del", OutsideNetns)
	_, _ = run(ctx, "ip", "link", "del", outsideVeth)
}
