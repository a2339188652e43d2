package perf

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// Mark is a state first seen at a time, in seconds after the start of a measurement.
type Mark struct {
	At    float64 `json:"at"`
	State string  `json:"state"`
}

// Timeline is the sequence of states a measurement went through.
type Timeline []Mark

// String prints "+0.12s state; +1.30s state; ...".
func (tl Timeline) String() string {
	s := ""
	for i, m := range tl {
		if i > 0 {
			s += "; "
		}
		s += fmt.Sprintf("+%.2fs %s", m.At, m.State)
	}
	return s
}

// Poll calls check every interval until it reports done, timeout passes or ctx ends.
// It returns the time from start (which may be before the call) to the check that was
// done, and the timeline of the distinct states check reported on the way. An error
// from check is recorded as a state and retried.
func Poll(ctx context.Context, start time.Time, timeout, interval time.Duration, check func(context.Context) (bool, string, error)) (time.Duration, Timeline, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var tl Timeline
	last := ""
	for {
		done, state, err := check(ctx)
		at := time.Since(start)
		if err != nil {
			state = "error: " + err.Error()
		}
		if state != last && state != "" {
			tl = append(tl, Mark{At: at.Seconds(), State: state})
			last = state
		}
		if done && err == nil {
			return at, tl, nil
		}
		if serr := sleep(ctx, interval); serr != nil {
			return at, tl, fmt.Errorf("after %s: %w (last state: %s)", at.Round(time.Millisecond), serr, last)
		}
	}
}

// ConditionState is the short state of a cluster's Ready and Progressing conditions,
// "Ready=False/WaitingForPods Progressing=True/CreatingMembers", for timelines.
func ConditionState(vc *v1alpha1.ValkeyCluster) string {
	part := func(typ string) string {
		c := meta.FindStatusCondition(vc.Status.Conditions, typ)
		if c == nil {
			return typ + "=?"
		}
		return fmt.Sprintf("%s=%s/%s", typ, c.Status, c.Reason)
	}
	return part(v1alpha1.ConditionReady) + " " + part(v1alpha1.ConditionProgressing)
}
