package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
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

// loginRefusalSettle is how long a member's OperatorLoginRefused must have been True
// before the member is failed over or restarted.
const loginRefusalSettle = 10 * time.Second

func (r *Reconciler) loginRecoveryPeriod() time.Duration {
	if r.LoginRecoveryPeriod > 0 {
		return r.LoginRecoveryPeriod
	}
	return DefaultLoginRecoveryPeriod
}

// loginRefused returns the member's OperatorLoginRefused when it is True, else nil.
func loginRefused(m *plan.Member) *metav1.Condition {
	c := conditions.Get(m.Node.Status.Conditions, v1alpha1.ConditionOperatorLoginRefused)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return c
}

// loginStep is what the recovery does next.
type loginStep int

const (
	// loginNothing: no member refuses the operator's login.
	loginNothing loginStep = iota
	// loginWait: members refuse, none may be restarted now (message says why).
	loginWait
	// loginFailover: replica takes over the shard member serves.
	loginFailover
	// loginRestart: member gets a new pod.
	loginRestart
)

// loginPlan is the recovery's next step, decided from the scope alone.
type loginPlan struct {
	step loginStep
	// member refuses the operator's login; replica takes over from it (loginFailover).
	member, replica *plan.Member
	// message is Progressing's message (reason RecoveringLogin).
	message string
	// after is when to look again.
	after time.Duration
}

// planLoginRecovery picks the next step for the members that refuse the operator's
// login: the first member (those serving slots first, then oldest first) that may fail
// over or restart now, else why they wait.
func (s *scope) planLoginRecovery(period time.Duration) loginPlan {
	var locked []*plan.Member
	for _, m := range s.Topo.Members {
		if !m.Leaving() && loginRefused(m) != nil {
			locked = append(locked, m)
		}
	}
	if len(locked) == 0 {
		return loginPlan{}
	}
	sort.SliceStable(locked, func(i, j int) bool {
		return s.Topo.ServesSlots(locked[i]) == plan.ServingYes && s.Topo.ServesSlots(locked[j]) != plan.ServingYes
	})
	for _, m := range s.Topo.Members {
		if m.Restarting() {
			return loginPlan{step: loginWait, member: m, after: plan.RequeueWait, message: fmt.Sprintf(
				"%s: waiting for %s to restart first", refusing(locked), m.Name())}
		}
	}
	var first *loginPlan
	var after time.Duration
	for _, m := range locked {
		p := s.planLoginOf(m, period)
		if p.step != loginWait {
			return p
		}
		if first == nil {
			first = &p
		}
		if after == 0 || p.after < after {
			after = p.after
		}
	}
	out := *first
	out.after = after
	out.message = refusing(locked) + ": " + out.message
	return out
}

// refusing names the members that refuse the operator's login, for messages.
func refusing(ms []*plan.Member) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name()
	}
	if len(ms) == 1 {
		return names[0] + " refuses the operator's login"
	}
	return strings.Join(names, ", ") + " refuse the operator's login"
}

// planLoginOf is the next step for one member that refuses the operator's login.
func (s *scope) planLoginOf(m *plan.Member, period time.Duration) loginPlan {
	sh := m.Shard()
	if since := loginRefused(m).LastTransitionTime.Time; s.Topo.Now.Sub(since) < loginRefusalSettle {
		return loginPlan{step: loginWait, member: m, after: since.Add(loginRefusalSettle).Sub(s.Topo.Now), message: fmt.Sprintf(
			"reported at %s, acted on once it has held for %s", since.UTC().Format(time.RFC3339), loginRefusalSettle)}
	}
	if at, err := time.Parse(time.RFC3339, m.Node.Spec.RestartedAt); err == nil && s.Topo.Now.Sub(at) < period {
		next := at.Add(period)
		return loginPlan{step: loginWait, member: m, after: next.Sub(s.Topo.Now), message: fmt.Sprintf(
			"%s was restarted at %s; it is not restarted again before %s", m.Name(), at.UTC().Format(time.RFC3339), next.UTC().Format(time.RFC3339))}
	}
	switch s.Topo.ServesSlots(m) {
	case plan.ServingUnknown:
		return loginPlan{step: loginWait, member: m, after: plan.RequeueWait, message: fmt.Sprintf(
			"no member that answers knows whether %s serves slots", m.Name())}
	case plan.ServingYes:
		return s.planLoginFailover(m)
	}
	if other := s.shardUnsettled(sh, m); other != nil {
		return loginPlan{step: loginWait, member: other, after: plan.RequeueWait, message: fmt.Sprintf(
			"waiting for %s to be back in sync before %s restarts", other.Name(), m.Name())}
	}
	return loginPlan{step: loginRestart, member: m, after: plan.RequeueWait}
}

