package certs

import (
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// Names are the names a cluster's certificate covers, as CertificateNames computes them.
type Names struct {
	// DNSNames and IPAddresses are every name and address the cluster is reached by,
	// sorted and without duplicates: what the tls-controller asks cert-manager for, and
	// what status.tls.missingNames reports of a certificate cert-manager issued.
	DNSNames    []string
	IPAddresses []string
	// Checked are the names clients verify a member's certificate against: the client
	// Service's, then each member's external hostname (sorted). status.tls.missingNames
	// reports these of a Secret you keep, as it always has: the other names are not
	// asked of a certificate someone made by hand.
	Checked []string
}

// All is DNSNames followed by IPAddresses.
func (n Names) All() []string {
	return append(slices.Clone(n.DNSNames), n.IPAddresses...)
}

// CertificateNames computes every name the certificate of cluster vc, whose members are
// nodes, must cover:
//
//   - the client Service and the headless Service of the members, each as a client in
//     the namespace, another namespace and another cluster writes it ({svc},
//     {svc}.{ns}, {svc}.{ns}.svc and {svc}.{ns}.svc.{clusterDomain});
//   - with workloadType StatefulSet, each member's pod by its name under the headless
//     Service, as a wildcard (*.{cluster}-nodes.{ns}.svc and its fully qualified form):
//     the other workload types give pods no such name;
//   - with spec.externalAccess.hostnameTemplate, each member's hostname: the template
//     with a wildcard for {member} when {member} is its first label (so the certificate
//     covers members before they exist, and rolls and scales do not change it), each
//     member's own name otherwise;
//   - with external access but no template, each member's external address as the
//     member announces it (ValkeyNode status.externalAddress): an IP address (a load
//     balancer's, a node's) or a load balancer's DNS name;
//   - the names and addresses of spec.tls.certManager.
//
// Members being deleted are left out. Pod IPs are not: they change with every restart,
// so clients that reach members by pod IP (cluster redirections inside Kubernetes) must
// not verify the host name.
func CertificateNames(vc *v1alpha1.ValkeyCluster, nodes []v1alpha1.ValkeyNode, clusterDomain string) Names {
	domain := strings.TrimSuffix(clusterDomain, ".")
	ns := vc.Namespace
	service := func(name string) []string {
		return []string{name, name + "." + ns, name + "." + ns + ".svc", name + "." + ns + ".svc." + domain}
	}
	client := service(v1alpha1.ClientServiceName(vc.Name))
	var out Names
	out.Checked = slices.Clone(client[2:])
	dns := append(client, service(v1alpha1.HeadlessServiceName(vc.Name))...)
	if vc.Spec.Workload() == v1alpha1.WorkloadStatefulSet {
		pods := "*." + v1alpha1.HeadlessServiceName(vc.Name) + "." + ns + ".svc"
		dns = append(dns, pods, pods+"."+domain)
	}
	var ips []string
	members := current(nodes)
	ext := vc.Spec.ExternalAccess
	switch {
	case ext != nil && ext.HostnameTemplate != "":
		var hostnames []string
		for _, vn := range members {
			hostnames = append(hostnames, ext.Hostname(vn.Name, vc.Name, ns))
		}
		slices.Sort(hostnames)
		out.Checked = append(out.Checked, hostnames...)
		if p := ext.HostnamePattern(vc.Name, ns); strings.HasPrefix(p, "*.") && !strings.Contains(p[2:], "*") {
			dns = append(dns, p)
		} else {
			dns = append(dns, hostnames...)
		}
	case vc.Spec.ExternalAccessEnabled():
		for _, vn := range members {
			host, _, err := net.SplitHostPort(vn.Status.ExternalAddress)
			switch {
			case err != nil || host == "":
			case isIP(host):
				ips = append(ips, host)
			default:
				dns = append(dns, host)
			}
		}
	}
	if t := vc.Spec.TLS; t != nil && t.CertManager != nil {
		dns = append(dns, t.CertManager.DNSNames...)
		ips = append(ips, t.CertManager.IPAddresses...)
	}
	out.DNSNames = sortedUnique(dns)
	out.IPAddresses = sortedAddresses(ips)
	return out
}

// current are the members that are not being deleted.
func current(nodes []v1alpha1.ValkeyNode) []*v1alpha1.ValkeyNode {
	var out []*v1alpha1.ValkeyNode
	for i := range nodes {
		if nodes[i].DeletionTimestamp.IsZero() {
			out = append(out, &nodes[i])
		}
	}
	return out
}

func isIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// sortedUnique sorts names and drops duplicates (DNS names compare without case).
func sortedUnique(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, strings.ToLower(n))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sortedAddresses writes each address in its canonical form, sorts them (IPv4 first)
// and drops duplicates and what is no address.
func sortedAddresses(ips []string) []string {
	var addrs []netip.Addr
	for _, s := range ips {
		if a, err := netip.ParseAddr(s); err == nil {
			addrs = append(addrs, a.Unmap())
		}
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	addrs = slices.Compact(addrs)
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.String())
	}
	return out
}
