package cluster

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
)

// Recovering the operator's login. A client granted +acl (or +@admin) on a member can
// change the operator's user there; once the member refuses a new login, no command can
// put the user back, and every controller loses that member. Its server loads the
// aclfile, which defines the operator's user as the published file says, when it
// starts. The acl-controller reports such a member with OperatorLoginRefused=True on its
// ValkeyNode; this phase restarts it through the channel every planned restart takes: a
// new spec.restartedAt and a raised spec.revision, on which the node-controller
// replaces the member's pod.
//
//   - A member that serves its shard's slots is not restarted: a replica that follows it
//     with its link up takes over first (CLUSTER FAILOVER on the replica, which the old
//     primary answers over the cluster bus: it pauses its clients until the replica has
//     caught up, so no acknowledged write is lost). Its role is read from the other
//     members' views when it does not answer the operator.
//   - One member at a time in the cluster, and only when the other members of its shard
//     are back in sync: a restarted member comes back empty (without persistence) and
//     copies its primary first.
//   - A refusal is acted on once it has held for loginRefusalSettle: a pod address that
//     pointed at another server for a moment restarts nothing.
//   - At most one restart per member per LoginRecoveryPeriod (spec.restartedAt says when
//     it was last restarted, for any reason): a server locked out again soon after is
//     left alone until then, and a condition the acl-controller has not looked at again
//     since the restart causes no second one.
//   - A primary whose shard has no replica is restarted only with persistence (its volume
//     keeps the data; its slots are not served while it restarts); without, a restart
//     would lose the shard's data, and the operator says so and waits.
//
// It heals, so it goes on while the cluster is paused or its spec is invalid.

// DefaultLoginRecoveryPeriod is the least time between two restarts of one member whose
// server refuses the operator's login.
const DefaultLoginRecoveryPeriod = 10 * time.Minute

func (r *Reconciler) loginRecoveryPeriod() time.Duration {
	if r.LoginRecoveryPeriod > 0 {
		return r.LoginRecoveryPeriod
	}
	return DefaultLoginRecoveryPeriod
}

// reconcileLoginRecovery carries out plan.Cluster.PlanLoginRecovery's step.
func (r *Reconciler) reconcileLoginRecovery(ctx context.Context, s *scope) (time.Duration, error) {
	p := s.PlanLoginRecovery(r.loginRecoveryPeriod())
	switch p.Step {
	case plan.LoginNothing:
		return 0, nil
	case plan.LoginWait:
		s.progress(v1alpha1.ReasonRecoveringLogin, "%s", p.Message)
	case plan.LoginFailover:
		s.progress(v1alpha1.ReasonRecoveringLogin, "%s refuses the operator's login: %s takes over shard %d before it restarts",
			p.Member.Name(), p.Replica.Name(), p.Member.Shard())
		if err := r.failover(ctx, s, p.Replica, p.Member.Name()+" refuses the operator's login and restarts once a replica serves its shard"); err != nil {
			return 0, err
		}
	case plan.LoginRestart:
		if err := r.restartForLogin(ctx, s, p.Member); err != nil {
			return 0, err
		}
	}
	s.lookAgainWithin(p.After)
	return 0, nil
}

// restartForLogin authorises a new pod for m: its server loads the aclfile at start.
func (r *Reconciler) restartForLogin(ctx context.Context, s *scope, m *plan.Member) error {
	refused := plan.LoginRefused(m)
	patch := client.MergeFrom(m.Node.DeepCopy())
	m.Node.Spec.RestartedAt = s.Topo.Now.UTC().Format(time.RFC3339)
	m.Node.Spec.Revision++
	if err := r.Patch(ctx, m.Node, patch); err != nil {
		return fmt.Errorf("restart %s for the operator's login: %w", m.Name(), err)
	}
	log.FromContext(ctx).Info("restarting a member whose server refuses the operator's login", "member", m.Name(), "reason", refused.Reason)
	r.event(s.VC, m.Node, eventNormal, "OperatorLoginRecovery", "Restart",
		"restarting %s (a new pod) so that its server loads the aclfile again: it refuses the operator's login (%s)", m.Name(), refused.Reason)
	s.progress(v1alpha1.ReasonRecoveringLogin, "%s refuses the operator's login: restarting it so that its server loads the aclfile again", m.Name())
	return nil
}
