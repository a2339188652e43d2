// Package conditions computes metav1.Condition lists the way every controller of the
// operator writes them: a controller states the conditions it owns; a condition keeps its
// lastTransitionTime while its status does not change.
package conditions

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// New builds a condition for an object at generation gen.
func New(typ string, status bool, reason, message string, gen int64) metav1.Condition {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: message, ObservedGeneration: gen}
}

// Unknown builds a condition whose status is Unknown.
func Unknown(typ, reason, message string, gen int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionUnknown, Reason: reason, Message: message, ObservedGeneration: gen}
}

// Resolve returns desired with each condition's lastTransitionTime taken from the entry of
// the same type in existing when the status is unchanged, and now otherwise.
func Resolve(existing []metav1.Condition, now time.Time, desired ...metav1.Condition) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(desired))
	for _, d := range desired {
		d.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
		if old := meta.FindStatusCondition(existing, d.Type); old != nil && old.Status == d.Status {
			d.LastTransitionTime = old.LastTransitionTime
		}
		out = append(out, d)
	}
	return out
}

// Owned returns the entries of list whose type is in types, in the order of types.
func Owned(list []metav1.Condition, types ...string) []metav1.Condition {
	var out []metav1.Condition
	for _, t := range types {
		if c := meta.FindStatusCondition(list, t); c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// IsTrue reports whether the condition typ is True in list.
func IsTrue(list []metav1.Condition, typ string) bool { return meta.IsStatusConditionTrue(list, typ) }

// Get returns the condition typ of list, or nil.
func Get(list []metav1.Condition, typ string) *metav1.Condition {
	return meta.FindStatusCondition(list, typ)
}

// Changed reports whether a transition between two condition lists of the same types is
// worth a write: a different status, reason, message or observed generation.
func Changed(before, after []metav1.Condition) bool {
	if len(before) != len(after) {
		return true
	}
	for _, a := range after {
		b := meta.FindStatusCondition(before, a.Type)
		if b == nil || b.Status != a.Status || b.Reason != a.Reason || b.Message != a.Message || b.ObservedGeneration != a.ObservedGeneration {
			return true
		}
	}
	return false
}
