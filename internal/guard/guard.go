// Package guard is the check every controller runs before acting on a ValkeyCluster: the
// same validation as the admission webhook, so turning the webhook off in the chart never
// lets a controller act on a spec the webhook would have refused. The one exception is
// the key table's check of spec.config (validation.ConfigTableErrors): the table changes
// with the operator, and a cluster an older operator admitted keeps running with an
// entry the new table refuses, so the guard reports such entries as warnings (the
// ConfigurationWarning condition) instead of stopping the controllers.
package guard

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// Result is the outcome of the guard for one cluster.
type Result struct {
	// Errs are the broken rules; empty when the spec is valid.
	Errs field.ErrorList
	// Condition is the InvalidSpec condition to apply (every controller applies the same).
	Condition metav1.Condition
	// ConfigWarnings are the spec.config entries the key table refuses, as sentences that
	// say what may happen and what to do; the controllers act on the spec all the same.
	ConfigWarnings []string
}

// Valid reports whether the controllers may act on the spec.
func (r Result) Valid() bool { return len(r.Errs) == 0 }

// Check validates c with the rules that need nothing but the object itself. Every
// controller gets the same answer, so the InvalidSpec condition they all write has the same
// content and their server-side apply patches agree instead of fighting.
func Check(c *v1alpha1.ValkeyCluster) Result {
	errs := validation.ValidateStoredCluster(c)
	return Result{Errs: errs, Condition: condition(errs, c.Generation), ConfigWarnings: validation.ConfigTableWarnings(c)}
}

// CheckUpdate returns the rules broken by changing previous into c beyond those Check
// reports (immutable fields). Only a controller that knows the previous spec (the
// cluster-controller: status.appliedSpec, else the members) uses it; it reports them in
// its own conditions. The key table's findings are never among them: Check's warnings
// report every one.
func CheckUpdate(previous, c *v1alpha1.ValkeyCluster) field.ErrorList {
	static := map[string]bool{}
	for _, e := range validation.ValidateCluster(c) {
		static[e.Error()] = true
	}
	var out field.ErrorList
	for _, e := range validation.ValidateClusterUpdate(previous, c) {
		if !static[e.Error()] {
			out = append(out, e)
		}
	}
	return out
}

func condition(errs field.ErrorList, gen int64) metav1.Condition {
	if len(errs) == 0 {
		return conditions.New(v1alpha1.ConditionInvalidSpec, false, v1alpha1.ReasonValid, "the spec passed validation", gen)
	}
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	return conditions.New(v1alpha1.ConditionInvalidSpec, true, v1alpha1.ReasonInvalid, strings.Join(msgs, "; "), gen)
}

// CheckNode validates a ValkeyNode with the same rules the webhook applies to it. The
// cluster-controller derives every node from a validated cluster, so a failure here is
// a bug or a hand-written node; the node-controller reports it and does not act.
func CheckNode(n *v1alpha1.ValkeyNode) Result {
	return NodeResult(n, validation.ValidateNode(n))
}

// NodeResult is the guard's answer for a node whose spec breaks errs: the
// node-controller adds what it finds in the pod it renders for a node that passed
// CheckNode (the Pod Security check of the real pod), with the same condition.
func NodeResult(n *v1alpha1.ValkeyNode, errs field.ErrorList) Result {
	var gen int64
	if n != nil {
		gen = n.Generation
	}
	return Result{Errs: errs, Condition: condition(errs, gen)}
}
