package plan

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/valkey-operator/valkey-operator/valkey"
)

// External is what a pass knows of one member's external address.
type External struct {
	// Host and port clients reach the member at ("" while pending).
	Host string
	Port int
	// Hostname from the template, announced instead of the address when set.
	Hostname string
	// Pending says why there is no address yet.
	Pending string
	// announced: the member's server announces it (CONFIG GET agrees).
	Announced bool
}

// Address is "host:port" as clients use it: the hostname when there is one.
func (e *External) Address() string {
	if e == nil || e.Host == "" {
		return ""
	}
	h := e.Host
	if e.Hostname != "" {
		h = e.Hostname
	}
	return net.JoinHostPort(h, strconv.Itoa(e.Port))
}

// ClientView rewrites, in every member's CLUSTER NODES, the address a member announces to
// clients back to its pod address. A server shows the client-facing address (the
// announced client IPv4 and port) to every client, the operator included, while the
// members reach each other at the pod addresses: the topology is about the latter.
func ClientView(members []*Member) {
	type pod struct {
		ip   string
		port int
	}
	announced := map[string]map[string]pod{} // node ID -> announced "ip:port" -> pod address
	add := func(id, addr string, m *Member) {
		_, port, err := m.HostPort()
		if id == "" || addr == "" || m.IP() == "" || err != nil {
			return
		}
		if announced[id] == nil {
			announced[id] = map[string]pod{}
		}
		announced[id][addr] = pod{m.IP(), port}
	}
	for _, m := range members {
		if m.Reachable && m.Self.IP != "" && m.Self.IP != m.IP() {
			add(m.Self.ID, m.Self.Addr(), m)
		}
		if a := m.Node.Status.ExternalAddress; a != "" {
			add(m.Node.Status.NodeID, a, m)
		}
	}
	if len(announced) == 0 {
		return
	}
	markUnseen(members)
	fix := func(n *valkey.ClusterNode) {
		if p, ok := announced[n.ID][n.Addr()]; ok {
			n.IP, n.Port = p.ip, p.port
		}
	}
	for _, m := range members {
		for i := range m.View {
			fix(&m.View[i])
		}
		fix(&m.Self)
	}
}

// markUnseen records, on every member that announces a client address of its own (its
// own line of CLUSTER NODES shows another address than its pod's, or a hostname), the
// members whose view shows it otherwise. Valkey spreads an announced address by gossip,
// from the member itself: until a member has heard it, the member redirects clients to
// the pod address.
func markUnseen(members []*Member) {
	byID := map[string]*Member{}
	for _, m := range members {
		m.UnseenBy = nil
		if m.Reachable && m.Self.ID != "" && (m.Self.IP != "" && m.Self.IP != m.IP() || m.Self.Hostname != "") {
			byID[m.Self.ID] = m
		}
	}
	for _, v := range members {
		if !v.Reachable {
			continue
		}
		for _, n := range v.View {
			p, ok := byID[n.ID]
			if !ok || p == v || n.Myself || n.Handshake || n.NoAddr {
				continue
			}
			if n.Addr() != p.Self.Addr() || n.Hostname != p.Self.Hostname {
				p.UnseenBy = append(p.UnseenBy, v.Name())
			}
		}
	}
}

// ExternalReady reports whether member m may be introduced to the cluster: without
// external access always; with it once it announces its external address.
func (c *Cluster) ExternalReady(m *Member) bool {
	return !c.VC.Spec.ExternalAccessEnabled() || m.External != nil && m.External.Announced
}

// ExternalPending lists the members (not leaving) that have no announced external address.
func (c *Cluster) ExternalPending() []string {
	if !c.VC.Spec.ExternalAccessEnabled() {
		return nil
	}
	var out []string
	for _, m := range c.Topo.Members {
		if m.Leaving() || c.ExternalReady(m) {
			continue
		}
		why := "its server does not answer"
		if m.External != nil && m.External.Pending != "" {
			why = m.External.Pending
		}
		out = append(out, m.Name()+": "+why)
	}
	return out
}

// ExternalKnown reports whether every member knows member m and shows it at its
// announced external address, so that no redirection or slot map names its pod address:
// always without external access.
func (c *Cluster) ExternalKnown(m *Member) bool {
	return !c.VC.Spec.ExternalAccessEnabled() || len(m.UnseenBy) == 0 && c.Topo.FormedWith(m)
}

// ExternalUnseen lists the members (not leaving) whose announced address some members do
// not show yet.
func (c *Cluster) ExternalUnseen() []string {
	if !c.VC.Spec.ExternalAccessEnabled() {
		return nil
	}
	var out []string
	for _, m := range c.Topo.Members {
		if m.Leaving() || !c.ExternalReady(m) || c.ExternalKnown(m) {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s not known to %s yet", m.Name(), m.External.Address(), strings.Join(m.UnseenBy, ", ")))
	}
	return out
}
