package cluster

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// A change that waits gives the reason in Progressing, pass after pass. When the same
// step (reason and message) holds for noProgressAfter, nothing is moving: Progressing's
// message then says since when, and one Warning event NoProgress tells it, so that a
// user reading the cluster or its events sees a scale, roll or heal that stopped, not
// only what it waits for. A step that changes, or Progressing turning False, starts the
// clock again. The clock is kept in memory (per cluster UID): a restarted controller
// waits noProgressAfter again before it tells.
const noProgressAfter = 2 * time.Minute

// EventNoProgress: a change waited on the same step for noProgressAfter.
const EventNoProgress = "NoProgress"

// stall is the step a cluster has been on, since when, and whether it was told.
type stall struct {
	step  string
	since time.Time
	told  bool
}

// markStalled adds "no progress since" to a Progressing=True condition whose step has not
// changed for noProgressAfter, and reports whether that is new (to be told once).
func (r *Reconciler) markStalled(uid types.UID, c *metav1.Condition, now time.Time) (tell bool) {
	if c.Status != metav1.ConditionTrue {
		r.stalls.Delete(uid)
		return false
	}
	step := c.Reason + "\x00" + c.Message
	v, _ := r.stalls.Load(uid)
	st, _ := v.(*stall)
	if st == nil || st.step != step {
		r.stalls.Store(uid, &stall{step: step, since: now})
		return false
	}
	if now.Sub(st.since) < noProgressAfter {
		return false
	}
	c.Message = fmt.Sprintf("%s; no progress since %s", c.Message, st.since.UTC().Format(time.RFC3339))
	tell, st.told = !st.told, true
	return tell
}

// reportStall marks the pass's Progressing condition, and Reconciling where it repeats
// it, as stalled (markStalled), and tells it once.
func (r *Reconciler) reportStall(s *scope, conds []metav1.Condition) {
	p := conditionIn(conds, v1alpha1.ConditionProgressing)
	if p == nil {
		return
	}
	before := p.Message
	tell := r.markStalled(s.VC.UID, p, s.Topo.Now)
	if rc := conditionIn(conds, v1alpha1.ConditionReconciling); rc != nil && rc.Reason == p.Reason && rc.Message == before {
		rc.Message = p.Message
	}
	if tell {
		r.event(s.VC, nil, eventWarning, EventNoProgress, "Observe", "%s: %s", p.Reason, p.Message)
	}
}

// conditionIn returns the condition of type typ in conds, for changing it in place.
func conditionIn(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
