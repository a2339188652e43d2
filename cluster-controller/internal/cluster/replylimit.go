package cluster

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// Replies too large. The valkey library reads at most valkey.DefaultMaxReplyBytes from
// a member at a time; a larger reply (a tenant's users, clients or key names grown on
// the server) fails with a *valkey.ReplyTooLargeError and no memory is spent on it. The
// cluster then says which member answered which command with too much, under reason
// ReplyTooLarge, with one Warning event when Progressing turns to it, and the pass is
// tried again at the steady period: waiting a second does not shrink a reply.

// tooLargeCause describes the members among ms whose servers could not be read because
// of a reply too large: from this pass's read, or from the node-controller's PodReady.
// "" when there is none.
func tooLargeCause(ms []*plan.Member) string {
	var parts []string
	for _, m := range ms {
		if e := valkey.AsReplyTooLarge(m.Err); e != nil {
			parts = append(parts, e.Describe(m.Name())+"; the operator cannot read that member's view of the cluster")
			continue
		}
		if c := conditions.Get(m.Node.Status.Conditions, v1alpha1.ConditionPodReady); c != nil &&
			c.Status != metav1.ConditionTrue && c.Reason == v1alpha1.ReasonReplyTooLarge {
			parts = append(parts, "member "+m.Name()+": "+plan.MemberMessage(c))
		}
	}
	return strings.Join(parts, "; ")
}

// stopTooLarge ends a pass whose phase failed on a reply too large: Progressing names
// the member and the command (it outranks what the pass was doing: it is why nothing
// moves), and ok is false when err is another error.
func (s *scope) stopTooLarge(phase string, err error) bool {
	e := valkey.AsReplyTooLarge(err)
	if e == nil {
		return false
	}
	name := e.Addr
	for _, m := range s.Topo.Members {
		if m.Addr == e.Addr {
			name = m.Name()
		}
	}
	s.step.reason = v1alpha1.ReasonReplyTooLarge
	s.step.message = e.Describe(name) + "; the " + phase + " step cannot go on until the reply fits"
	return true
}
