package cluster

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
)

// reconcileStaleMembers replaces at once a member that never became active and whose
// spec is outdated: it holds nothing. This is how a cluster whose members cannot start
// (a nodeSelector no node matches, an image that does not pull) recovers when the spec
// is fixed, during its creation as well as during a roll. It runs before the phases
// that wait for every member to answer.
func (r *Reconciler) reconcileStaleMembers(ctx context.Context, s *scope) (time.Duration, error) {
	for _, m := range s.Topo.Members {
		if m.Leaving() || m.Node.Status.Lifecycle == v1alpha1.LifecycleActive || len(m.Slots()) > 0 {
			continue
		}
		if out, why := s.Outdated(m); out {
			if err := r.retire(ctx, s.VC, m, "it never joined and its spec is outdated ("+why+")"); err != nil {
				return 0, err
			}
			return plan.RequeueFast, nil
		}
	}
	return 0, nil
}

// reconcileRoll brings members whose pod must change (image, resources, non-live config,
// containers, exporter, scheduling, grace period) in line with the spec, one shard at a
// time, with at most one client-visible failover per shard. plan.Cluster.PlanRoll decides the step.
func (r *Reconciler) reconcileRoll(ctx context.Context, s *scope) (time.Duration, error) {
	p := s.PlanRoll()
	switch p.Step {
	case plan.RollSettleFirst, plan.RollWait:
		s.progress(v1alpha1.ReasonRolling, "%s", p.Message)
	case plan.RollBlocked:
		s.block(p.Member.Name(), "%s", p.Message)
	case plan.RollAddSuccessor:
		if err := r.addSuccessors(ctx, s, p.Shard, p.Count); err != nil {
			return 0, err
		}
		s.progress(v1alpha1.ReasonRolling, "%s", p.Message)
	case plan.RollRetire:
		if err := r.retire(ctx, s.VC, p.Member, "replaced by an up-to-date replica in sync"); err != nil {
			return 0, err
		}
		s.progress(v1alpha1.ReasonRolling, "%s", p.Message)
	case plan.RollRestart:
		if err := r.authorizeRoll(ctx, s, p.Member); err != nil {
			return 0, err
		}
	case plan.RollFailover:
		if err := r.failover(ctx, s, p.Member, "rolling update of shard "+fmt.Sprint(p.Shard)); err != nil {
			return 0, err
		}
	}
	if p.Step != plan.RollBlocked && p.Step != plan.RollSettleFirst && !s.InPlace() {
		// The next shards' successors start now, so that their sync overlaps this
		// shard's roll; their old members are retired in turn, one shard at a time.
		for _, ahead := range s.ShardsAhead(p.Shard, plan.RollSurgeShards) {
			if err := r.addSuccessors(ctx, s, ahead.Shard, ahead.Count); err != nil {
				return 0, err
			}
		}
	}
	return p.After, nil
}

// addSuccessors creates count up-to-date members in shard, counting the members on the
// API server first: a successor created by the previous pass may not be in the cache yet.
func (r *Reconciler) addSuccessors(ctx context.Context, s *scope, shard int32, count int) error {
	live, err := r.countMembers(ctx, s.VC)
	if err != nil {
		return err
	}
	for have := live[shard]; have < len(s.Active(shard))+count; have++ {
		if _, err := r.createMember(ctx, s.VC, shard, "successor for a rolling update"); err != nil {
			return err
		}
	}
	return nil
}

// authorizeRoll writes the new spec into a member and raises its revision: the
// node-controller then replaces its pod, keeping its volume.
func (r *Reconciler) authorizeRoll(ctx context.Context, s *scope, m *plan.Member) error {
	_, why := s.Outdated(m)
	patch := client.MergeFrom(m.Node.DeepCopy())
	want := plan.DesiredSpec(s.VC, m.Shard())
	want.Revision = m.Node.Spec.Revision + 1
	m.Node.Spec = want
	if err := r.Patch(ctx, m.Node, patch); err != nil {
		return fmt.Errorf("authorise the roll of %s: %w", m.Name(), err)
	}
	r.event(s.VC, m.Node, eventNormal, "MemberRolling", "Roll", "restarting %s on its volume with the new spec (%s)", m.Name(), why)
	s.progress(v1alpha1.ReasonRolling, "shard %d: restarting %s with the new spec", m.Shard(), m.Name())
	return nil
}
