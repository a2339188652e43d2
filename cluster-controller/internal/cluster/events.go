package cluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	eventNormal  = corev1.EventTypeNormal
	eventWarning = corev1.EventTypeWarning
)

// event records an event about the cluster (regarding) and, when set, the member it
// concerns (related). Events are for users: what the operator did and why.
func (r *Reconciler) event(regarding runtime.Object, related runtime.Object, typ, reason, action, format string, args ...any) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.Eventf(regarding, related, typ, reason, action, format, args...)
}
