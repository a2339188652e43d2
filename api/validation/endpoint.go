package validation

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// EndpointPolicy decides which object-store endpoints a spec may name. Object stores
// are reached from Jobs in the tenant's namespace, so an endpoint is a way for whoever
// writes a ValkeyBackup to make those Jobs send requests (with the store's credentials)
// to an address of their choosing: the node's metadata service, the Kubernetes API
// server, a process on the node's loopback. Some addresses are refused unless the
// administrator's allow-list names them one by one (deniedNetworks, the API server's
// addresses), some names always (deniedHosts); an allow-list, when set, admits nothing
// else.
//
// The same policy serves at admission (CheckEndpoint, on the URL as written) and, for a
// client that resolves the host itself, on every address it is about to dial
// (CheckAddress), so a name that resolves to a refused address is refused too.
type EndpointPolicy struct {
	// Allowed, when not empty, is the only endpoints admitted.
	Allowed EndpointAllowList
	// APIServer are the Kubernetes API server's addresses (its Service's ClusterIP from
	// KUBERNETES_SERVICE_HOST, and those the administrator lists), refused.
	APIServer []netip.Prefix
}

// EndpointAllowList is the administrator's list of admitted endpoints.
type EndpointAllowList struct {
	// Hosts are host name suffixes: "example.com" admits example.com and every name
	// under it (s3.example.com); ".example.com" admits only the names under it.
	Hosts []string
	// Networks admit endpoints written as an IP address within one of them, and the
	// addresses names resolve to.
	Networks []netip.Prefix
}

// EndpointRefusedError is a refusal by the endpoint policy (other errors of
// CheckEndpoint say the URL is malformed).
type EndpointRefusedError struct {
	// What names the refused address or host and why it is refused.
	What string
}

func (e *EndpointRefusedError) Error() string {
	return e.What + " refused by the operator's object-store endpoint policy"
}

func refused(format string, args ...any) error {
	return &EndpointRefusedError{What: fmt.Sprintf(format, args...)}
}

