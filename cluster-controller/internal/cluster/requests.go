package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// Requests users make through the ValkeyCluster's annotations (kubectl valkey failover,
// restart, pause): the cluster-controller carries them out with its own machinery and
// reports them in conditions and events. Restarts enter the members' specs
// (desiredSpec, restartedAt); pausing is in newScope; a failover request is here.

// paused reports whether the cluster's annotations pause it.
func paused(vc *v1alpha1.ValkeyCluster) bool {
	return vc.Annotations[v1alpha1.AnnotationPaused] == "true"
}

// failoverRequest is a parsed valkey.io/failover annotation.
type failoverRequest struct {
	shard  int32
	member string
}

// parseFailoverRequest reads "<shard>" or "<shard>/<member>".
func parseFailoverRequest(v string) (failoverRequest, error) {
	shard, member, _ := strings.Cut(strings.TrimSpace(v), "/")
	n, err := strconv.ParseInt(shard, 10, 32)
	if err != nil || n < 0 {
		return failoverRequest{}, fmt.Errorf("%q is not <shard> or <shard>/<member>", v)
	}
	return failoverRequest{shard: int32(n), member: member}, nil
}

// reconcileFailoverRequest carries out a planned failover a user asked for with the
// valkey.io/failover annotation, through the same path as the roll's failovers (one
// CLUSTER FAILOVER on a replica in sync, recorded on the replica and counted once it
// serves the shard). A request without a member names the replica chosen ("<shard>/<member>")
// when it is asked, so later passes follow the same one; a failover that times out is
// asked again. The annotation is removed once the member serves the shard, or with a
// FailoverRefused event when the request cannot be done; while the shard is not ready
// for it (a replica not in sync yet, a failover in flight, the cluster settling), it waits.
func (r *Reconciler) reconcileFailoverRequest(ctx context.Context, s *scope) (time.Duration, error) {
	raw, ok := s.vc.Annotations[v1alpha1.AnnotationFailover]
	if !ok {
		return 0, nil
	}
	refuse := func(format string, args ...any) (time.Duration, error) {
		r.event(s.vc, nil, eventWarning, "FailoverRefused", "Failover", "failover request %q refused: %s", raw, fmt.Sprintf(format, args...))
		return 0, r.closeClusterRequest(ctx, s, v1alpha1.AnnotationFailover, raw, "")
	}
	req, err := parseFailoverRequest(raw)
	if err != nil {
		return refuse("%v", err)
	}
	if req.shard >= s.shards() {
		return refuse("the cluster has %d shards (0 to %d)", s.shards(), s.shards()-1)
	}
	wait := func(format string, args ...any) (time.Duration, error) {
		s.progress(v1alpha1.ReasonFailingOver, "requested failover of shard %d: %s", req.shard, fmt.Sprintf(format, args...))
		return 0, nil // the other phases go on; the pass comes back soon
	}
	s.lookAgainWithin(requeueWait)
	p := s.topo.primaryOf(req.shard)
	var target *member
	if req.member != "" {
		for _, m := range s.topo.shards[req.shard] {
			if m.name() == req.member && !m.leaving() {
				target = m
			}
		}
		switch {
		case target == nil:
			return refuse("%s is not a member of shard %d", req.member, req.shard)
		case target == p && len(p.slots()) > 0:
			r.event(s.vc, p.node, eventNormal, "FailoverRequestDone", "Failover", "%s serves shard %d", p.name(), req.shard)
			return 0, r.closeClusterRequest(ctx, s, v1alpha1.AnnotationFailover, raw, "")
		}
	} else if s.replicas() == 0 {
		return refuse("shard %d has no replica to take over", req.shard)
	}
	if !s.settled() {
		return wait("waiting for the cluster to settle")
	}
	if p == nil || !p.reachable {
		return wait("waiting for the shard's primary to answer")
	}
	if target == nil {
		var inSync []*member
		for _, m := range s.active(req.shard) {
			if m != p && synced(m, p) {
				inSync = append(inSync, m)
			}
		}
		if len(inSync) == 0 {
			return wait("waiting for a replica in sync")
		}
		target = mostCaughtUp(inSync)
	}
	if !synced(target, p) {
		return wait("waiting for %s to be in sync with %s", target.name(), p.name())
	}
	if err := r.failover(ctx, s, target, "requested through the "+v1alpha1.AnnotationFailover+" annotation"); err != nil {
		return 0, err
	}
	if named := fmt.Sprintf("%d/%s", req.shard, target.name()); named != raw {
		// Later passes follow this replica, and close the request once it serves.
		return requeueFast, r.closeClusterRequest(ctx, s, v1alpha1.AnnotationFailover, raw, named)
	}
	return 0, nil
}

// closeClusterRequest removes a request annotation from the cluster (or, with next, sets
// it to next), on the condition that it still holds the value this pass acted on (a newer
// request stays). The patch is made on a copy: s.vc may hold the last applied spec
// instead of the cluster's.
func (r *Reconciler) closeClusterRequest(ctx context.Context, s *scope, key, value, next string) error {
	base := &v1alpha1.ValkeyCluster{}
	base.ObjectMeta = *s.vc.ObjectMeta.DeepCopy()
	base.TypeMeta = s.vc.TypeMeta
	obj := base.DeepCopy()
	if obj.Annotations[key] != value {
		return nil
	}
	if next == "" {
		delete(obj.Annotations, key)
	} else {
		obj.Annotations[key] = next
	}
	if err := r.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // changed since this pass read it: the next pass sees the new value
		}
		return fmt.Errorf("remove the %s annotation: %w", key, err)
	}
	return nil
}
