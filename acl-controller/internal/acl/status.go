package acl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/publish"
	"github.com/valkey-operator/valkey-operator/internal/status"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// FieldManager is the field manager of everything this controller writes.
const FieldManager = "acl-controller"

// renderOutcome is what the pass learnt about the users, for ACLReady.
type renderOutcome struct {
	Revision string
	Users    int
	Missing  []passwordProblem
	// Refused users, and whether their previous rules were kept (else left out).
	Refused Refusals
	Kept    map[string]bool
	// Rotation describes a running rotation ("" when none).
	Rotation string
	// TooLarge are the members that answered with more than the controller reads, by
	// ValkeyNode name.
	TooLarge map[string]*valkey.ReplyTooLargeError
}

// tooLargeReplies collects the members whose reply was too large.
func tooLargeReplies(results map[string]MemberResult) map[string]*valkey.ReplyTooLargeError {
	out := map[string]*valkey.ReplyTooLargeError{}
	for node, res := range results {
		if res.TooLarge != nil {
			out[node] = res.TooLarge
		}
	}
	return out
}

// ACLReadyCondition computes the ACLReady condition of a cluster (pure).
func ACLReadyCondition(o renderOutcome, gen int64) metav1.Condition {
	var parts []string
	for _, p := range o.Missing {
		parts = append(parts, p.String()+" ("+fallbackText(p.Kept)+")")
	}
	missing := len(parts) > 0
	for _, name := range sortedKeys(o.Refused) {
		parts = append(parts, fmt.Sprintf("user %s: refused by Valkey: %s (%s)", name, o.Refused[name], fallbackText(o.Kept[name])))
	}
	for _, node := range sortedKeys(o.TooLarge) {
		parts = append(parts, o.TooLarge[node].Describe(node)+"; the controller cannot check that member's users until the reply fits")
	}
	switch {
	case missing:
		return conditions.New(v1alpha1.ConditionACLReady, false, v1alpha1.ReasonPasswordMissing, strings.Join(parts, "; "), gen)
	case len(o.Refused) > 0:
		return conditions.New(v1alpha1.ConditionACLReady, false, v1alpha1.ReasonUserRefused, strings.Join(parts, "; "), gen)
	case len(parts) > 0:
		return conditions.New(v1alpha1.ConditionACLReady, false, v1alpha1.ReasonReplyTooLarge, strings.Join(parts, "; "), gen)
	case o.Rotation != "":
		return conditions.New(v1alpha1.ConditionACLReady, true, v1alpha1.ReasonRotating, o.Rotation, gen)
	}
	msg := fmt.Sprintf("aclfile revision %s with %d users is published", o.Revision, o.Users)
	return conditions.New(v1alpha1.ConditionACLReady, true, v1alpha1.ReasonACLRendered, msg, gen)
}

// ACLAppliedCondition computes the ACLApplied condition of a member (pure). res is nil
// when the member has no pod IP yet.
func ACLAppliedCondition(res *MemberResult, revision string, gen int64) metav1.Condition {
	switch {
	case res == nil:
		return conditions.New(v1alpha1.ConditionACLApplied, false, v1alpha1.ReasonACLPending, "waiting for the pod IP", gen)
	case res.Applied:
		return conditions.New(v1alpha1.ConditionACLApplied, true, v1alpha1.ReasonACLApplied, "the server runs aclfile revision "+revision, gen)
	default:
		return conditions.New(v1alpha1.ConditionACLApplied, false, v1alpha1.ReasonACLPending, "aclfile revision "+revision+" is not live yet: "+res.Message, gen)
	}
}

// fallbackText says what became of a user that could not be rendered.
func fallbackText(kept bool) string {
	if kept {
		return "its previous rules stay in force"
	}
	return "it is left out"
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// status is what this controller owns: ACLReady, OperatorLoginRefused and status.acl on
// clusters, ACLApplied and OperatorLoginRefused on members.
func (r *Reconciler) status() publish.Status {
	return publish.Status{
		Writer:         status.Writer{Client: r.Client, FieldManager: FieldManager, Clock: r.Clock},
		Field:          "acl",
		Current:        func(vc *v1alpha1.ValkeyCluster) any { return vc.Status.ACL },
		Conditions:     []string{v1alpha1.ConditionACLReady, v1alpha1.ConditionOperatorLoginRefused},
		NodeConditions: []string{v1alpha1.ConditionACLApplied, v1alpha1.ConditionOperatorLoginRefused},
	}
}

// report writes ACLReady and status.acl on the cluster and ACLApplied on each member,
// and emits a Warning event when ACLReady turns to a new problem.
func (r *Reconciler) Report(ctx context.Context, s *scope) error {
	vc, f := s.Cluster, s.file
	ready := ACLReadyCondition(s.outcome, vc.Generation)
	if ready.Status == metav1.ConditionTrue && s.hold.any() {
		ready = heldCondition(s.hold, f, s.rotation, vc.Generation)
	}
	publish.Announce(r.Recorder, vc, ready, "Render")
	acl := &v1alpha1.ACLStatus{
		SecretName:            v1alpha1.ACLSecretName(vc.Name),
		SystemUsersSecretName: v1alpha1.SystemUsersSecretName(vc.Name),
		Revision:              f.Revision,
		Rotation:              s.rotation.status(),
	}
	st := r.status()
	var errs []error
	logins := make(map[string]metav1.Condition, len(s.nodes))
	for i := range s.nodes {
		vn := &s.nodes[i]
		var res *MemberResult
		if got, ok := s.results[vn.Name]; ok {
			res = &got
		}
		prev := conditions.Get(vn.Status.Conditions, v1alpha1.ConditionOperatorLoginRefused)
		login := OperatorLoginCondition(res, prev, vn.Generation)
		logins[vn.Name] = login
		if err := st.WriteNode(ctx, vn, ACLAppliedCondition(res, f.Revision, vn.Generation), login); err != nil {
			errs = append(errs, err)
			continue // the next pass tells it
		}
		if res != nil {
			reportLogin(r.Recorder, vc, vn, prev, login, res.Login)
		}
	}
	if err := st.WriteCluster(ctx, vc, acl, ready, ClusterLoginCondition(logins, vc.Generation)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
