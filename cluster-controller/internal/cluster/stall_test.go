package cluster

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
)

// TestMarkStalled: a change whose step stays the same for noProgressAfter says since when,
// and is told once; a new step, or the change done, starts the clock again.
func TestMarkStalled(t *testing.T) {
	r := &Reconciler{}
	uid := types.UID("c1")
	waiting := func() metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
			Reason: v1alpha1.ReasonScalingOut, Message: "waiting for the primaries of shards 3, 4"}
	}
	steps := []struct {
		at      time.Duration
		cond    metav1.Condition
		tell    bool
		stalled bool
	}{
		{0, waiting(), false, false},
		{time.Minute, waiting(), false, false},
		{noProgressAfter, waiting(), true, true},
		{noProgressAfter + time.Minute, waiting(), false, true},
		{noProgressAfter + 2*time.Minute, func() metav1.Condition {
			c := waiting()
			c.Message = "moved 64 of 6554 slots"
			return c
		}(), false, false},
		{2*noProgressAfter + 2*time.Minute, func() metav1.Condition {
			c := waiting()
			c.Message = "moved 64 of 6554 slots"
			return c
		}(), true, true},
		{2*noProgressAfter + 3*time.Minute, metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonReconciled, Message: "the cluster is as the spec asks"}, false, false},
		{2*noProgressAfter + 4*time.Minute, waiting(), false, false},
	}
	for i, st := range steps {
		c := st.cond
		tell := r.markStalled(uid, &c, plantest.T0.Add(st.at))
		stalled := strings.Contains(c.Message, "; no progress since ")
		if tell != st.tell || stalled != st.stalled {
			t.Errorf("step %d (+%s): tell %v, stalled %v (%q); want %v, %v", i, st.at, tell, stalled, c.Message, st.tell, st.stalled)
		}
	}
}
