package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
)

// External access (spec.externalAccess): every member gets a Service of its own, created
// as soon as its ValkeyNode exists (so a roll's successor and a scale's new members have
// theirs before they join), deleted once the member is gone. When the Service has an
// address, the controller announces it on the member with CONFIG SET, live: only the
// client-facing keys (cluster-announce-client-ipv4, cluster-announce-client-port and
// -tls-port from 9.0, cluster-announce-hostname with cluster-preferred-endpoint-type), so the members
// keep gossiping and replicating over their pod IPs. A member is met by the others only
// once it announces its external address, so no client ever learns a pod IP of it.

// componentExternal is the app.kubernetes.io/component label of the per-member Services.
const componentExternal = "external"

// annotationExternalHash on a per-member Service is the hash of what the operator last
// applied: equal means nothing to write.
const annotationExternalHash = "valkey.io/external-spec-hash"

// The client-facing announce keys the operator sets.
const (
	keyClientIPv4    = "cluster-announce-client-ipv4"
	keyClientPort    = "cluster-announce-client-port"
	keyClientTLSPort = "cluster-announce-client-tls-port"
	keyHostname      = "cluster-announce-hostname"
	keyPreferredType = "cluster-preferred-endpoint-type"
)

// externalLabels are the labels of a member's Service.
func externalLabels(vc *v1alpha1.ValkeyCluster, m *plan.Member) map[string]string {
	l := map[string]string{}
	if vc.Spec.ExternalAccess != nil {
		maps.Copy(l, vc.Spec.ExternalAccess.Labels)
	}
	maps.Copy(l, v1alpha1.ShardLabels(vc.Name, m.Shard()))
	l[v1alpha1.LabelNode] = m.Name()
	l[v1alpha1.LabelComponent] = componentExternal
	return l
}

