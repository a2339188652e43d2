package plan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// LoginRefusalSettle is how long a member's OperatorLoginRefused must have been True
// before the member is failed over or restarted.
const LoginRefusalSettle = 10 * time.Second

// LoginRefused returns the member's OperatorLoginRefused when it is True, else nil.
func LoginRefused(m *Member) *metav1.Condition {
	c := conditions.Get(m.Node.Status.Conditions, v1alpha1.ConditionOperatorLoginRefused)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return c
}

// LoginStep is what the recovery does next.
type LoginStep int

const (
	// loginNothing: no member refuses the operator's login.
	LoginNothing LoginStep = iota
	// loginWait: members refuse, none may be restarted now (message says why).
	LoginWait
	// loginFailover: replica takes over the shard member serves.
	LoginFailover
	// loginRestart: member gets a new pod.
	LoginRestart
)

// LoginPlan is the recovery's next step, decided from its input alone.
type LoginPlan struct {
	Step LoginStep
	// Member refuses the operator's login; replica takes over from it (loginFailover).
	Member, Replica *Member
	// Message is Progressing's message (reason RecoveringLogin).
	Message string
	// After is when to look again.
	After time.Duration
}

// PlanLoginRecovery picks the next step for the members that refuse the operator's
// login: the first member (those serving slots first, then oldest first) that may fail
// over or restart now, else why they wait.
func (c *Cluster) PlanLoginRecovery(period time.Duration) LoginPlan {
	var locked []*Member
	for _, m := range c.Topo.Members {
		if !m.Leaving() && LoginRefused(m) != nil {
			locked = append(locked, m)
		}
	}
	if len(locked) == 0 {
		return LoginPlan{}
	}
	sort.SliceStable(locked, func(i, j int) bool {
		return c.Topo.ServesSlots(locked[i]) == ServingYes && c.Topo.ServesSlots(locked[j]) != ServingYes
	})
	for _, m := range c.Topo.Members {
		if m.Restarting() {
			return LoginPlan{Step: LoginWait, Member: m, After: RequeueWait, Message: fmt.Sprintf(
				"%s: waiting for %s to restart first", refusing(locked), m.Name())}
		}
	}
	var first *LoginPlan
	var after time.Duration
	for _, m := range locked {
		p := c.planLoginOf(m, period)
		if p.Step != LoginWait {
			return p
		}
		if first == nil {
			first = &p
		}
		if after == 0 || p.After < after {
			after = p.After
		}
	}
	out := *first
	out.After = after
	out.Message = refusing(locked) + ": " + out.Message
	return out
}

// refusing names the members that refuse the operator's login, for messages.
func refusing(ms []*Member) string {
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
func (c *Cluster) planLoginOf(m *Member, period time.Duration) LoginPlan {
	sh := m.Shard()
	if since := LoginRefused(m).LastTransitionTime.Time; c.Topo.Now.Sub(since) < LoginRefusalSettle {
		return LoginPlan{Step: LoginWait, Member: m, After: since.Add(LoginRefusalSettle).Sub(c.Topo.Now), Message: fmt.Sprintf(
			"reported at %s, acted on once it has held for %s", since.UTC().Format(time.RFC3339), LoginRefusalSettle)}
	}
	if at, err := time.Parse(time.RFC3339, m.Node.Spec.RestartedAt); err == nil && c.Topo.Now.Sub(at) < period {
		next := at.Add(period)
		return LoginPlan{Step: LoginWait, Member: m, After: next.Sub(c.Topo.Now), Message: fmt.Sprintf(
			"%s was restarted at %s; it is not restarted again before %s", m.Name(), at.UTC().Format(time.RFC3339), next.UTC().Format(time.RFC3339))}
	}
	switch c.Topo.ServesSlots(m) {
	case ServingUnknown:
		return LoginPlan{Step: LoginWait, Member: m, After: RequeueWait, Message: fmt.Sprintf(
			"no member that answers knows whether %s serves slots", m.Name())}
	case ServingYes:
		return c.planLoginFailover(m)
	}
	if other := c.shardUnsettled(sh, m); other != nil {
		return LoginPlan{Step: LoginWait, Member: other, After: RequeueWait, Message: fmt.Sprintf(
			"waiting for %s to be back in sync before %s restarts", other.Name(), m.Name())}
	}
	return LoginPlan{Step: LoginRestart, Member: m, After: RequeueWait}
}

// planLoginFailover: a member that serves its shard hands it to a replica that has
// caught up; without replicas, it restarts on its volume, or waits when it has none.
func (c *Cluster) planLoginFailover(m *Member) LoginPlan {
	sh := m.Shard()
	if pending := c.FailoverPending(sh); pending != nil {
		return LoginPlan{Step: LoginWait, Member: pending, After: RequeueFast, Message: fmt.Sprintf(
			"waiting for %s to take over shard %d from %s", pending.Name(), sh, m.Name())}
	}
	var ready []*Member
	for _, r := range c.Active(sh) {
		if CaughtUp(r, m) {
			ready = append(ready, r)
		}
	}
	switch {
	case len(ready) > 0:
		return LoginPlan{Step: LoginFailover, Member: m, Replica: c.SpreadChoice(sh, ByOffset(ready)), After: RequeueFast}
	case c.Replicas() > 0:
		return LoginPlan{Step: LoginWait, Member: m, After: RequeueWait, Message: fmt.Sprintf(
			"waiting for a replica of shard %d in sync to take over from %s", sh, m.Name())}
	case c.VC.Spec.Persistence != nil:
		return LoginPlan{Step: LoginRestart, Member: m, After: RequeueWait}
	}
	return LoginPlan{Step: LoginWait, Member: m, After: RequeueSteady, Message: fmt.Sprintf(
		"%s serves shard %d alone and keeps its data in memory only: a restart would lose the shard's data, so the operator does not restart it", m.Name(), sh)}
}

// shardUnsettled returns a member of shard sh, other than m, that is not back in sync:
// one that does not answer, or a replica without its link up or in a full sync. Members
// that refuse the operator's login are left out (they serve as they did).
func (c *Cluster) shardUnsettled(sh int32, m *Member) *Member {
	for _, o := range c.Active(sh) {
		switch {
		case o == m || LoginRefused(o) != nil:
		case !o.Reachable:
			return o
		case o.IsPrimary() && len(o.Slots()) > 0:
		case !o.Self.Replica || !o.Repl.LinkUp || o.Repl.SyncInProgress:
			return o
		}
	}
	return nil
}