// deniedNetworks are refused whatever the administrator allows: addresses that reach
// the node itself or its cloud's metadata service rather than an object store. The
// first match names the refusal.
var deniedNetworks = []struct {
	network netip.Prefix
	what    string
}{
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback address"},
	{netip.MustParsePrefix("::1/128"), "loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local address"}, // 169.254.169.254: AWS, GCP, Azure, OpenStack metadata
	{netip.MustParsePrefix("fe80::/10"), "link-local address"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified address"},
	{netip.MustParsePrefix("::/128"), "unspecified address"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata address"},  // AWS, IPv6
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata address"}, // Alibaba Cloud
}

// deniedHosts are host names refused whatever the administrator allows.
var deniedHosts = []struct {
	name string
	// under refuses the names under name too; inCluster the name followed by any
	// cluster domain (kubernetes.default.svc.cluster.local).
	under, inCluster bool
	what             string
}{
	{name: "localhost", under: true, what: "loopback host name"},
	{name: "metadata", what: "cloud metadata host name"},
	{name: "metadata.google.internal", what: "cloud metadata host name"},
	{name: "kubernetes", what: "the Kubernetes API server's Service name"},
	{name: "kubernetes.default", what: "the Kubernetes API server's Service name"},
	{name: "kubernetes.default.svc", inCluster: true, what: "the Kubernetes API server's Service name"},
}

// nat64 is the well-known NAT64 prefix: its addresses carry an IPv4 address that a
// NAT64 gateway dials.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// CheckEndpoint checks an endpoint URL as written in a spec: a host that is an IP
// address must be allowed by CheckAddress, a host name must be a DNS name that is not
// refused and, with an allow-list, ends in one of its suffixes. The error wraps
// *EndpointRefusedError when the policy refuses the host.
func (p EndpointPolicy) CheckEndpoint(u *url.URL) error {
	host := normalizeHost(u.Hostname())
	if host == "" {
		return errors.New("must name a host")
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		return p.CheckAddress("", addr)
	}
	return p.checkHostName(host)
}

// CheckAddress checks an address about to be dialed for host (the endpoint's host name,
// or "" when the endpoint names the address itself): the refused addresses always
// apply; with an allow-list, the address must be in one of its networks, or host must
// end in one of its suffixes. A client that resolves names calls it for every address
// it dials (for example from a net.Dialer's Control function), so a name resolving to
// the metadata service is refused like the address itself.
func (p EndpointPolicy) CheckAddress(host string, addr netip.Addr) error {
	addr = addr.WithZone("").Unmap()
	if err := p.checkDenied(addr); err != nil {
		return err
	}
	if nat64.Contains(addr) {
		b := addr.As16()
		var inner *EndpointRefusedError
		if err := p.checkDenied(netip.AddrFrom4([4]byte(b[12:16]))); errors.As(err, &inner) {
			return refused("NAT64 address %s of a %s", addr, inner.What)
		}
	}
	if len(p.Allowed.Hosts) == 0 && len(p.Allowed.Networks) == 0 {
		return nil
	}
	for _, n := range p.Allowed.Networks {
		if n.Contains(addr) {
			return nil
		}
	}
	if host = normalizeHost(host); host != "" && p.Allowed.matchesHost(host) {
		return nil
	}
	return refused("address %s, outside the allow-list (%s),", addr, p.Allowed)
}

// checkDenied refuses the addresses no object store has, unless the allow-list names
// the address within the refused range itself (exempts).
func (p EndpointPolicy) checkDenied(addr netip.Addr) error {
	for _, d := range deniedNetworks {
		if d.network.Contains(addr) && !p.Allowed.exempts(d.network, addr) {
			return refused("%s (%s)", d.what, describePrefix(d.network))
		}
	}
	for _, n := range p.APIServer {
		if n.Contains(addr) && !p.Allowed.exempts(n, addr) {
			return refused("the Kubernetes API server's address (%s)", describePrefix(n))
		}
	}
	return nil
}

// exempts reports whether the allow-list admits addr of the refused range denied: only
// a listed network that holds addr and lies within denied does (127.0.0.1/32 admits a
// store on the loopback, for tests), never a wider one (0.0.0.0/0 admits no refused
// address).
func (l EndpointAllowList) exempts(denied netip.Prefix, addr netip.Addr) bool {
	for _, n := range l.Networks {
		if n.Contains(addr) && n.Bits() >= denied.Bits() && denied.Contains(n.Addr()) {
			return true
		}
	}
	return false
}

// checkHostName checks a host name (lower case, no trailing dot).
func (p EndpointPolicy) checkHostName(host string) error {
	if msgs := validation.IsDNS1123Subdomain(host); len(msgs) > 0 {
		return fmt.Errorf("host %q is neither an IP address nor a DNS name: %s", host, strings.Join(msgs, "; "))
	}
	if numericLabel(host[strings.LastIndex(host, ".")+1:]) {
		return fmt.Errorf("host %q is neither a DNS name nor an IP address in its usual form "+
			"(resolvers read names such as 2130706433 or 127.1 as addresses)", host)
	}
	for _, d := range deniedHosts {
		if host == d.name || (d.under && strings.HasSuffix(host, "."+d.name)) || (d.inCluster && strings.HasPrefix(host, d.name+".")) {
			return refused("%s (%s)", d.what, host)
		}
	}
	if len(p.Allowed.Hosts) == 0 && len(p.Allowed.Networks) == 0 {
		return nil
	}
	if p.Allowed.matchesHost(host) {
		return nil
	}
	return refused("host %s, outside the allow-list (%s),", host, p.Allowed)
}

// matchesHost reports whether host ends in one of the allowed suffixes.
func (l EndpointAllowList) matchesHost(host string) bool {
	for _, s := range l.Hosts {
		if strings.HasPrefix(s, ".") {
			if strings.HasSuffix(host, s) {
				return true
			}
			continue
		}
		if host == s || strings.HasSuffix(host, "."+s) {
			return true
		}
	}
	return false
}

// String lists the allow-list for messages.
func (l EndpointAllowList) String() string {
	parts := slices.Clone(l.Hosts)
	for _, n := range l.Networks {
		parts = append(parts, describePrefix(n))
	}
	return "policy.objectStore.allowedEndpoints: " + strings.Join(parts, ", ")
}

// The flags that carry an endpoint policy: every component's (internal/operator.
// PolicyFlags) and the backup Jobs', to which the backup-controller passes its own
// policy (EndpointPolicy.Args).
const (
	FlagAllowedEndpoints       = "object-store-allowed-endpoints"
	FlagKubernetesAPIAddresses = "kubernetes-api-addresses"
)

// Args are the flags that give a program this policy, for ParseEndpointPolicy to read
// back: the allow-list and every API server address (the one from
// KUBERNETES_SERVICE_HOST included).
func (p EndpointPolicy) Args() []string {
	var out []string
	if v := p.Allowed.flagValue(); v != "" {
		out = append(out, "--"+FlagAllowedEndpoints+"="+v)
	}
	if len(p.APIServer) > 0 {
		out = append(out, "--"+FlagKubernetesAPIAddresses+"="+joinPrefixes(p.APIServer))
	}
	return out
}

// ParseEndpointPolicy reads the values of the two flags (FlagAllowedEndpoints,
// FlagKubernetesAPIAddresses), naming the flag of a bad value.
func ParseEndpointPolicy(allowed, apiAddresses string) (EndpointPolicy, error) {
	var p EndpointPolicy
	var err error
	if p.Allowed, err = ParseEndpointAllowList(allowed); err != nil {
		return EndpointPolicy{}, fmt.Errorf("--%s: %w", FlagAllowedEndpoints, err)
	}
	if p.APIServer, err = ParseNetworks(apiAddresses); err != nil {
		return EndpointPolicy{}, fmt.Errorf("--%s: %w", FlagKubernetesAPIAddresses, err)
	}
	return p, nil
}

// flagValue writes the allow-list as ParseEndpointAllowList reads it.
func (l EndpointAllowList) flagValue() string {
	parts := slices.Clone(l.Hosts)
	if len(l.Networks) > 0 {
		parts = append(parts, joinPrefixes(l.Networks))
	}
	return strings.Join(parts, ",")
}

func joinPrefixes(ns []netip.Prefix) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = describePrefix(n)
	}
	return strings.Join(parts, ",")
}