// externalService is the Service the spec asks for a member.
func externalService(vc *v1alpha1.ValkeyCluster, m *plan.Member) *corev1ac.ServiceApplyConfiguration {
	e := vc.Spec.ExternalAccess
	selector := v1alpha1.ClusterLabels(vc.Name)
	selector[v1alpha1.LabelNode] = m.Name()
	spec := corev1ac.ServiceSpec().
		WithType(corev1.ServiceType(e.Type)).
		WithSelector(selector).
		WithPublishNotReadyAddresses(true).
		WithPorts(corev1ac.ServicePort().WithName("client").WithPort(valkeyconn.Port).WithTargetPort(intstr.FromString("client")))
	if e.ExternalTrafficPolicy != "" {
		spec = spec.WithExternalTrafficPolicy(e.ExternalTrafficPolicy)
	}
	if e.Type == v1alpha1.ExternalAccessLoadBalancer && len(e.LoadBalancerSourceRanges) > 0 {
		spec = spec.WithLoadBalancerSourceRanges(e.LoadBalancerSourceRanges...)
	}
	annotations := maps.Clone(e.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	if h := e.Hostname(m.Name(), vc.Name, vc.Namespace); h != "" {
		annotations[v1alpha1.AnnotationExternalDNSHostname] = h
	}
	svc := corev1ac.Service(v1alpha1.ExternalServiceName(m.Name()), vc.Namespace).
		WithLabels(externalLabels(vc, m)).WithOwnerReferences(ownerRef(vc)).WithSpec(spec)
	b, _ := json.Marshal(struct {
		A map[string]string
		S *corev1ac.ServiceApplyConfiguration
	}{annotations, svc})
	sum := sha256.Sum256(b)
	annotations[annotationExternalHash] = hex.EncodeToString(sum[:8])
	return svc.WithAnnotations(annotations)
}

// reconcileExternal keeps the per-member Services, learns each member's external address
// and announces it on the member's server; with external access off it removes the
// Services and the announcements.
func (r *Reconciler) reconcileExternal(ctx context.Context, s *scope) (time.Duration, error) {
	vc := s.VC
	on := vc.Spec.ExternalAccessEnabled()
	var list corev1.ServiceList
	sel := v1alpha1.ClusterLabels(vc.Name)
	sel[v1alpha1.LabelComponent] = componentExternal
	if err := r.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels(sel)); err != nil {
		return 0, fmt.Errorf("list the members' Services: %w", err)
	}
	have := map[string]*corev1.Service{}
	for i := range list.Items {
		have[list.Items[i].Name] = &list.Items[i]
	}
	wanted := map[string]bool{}
	if on {
		for _, m := range s.Topo.Members {
			name := v1alpha1.ExternalServiceName(m.Name())
			wanted[name] = true
			cfg := externalService(vc, m)
			hash := cfg.Annotations[annotationExternalHash]
			svc := &corev1.Service{}
			if err := r.applyIfChanged(ctx, vc, svc, name, cfg, func(o client.Object) bool {
				return o.GetAnnotations()[annotationExternalHash] == hash
			}); err != nil {
				return 0, err
			}
			if have[name] == nil {
				r.event(vc, nil, eventNormal, "ExternalServiceCreated", "Create", "created Service %s for member %s", name, m.Name())
			}
		}
	}
	for name, svc := range have {
		if wanted[name] || !metav1.IsControlledBy(svc, vc) {
			continue
		}
		if err := r.Delete(ctx, svc); err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("delete Service %s: %w", name, err)
		}
	}
	for _, m := range s.Topo.Members {
		if on {
			m.External = r.externalAddress(ctx, s, m, have[v1alpha1.ExternalServiceName(m.Name())])
		}
		if err := r.announce(ctx, s, m); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

// externalAddress reads where clients reach member m from its Service (nil: not read
// back yet, as it was created this pass).
func (r *Reconciler) externalAddress(ctx context.Context, s *scope, m *plan.Member, svc *corev1.Service) *plan.External {
	e := &plan.External{Hostname: s.VC.Spec.ExternalAccess.Hostname(m.Name(), s.VC.Name, s.VC.Namespace)}
	if svc == nil || len(svc.Spec.Ports) == 0 {
		e.Pending = "its Service is being created"
		return e
	}
	switch s.VC.Spec.ExternalAccessType() {
	case v1alpha1.ExternalAccessLoadBalancer:
		for _, in := range svc.Status.LoadBalancer.Ingress {
			switch {
			case in.IP != "":
				e.Host = in.IP
			case in.Hostname != "" && e.Hostname == "":
				// A load balancer known by name only (AWS): the name is announced.
				e.Host, e.Hostname = in.Hostname, in.Hostname
			}
			if e.Host != "" {
				break
			}
		}
		e.Port = int(svc.Spec.Ports[0].Port)
		if e.Host == "" {
			e.Pending = fmt.Sprintf("Service %s has no load-balancer address yet", svc.Name)
		}
	case v1alpha1.ExternalAccessNodePort:
		e.Port = int(svc.Spec.Ports[0].NodePort)
		if v := m.LiveVersion(); !v.AtLeast(validation.NodePortMinimum.Major, validation.NodePortMinimum.Minor) {
			e.Pending = fmt.Sprintf("its server runs Valkey %s: %s", v, validation.NodePortUnsupported)
			return e
		}
		host, why := r.nodeAddress(ctx, m.Node.Status.NodeName)
		if host == "" {
			e.Pending = why
			return e
		}
		e.Host = host
		if e.Port == 0 {
			e.Host, e.Pending = "", fmt.Sprintf("Service %s has no node port yet", svc.Name)
		}
	}
	return e
}

// nodeAddress is the address of a Kubernetes node clients reach it at: its ExternalIP,
// else its InternalIP; "" and why not when there is none.
func (r *Reconciler) nodeAddress(ctx context.Context, name string) (string, string) {
	if name == "" {
		return "", "its pod is not scheduled on a node yet"
	}
	// Read from the API server, not a cache: a Node informer would need to list every
	// node (and, with watchNamespaces, the chart grants get on nodes only).
	var n corev1.Node
	reader := client.Reader(r.Client)
	if r.APIReader != nil {
		reader = r.APIReader
	}
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		return "", fmt.Sprintf("node %s cannot be read: %v", name, err)
	}
	for _, t := range []corev1.NodeAddressType{corev1.NodeExternalIP, corev1.NodeInternalIP} {
		for _, a := range n.Status.Addresses {
			if ip, err := netip.ParseAddr(a.Address); a.Type == t && err == nil && ip.Is4() {
				return a.Address, ""
			}
		}
	}
	return "", fmt.Sprintf("node %s has no IPv4 ExternalIP or InternalIP address", name)
}

// announceWanted returns the client-facing announce keys member m should run with: its
// external address, or the defaults when it has none to announce.
func announceWanted(m *plan.Member, e *plan.External) map[string]string {
	want := map[string]string{keyClientIPv4: "", keyHostname: "", keyPreferredType: "ip"}
	nine := m.LiveVersion().AtLeast(9, 0)
	if nine {
		want[keyClientPort], want[keyClientTLSPort] = "0", "0"
	}
	if e == nil || e.Host == "" || e.Pending != "" {
		return want
	}
	if ip, err := netip.ParseAddr(e.Host); err == nil && ip.Is4() {
		want[keyClientIPv4] = e.Host
	}
	if e.Hostname != "" {
		want[keyHostname] = e.Hostname
		want[keyPreferredType] = "hostname"
	}
	if nine && e.Port != valkeyconn.Port {
		// With TLS the client port is the TLS one: both carry the node port.
		want[keyClientPort], want[keyClientTLSPort] = strconv.Itoa(e.Port), strconv.Itoa(e.Port)
	}
	return want
}