// planLoginFailover: a member that serves its shard hands it to a replica that has
// caught up; without replicas, it restarts on its volume, or waits when it has none.
func (s *scope) planLoginFailover(m *plan.Member) loginPlan {
	sh := m.Shard()
	if pending := s.failoverPending(sh); pending != nil {
		return loginPlan{step: loginWait, member: pending, after: plan.RequeueFast, message: fmt.Sprintf(
			"waiting for %s to take over shard %d from %s", pending.Name(), sh, m.Name())}
	}
	var ready []*plan.Member
	for _, r := range s.Active(sh) {
		if plan.CaughtUp(r, m) {
			ready = append(ready, r)
		}
	}
	switch {
	case len(ready) > 0:
		return loginPlan{step: loginFailover, member: m, replica: s.SpreadChoice(sh, plan.ByOffset(ready)), after: plan.RequeueFast}
	case s.Replicas() > 0:
		return loginPlan{step: loginWait, member: m, after: plan.RequeueWait, message: fmt.Sprintf(
			"waiting for a replica of shard %d in sync to take over from %s", sh, m.Name())}
	case s.VC.Spec.Persistence != nil:
		return loginPlan{step: loginRestart, member: m, after: plan.RequeueWait}
	}
	return loginPlan{step: loginWait, member: m, after: plan.RequeueSteady, message: fmt.Sprintf(
		"%s serves shard %d alone and keeps its data in memory only: a restart would lose the shard's data, so the operator does not restart it", m.Name(), sh)}
}

// shardUnsettled returns a member of shard sh, other than m, that is not back in sync:
// one that does not answer, or a replica without its link up or in a full sync. Members
// that refuse the operator's login are left out (they serve as they did).
func (s *scope) shardUnsettled(sh int32, m *plan.Member) *plan.Member {
	for _, o := range s.Active(sh) {
		switch {
		case o == m || loginRefused(o) != nil:
		case !o.Reachable:
			return o
		case o.IsPrimary() && len(o.Slots()) > 0:
		case !o.Self.Replica || !o.Repl.LinkUp || o.Repl.SyncInProgress:
			return o
		}
	}
	return nil
}

// reconcileLoginRecovery carries out planLoginRecovery's step.
func (r *Reconciler) reconcileLoginRecovery(ctx context.Context, s *scope) (time.Duration, error) {
	p := s.planLoginRecovery(r.loginRecoveryPeriod())
	switch p.step {
	case loginNothing:
		return 0, nil
	case loginWait:
		s.progress(v1alpha1.ReasonRecoveringLogin, "%s", p.message)
	case loginFailover:
		s.progress(v1alpha1.ReasonRecoveringLogin, "%s refuses the operator's login: %s takes over shard %d before it restarts",
			p.member.Name(), p.replica.Name(), p.member.Shard())
		if err := r.failover(ctx, s, p.replica, p.member.Name()+" refuses the operator's login and restarts once a replica serves its shard"); err != nil {
			return 0, err
		}
	case loginRestart:
		if err := r.restartForLogin(ctx, s, p.member); err != nil {
			return 0, err
		}
	}
	s.lookAgainWithin(p.after)
	return 0, nil
}

// restartForLogin authorises a new pod for m: its server loads the aclfile at start.
func (r *Reconciler) restartForLogin(ctx context.Context, s *scope, m *plan.Member) error {
	refused := loginRefused(m)
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