// ParseEndpointAllowList reads a comma-separated list of host name suffixes
// (minio.storage.svc, .example.com) and IP addresses or CIDRs (10.0.0.0/8).
func ParseEndpointAllowList(s string) (EndpointAllowList, error) {
	var l EndpointAllowList
	for _, e := range splitList(s) {
		if strings.Contains(e, "://") {
			return EndpointAllowList{}, fmt.Errorf("%q is a URL: list host name suffixes and CIDRs", e)
		}
		if n, err := parseNetwork(e); err == nil || strings.Contains(e, "/") {
			if err != nil {
				return EndpointAllowList{}, err
			}
			l.Networks = append(l.Networks, n)
			continue
		}
		name := normalizeHost(e)
		if msgs := validation.IsDNS1123Subdomain(strings.TrimPrefix(name, ".")); len(msgs) > 0 {
			return EndpointAllowList{}, fmt.Errorf("%q is neither a CIDR, an IP address nor a host name suffix: %s", e, strings.Join(msgs, "; "))
		}
		l.Hosts = append(l.Hosts, name)
	}
	return l, nil
}

// ParseNetworks reads a comma-separated list of IP addresses and CIDRs.
func ParseNetworks(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, e := range splitList(s) {
		n, err := parseNetwork(e)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// parseNetwork reads an IP address (a network of one) or a CIDR.
func parseNetwork(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		n, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR: %w", s, err)
		}
		return n.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address: %w", s, err)
	}
	a = a.WithZone("").Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func (p EndpointPolicy) clone() EndpointPolicy {
	return EndpointPolicy{
		Allowed:   EndpointAllowList{Hosts: slices.Clone(p.Allowed.Hosts), Networks: slices.Clone(p.Allowed.Networks)},
		APIServer: slices.Clone(p.APIServer),
	}
}

// normalizeHost lowers a host name and drops the trailing dot of a fully qualified one.
func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}

// numericLabel reports whether a name's last label is a number (decimal, or hex with
// 0x): such names are IPv4 addresses to inet_aton, and no top-level domain looks so.
func numericLabel(l string) bool {
	if hex, ok := strings.CutPrefix(l, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return l != "" && strings.Trim(l, "0123456789") == ""
}

// describePrefix writes a network of one address as the address.
func describePrefix(n netip.Prefix) string {
	if n.IsSingleIP() {
		return n.Addr().String()
	}
	return n.String()
}