// announce brings member m's announce keys in line with its external address. Without
// external access it asks the server only when the member announced an address before
// (its status says so), so a cluster that never used it sees no command of this.
func (r *Reconciler) announce(ctx context.Context, s *scope, m *plan.Member) error {
	if !m.Reachable || m.Leaving() && m.External == nil {
		return nil
	}
	if m.External == nil && m.Node.Status.ExternalAddress == "" {
		return nil
	}
	want := announceWanted(m, m.External)
	c, err := r.client(ctx, s, m)
	if err != nil {
		return err
	}
	have, err := c.ConfigGet(ctx, "cluster-announce-*")
	if err != nil {
		return fmt.Errorf("read the announced address of %s: %w", m.Name(), err)
	}
	pref, err := c.ConfigGet(ctx, keyPreferredType)
	if err != nil {
		return fmt.Errorf("read the announced address of %s: %w", m.Name(), err)
	}
	maps.Copy(have, pref)
	diff := map[string]string{}
	for k, v := range want {
		if have[k] != v {
			diff[k] = v
		}
	}
	if len(diff) > 0 {
		if err := c.ConfigSet(ctx, diff); err != nil {
			return fmt.Errorf("announce the external address of %s: %w", m.Name(), err)
		}
		what := "its pod address only"
		if a := m.External.Address(); a != "" && m.External.Pending == "" {
			what = a
		}
		r.event(s.VC, m.Node, eventNormal, "ExternalAddressAnnounced", "Announce", "member %s announces %s to clients (%s)",
			m.Name(), what, strings.Join(slices.Sorted(maps.Keys(diff)), ", "))
	}
	if m.External != nil && m.External.Pending == "" && m.External.Host != "" {
		m.External.Announced = true
	}
	if m.External == nil {
		m.AnnounceReset = true
	}
	return nil
}

// externalCondition is ExternalAddressPending: True while a member waits for its address.
func externalCondition(s *scope, gen int64) metav1.Condition {
	if !s.VC.Spec.ExternalAccessEnabled() {
		return conditions.New(v1alpha1.ConditionExternalAddressPending, false, v1alpha1.ReasonExternalAccessOff,
			"spec.externalAccess is off: members announce their pod addresses", gen)
	}
	if p := s.ExternalPending(); len(p) > 0 {
		return conditions.New(v1alpha1.ConditionExternalAddressPending, true, v1alpha1.ReasonAddressPending,
			fmt.Sprintf("%d members have no external address yet: %s", len(p), strings.Join(p, "; ")), gen)
	}
	if u := s.ExternalUnseen(); len(u) > 0 {
		return conditions.New(v1alpha1.ConditionExternalAddressPending, true, v1alpha1.ReasonAddressNotPropagated,
			fmt.Sprintf("%d members' external addresses are not known to every member yet: %s", len(u), strings.Join(u, "; ")), gen)
	}
	return conditions.New(v1alpha1.ConditionExternalAddressPending, false, v1alpha1.ReasonAddressesAnnounced,
		fmt.Sprintf("every member announces its %s address", s.VC.Spec.ExternalAccessType()), gen)
}

// seedEndpoints are the announced external addresses of the members that serve slots.
func seedEndpoints(s *scope) []string {
	var out []string
	for _, m := range s.Topo.Members {
		if m.External != nil && m.External.Announced && !m.Leaving() && m.IsPrimary() && len(m.Slots()) > 0 {
			out = append(out, m.External.Address())
		}
	}
	slices.Sort(out)
	return out
}

// memberExternalAddress is the address member m's status reports: the announced one; the
// one reported before while this pass could not tell (its server did not answer, or
// external access was turned off and the server does not announce its pod address yet).
func memberExternalAddress(s *scope, m *plan.Member) string {
	switch {
	case !s.VC.Spec.ExternalAccessEnabled() && m.AnnounceReset:
		return ""
	case !s.VC.Spec.ExternalAccessEnabled():
		// Kept until the server is back to its pod address: the next pass asks again.
		return m.Node.Status.ExternalAddress
	case m.External != nil && m.External.Announced:
		return m.External.Address()
	case !m.Reachable:
		return m.Node.Status.ExternalAddress
	}
	return ""
}

// announcedBefore reports whether a member's status says it announced an external address.
func announcedBefore(nodes []*v1alpha1.ValkeyNode) bool {
	for _, vn := range nodes {
		if vn.Status.ExternalAddress != "" {
			return true
		}
	}
	return false
}
