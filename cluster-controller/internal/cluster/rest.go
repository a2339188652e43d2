package cluster

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// A cluster at rest costs one command every RestPeriod (30 s), whatever its size.
//
// A pass reads every member (CLUSTER NODES, INFO, CLUSTER INFO). Once a pass finds the
// spec applied and nothing to wait for, the controller remembers what that pass saw:
// the resource versions of the cluster and of everything it reads from Kubernetes (its
// members, Services, budgets and NetworkPolicy), and one member's CLUSTER NODES reduced
// to what a change of the Valkey cluster would change (the rest fingerprint: node IDs,
// addresses, roles, failure flags, links, config epochs, slots). The next periodic pass
// asks that member for CLUSTER NODES only: while the fingerprint and the versions are
// the same, nothing has changed that a pass would act on, and it ends there. Anything
// else (a watch event that changed a version, a failover Valkey made on its own, a
// member flagged failing, that member not answering, a restart of the controller, which
// forgets) runs the whole pass.

// restState is what the last pass at rest saw of a cluster.
type restState struct {
	// inputs are the resource versions the pass read from Kubernetes.
	inputs string
	// addr is the member whose view was taken, view its fingerprint.
	addr, view string
}

// restInputs lists the resource versions of what a pass reads from Kubernetes about vc.
func (r *Reconciler) restInputs(ctx context.Context, vc *v1alpha1.ValkeyCluster, nodes []*v1alpha1.ValkeyNode) (string, error) {
	parts := []string{vc.ResourceVersion}
	for _, vn := range nodes {
		parts = append(parts, "node/"+vn.Name+"/"+vn.ResourceVersion)
	}
	sel := client.MatchingLabels(v1alpha1.ClusterLabels(vc.Name))
	for _, list := range []client.ObjectList{&corev1.ServiceList{}, &policyv1.PodDisruptionBudgetList{}, &networkingv1.NetworkPolicyList{}} {
		if err := r.List(ctx, list, client.InNamespace(vc.Namespace), sel); err != nil {
			return "", err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return "", err
		}
		for _, item := range items {
			o, err := meta.Accessor(item)
			if err != nil {
				return "", err
			}
			parts = append(parts, fmt.Sprintf("%T/%s/%s", list, o.GetName(), o.GetResourceVersion()))
		}
	}
	slices.Sort(parts[1:])
	return strings.Join(parts, ","), nil
}

// restFingerprint reduces a CLUSTER NODES view to what changes when the cluster does.
func restFingerprint(view []valkey.ClusterNode) string {
	lines := make([]string, 0, len(view))
	for _, n := range view {
		lines = append(lines, fmt.Sprintf("%s %s %v/%v/%v/%v/%v %s %d %v %v",
			n.ID, n.Addr(), n.Primary, n.Fail, n.PFail, n.Handshake, n.NoAddr, n.PrimaryID, n.ConfigEpoch, n.Connected, n.Slots))
	}
	slices.Sort(lines)
	h := fnv.New64a()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return fmt.Sprintf("%x", h.Sum64())
}

// rememberRest records what a pass that ended at rest saw: inputs, the versions it read
// before acting (a write of the pass returns newer versions, and a write that changed
// nothing returns the latest one, which may hold a change the pass never read); any
// other pass forgets it.
func (r *Reconciler) rememberRest(s *scope, inputs string, atRest bool) {
	if !atRest || inputs == "" {
		r.rest.Delete(s.VC.UID)
		return
	}
	for _, m := range s.Topo.Members {
		if m.Reachable && m.Self.Primary {
			r.rest.Store(s.VC.UID, restState{inputs: inputs, addr: m.Addr, view: restFingerprint(m.View)})
			return
		}
	}
	r.rest.Delete(s.VC.UID)
}

// passInputs are the versions a pass reads, before it acts ("" when unreadable).
func (r *Reconciler) passInputs(ctx context.Context, s *scope) string {
	nodes := make([]*v1alpha1.ValkeyNode, 0, len(s.Topo.Members))
	for _, m := range s.Topo.Members {
		nodes = append(nodes, m.Node)
	}
	inputs, err := r.restInputs(ctx, s.VC, nodes)
	if err != nil {
		return ""
	}
	return inputs
}

// stillAtRest reports whether vc is as the last pass at rest left it: the same
// versions, and the same fingerprint from the same member, asked now.
func (r *Reconciler) stillAtRest(ctx context.Context, vc *v1alpha1.ValkeyCluster) bool {
	v, ok := r.rest.Load(vc.UID)
	if !ok {
		return false
	}
	prev := v.(restState)
	nodes, err := r.listMembers(ctx, vc)
	if err != nil {
		return false
	}
	if inputs, err := r.restInputs(ctx, vc, nodes); err != nil || inputs != prev.inputs {
		return false
	}
	cred, err := valkeyconn.ForCluster(ctx, r.Client, vc)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := r.Pool.Client(ctx, prev.addr, cred)
	if err != nil {
		return false
	}
	view, err := c.ClusterNodes(ctx)
	if err != nil {
		r.Pool.Drop(c)
		return false
	}
	return restFingerprint(view) == prev.view
}
