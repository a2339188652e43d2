package cluster

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/membership"
)

const (
	// exitTTL is how long a server's reported exit stays a proof of its death after the
	// report was seen: a takeover acts on it within seconds, and a server that came back
	// with the same ID and went silent later must not be taken for dead on an old report.
	exitTTL = time.Minute
	// maxExitsPerCluster bounds what one cluster's members can make the controller
	// remember (the oldest go first).
	maxExitsPerCluster = 64
)

// exits remembers, per cluster, the servers' exits its members reported (ServerDown
// True, ContainerExited) by the node ID they had, as each member's update arrives. A
// member whose pod is replaced (a Deployment's, a bare Pod's) reports the exit, then,
// as soon as the new pod's server answers, no exit at all; a pass that reads the member
// after that would not know the old server is gone, and would wait for Valkey's own
// failover (plan.Topology.Exited).
type exits struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[string]exitSeen
}

// exitSeen is a reported exit and when the controller saw the report.
type exitSeen struct {
	plan.Exit
	seen time.Time
}

// mapAndNote notes vn's reported exit (see note) and maps vn to its cluster's request.
func (x *exits) mapAndNote(clock func() time.Time) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		if vn, ok := o.(*v1alpha1.ValkeyNode); ok {
			x.note(vn, clock())
		}
		return membership.ClusterOf(ctx, o)
	}
}

// note records the exit vn reports for the server with the node ID its status records.
func (x *exits) note(vn *v1alpha1.ValkeyNode, now time.Time) {
	c := conditions.Get(vn.Status.Conditions, v1alpha1.ConditionServerDown)
	if vn.Spec.ClusterName == "" || vn.Status.NodeID == "" || c == nil || c.Status != metav1.ConditionTrue ||
		c.Reason != v1alpha1.ReasonContainerExited {
		return
	}
	key := types.NamespacedName{Namespace: vn.Namespace, Name: vn.Spec.ClusterName}
	since := c.LastTransitionTime.Time
	if since.IsZero() {
		since = now
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil {
		x.m = map[types.NamespacedName]map[string]exitSeen{}
	}
	byID := x.m[key]
	if byID == nil {
		byID = map[string]exitSeen{}
		x.m[key] = byID
	}
	if _, ok := byID[vn.Status.NodeID]; !ok && len(byID) >= maxExitsPerCluster {
		oldest := ""
		for id, e := range byID {
			if oldest == "" || e.seen.Before(byID[oldest].seen) {
				oldest = id
			}
		}
		delete(byID, oldest)
	}
	byID[vn.Status.NodeID] = exitSeen{Exit: plan.Exit{Why: c.Message, Since: since}, seen: now}
}

// get returns the cluster's exits seen within exitTTL of now, but those of node IDs
// alive says answer again, which it forgets.
func (x *exits) get(key types.NamespacedName, now time.Time, alive func(id string) bool) map[string]plan.Exit {
	x.mu.Lock()
	defer x.mu.Unlock()
	byID := x.m[key]
	var out map[string]plan.Exit
	for id, e := range byID {
		if now.Sub(e.seen) > exitTTL || alive(id) {
			delete(byID, id)
			continue
		}
		if out == nil {
			out = map[string]plan.Exit{}
		}
		out[id] = e.Exit
	}
	if len(byID) == 0 {
		delete(x.m, key)
	}
	return out
}

// forget drops what is remembered of a cluster.
func (x *exits) forget(key types.NamespacedName) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.m, key)
}
