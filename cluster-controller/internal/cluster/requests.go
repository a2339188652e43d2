package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
)

// Requests users make through the ValkeyCluster's annotations (kubectl valkey failover,
// restart, pause): the cluster-controller carries them out with its own machinery and
// reports them in status, conditions and events; it never writes a user's annotation.
// Restarts enter the members' specs (plan.DesiredSpec, plan.RestartedAt); pausing is in newScope;
// a failover request is here, answered in status.failover.

// paused reports whether the cluster's annotations pause it.
func paused(vc *v1alpha1.ValkeyCluster) bool {
	return vc.Annotations[v1alpha1.AnnotationPaused] == "true"
}

// failoverRequest is a parsed valkey.io/failover annotation.
type failoverRequest struct {
	shard  int32
	member string
}

// parseFailoverRequest reads "<shard>" or "<shard>/<member>", optionally followed by
// "@<token>" (which only makes the value new).
func parseFailoverRequest(v string) (failoverRequest, error) {
	what, _, _ := strings.Cut(strings.TrimSpace(v), "@")
	shard, member, _ := strings.Cut(what, "/")
	n, err := strconv.ParseInt(shard, 10, 32)
	if err != nil || n < 0 {
		return failoverRequest{}, fmt.Errorf("%q is not <shard> or <shard>/<member>, optionally followed by @<token>", v)
	}
	return failoverRequest{shard: int32(n), member: member}, nil
}

// seenFailoverRequest is the status.failover a pass starts from: the one the cluster
// holds, a new Pending one when the annotation holds a value it does not answer, or none
// when the annotation was removed before its request was answered (an answered one stays
// on record, so the same value set again is not a new request).
func seenFailoverRequest(vc *v1alpha1.ValkeyCluster) *v1alpha1.FailoverRequestStatus {
	cur := vc.Status.Failover.DeepCopy()
	raw, ok := vc.Annotations[v1alpha1.AnnotationFailover]
	switch {
	case !ok && cur != nil && !cur.Answered(cur.Request):
		return nil
	case !ok || (cur != nil && cur.Request == raw):
		return cur
	}
	return &v1alpha1.FailoverRequestStatus{Request: raw, Phase: v1alpha1.FailoverRequestPending,
		Message: "waiting for the cluster-controller to act on it"}
}

// reconcileFailoverRequest carries out a planned failover a user asked for with the
// valkey.io/failover annotation, through the same path as the roll's failovers (one
// CLUSTER FAILOVER on a replica in sync, recorded on the replica and counted once it
// serves the shard), and answers it in status.failover (s.failoverReq); the annotation
// is never written. A request without a member gets the replica chosen as its target
// when it is asked, so later passes follow the same one; a failover that times out is
// asked again. The request is Done once its target serves the shard, or Refused, with a
// FailoverRefused event, when it cannot be done; while the shard is not ready for it (a
// replica not in sync yet, a failover in flight, the cluster settling), it waits.
func (r *Reconciler) reconcileFailoverRequest(ctx context.Context, s *scope) (time.Duration, error) {
	st := s.failoverReq
	if st == nil || st.Answered(st.Request) {
		return 0, nil
	}
	raw := st.Request
	refuse := func(format string, args ...any) (time.Duration, error) {
		msg := fmt.Sprintf(format, args...)
		r.event(s.VC, nil, eventWarning, "FailoverRefused", "Failover", "failover request %q refused: %s", raw, msg)
		st.Phase, st.Message = v1alpha1.FailoverRequestRefused, msg
		return 0, nil
	}
	req, err := parseFailoverRequest(raw)
	if err != nil {
		return refuse("%v", err)
	}
	st.Shard = &req.shard
	if req.shard >= s.Shards() {
		return refuse("the cluster has %d shards (0 to %d)", s.Shards(), s.Shards()-1)
	}
	wait := func(format string, args ...any) (time.Duration, error) {
		st.Message = fmt.Sprintf(format, args...)
		s.progress(v1alpha1.ReasonFailingOver, "requested failover of shard %d: %s", req.shard, st.Message)
		return 0, nil // the other phases go on; the pass comes back soon
	}
	s.lookAgainWithin(plan.RequeueWait)
	p := s.Topo.PrimaryOf(req.shard)
	named := req.member
	if named == "" {
		named = st.Target // the replica an earlier pass chose and asked
	}
	var target *plan.Member
	if named != "" {
		for _, m := range s.Topo.Shards[req.shard] {
			if m.Name() == named && !m.Leaving() {
				target = m
			}
		}
		switch {
		case target == nil:
			return refuse("%s is not a member of shard %d", named, req.shard)
		case target == p && len(p.Slots()) > 0:
			r.event(s.VC, p.Node, eventNormal, "FailoverRequestDone", "Failover", "%s serves shard %d", p.Name(), req.shard)
			st.Phase, st.Target, st.Message = v1alpha1.FailoverRequestDone, p.Name(), fmt.Sprintf("%s serves shard %d", p.Name(), req.shard)
			return 0, nil
		}
	} else if s.Replicas() == 0 {
		return refuse("shard %d has no replica to take over", req.shard)
	}
	if !s.Settled() {
		return wait("waiting for the cluster to settle")
	}
	if p == nil || !p.Reachable {
		return wait("waiting for the shard's primary to answer")
	}
	if target == nil {
		var inSync []*plan.Member
		for _, m := range s.Active(req.shard) {
			if m != p && plan.Synced(m, p) {
				inSync = append(inSync, m)
			}
		}
		if len(inSync) == 0 {
			return wait("waiting for a replica in sync")
		}
		target = s.SpreadChoice(req.shard, plan.ByOffset(inSync))
	}
	if !plan.Synced(target, p) {
		return wait("waiting for %s to be in sync with %s", target.Name(), p.Name())
	}
	if err := r.failover(ctx, s, target, "requested through the "+v1alpha1.AnnotationFailover+" annotation"); err != nil {
		return 0, err
	}
	if _, asked := plan.FailoverRecord(target); !asked {
		// Held this pass (another failover of the shard in flight, voters that do not
		// reach the target yet): Progressing says why.
		return wait("waiting to ask %s to take over from %s", target.Name(), p.Name())
	}
	st.Phase, st.Target = v1alpha1.FailoverRequestInProgress, target.Name()
	st.Message = fmt.Sprintf("%s was asked to take over shard %d from %s", target.Name(), req.shard, p.Name())
	s.lookAgainWithin(plan.RequeueFast)
	return 0, nil
}

// failoverRequestStatus is the status.failover the pass reports: s.failoverReq, with
// the time of its last phase change.
func failoverRequestStatus(s *scope) *v1alpha1.FailoverRequestStatus {
	st := s.failoverReq.DeepCopy()
	if st == nil {
		return nil
	}
	prev := s.VC.Status.Failover
	if prev != nil && prev.Request == st.Request && prev.Phase == st.Phase && prev.LastTransitionTime != nil {
		st.LastTransitionTime = prev.LastTransitionTime
	} else {
		now := metav1.NewTime(s.Topo.Now)
		st.LastTransitionTime = &now
	}
	return st
}
