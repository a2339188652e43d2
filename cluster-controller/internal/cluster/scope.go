package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/internal/guard"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
)

// scope is everything one pass knows: read at its start, never carried to the next pass.
type scope struct {
	// Cluster is what the planners read: the spec the pass applies and the topology its
	// servers report.
	plan.Cluster
	guard guard.Result
	// immutable lists changes of fields that cannot change after creation.
	immutable field.ErrorList
	// credErr is set when the operator's credentials are not published yet.
	credErr error
	cred    valkeyconn.Credentials
	// step is what the pass is doing or waiting for: Progressing's reason and message.
	step struct{ reason, message string }
	// blocked names a roll that cannot progress.
	blocked string
	// recheck asks for the next pass soon even when the spec is applied: the servers are
	// about to change in a way no Kubernetes event announces (a dead identity Valkey has
	// not flagged as failed yet, to be forgotten once it is).
	recheck bool
	// atRest: the pass found the spec applied and nothing to wait for (rest.go).
	atRest bool
	// healOnly: the spec is invalid and vc holds the last applied one, which the pass
	// heals the cluster to; nothing planned (a roll, a scale, live config) starts.
	healOnly bool
	// paused: the cluster is paused (valkey.io/paused); like healOnly, vc holds the last
	// applied spec and nothing planned starts. pending says the cluster's own spec differs
	// from it: a change waits for the resume.
	paused, pending bool
	// within, when set, is the latest the next pass should come: a phase that waits
	// without stopping the pass (a member handing over) says how soon it wants to look
	// again.
	within time.Duration
	// requested names the members that carried a failover request when the pass read
	// them (the metrics tell a failover the operator asked for from one Valkey elected).
	requested map[string]bool
	// failoverReq is status.failover: the answer to the valkey.io/failover annotation.
	failoverReq *v1alpha1.FailoverRequestStatus
	// failedPhase names the phase whose error ended the pass.
	failedPhase string
	// reported is the cluster status the pass computed.
	reported clusterStatus
}

// lookAgainWithin asks for the next pass within d at the latest (the shortest ask wins).
func (s *scope) lookAgainWithin(d time.Duration) {
	if d > 0 && (s.within == 0 || d < s.within) {
		s.within = d
	}
}

// newScope reads the cluster's members, the operator's credentials and the servers' views.
func (r *Reconciler) newScope(ctx context.Context, vc *v1alpha1.ValkeyCluster) (*scope, error) {
	nodes, err := r.listMembers(ctx, vc)
	if err != nil {
		return nil, err
	}
	s := &scope{Cluster: plan.Cluster{VC: vc}, requested: failoverRequests(nodes), failoverReq: seenFailoverRequest(vc)}
	s.guard = guard.Check(vc)
	if prev := previousSpec(vc, nodes); prev != nil {
		s.immutable = guard.CheckUpdate(prev, vc)
	}
	if !s.mayAct() && vc.Status.AppliedSpec != nil {
		// Heal the cluster as its last valid spec says; apply nothing of this one.
		eff := vc.DeepCopy()
		eff.Spec = *vc.Status.AppliedSpec.DeepCopy()
		s.VC, s.healOnly = eff, true
	}
	if paused(vc) {
		s.paused = true
		if !s.healOnly && vc.Status.AppliedSpec != nil {
			eff := vc.DeepCopy()
			eff.Spec = *vc.Status.AppliedSpec.DeepCopy()
			s.pending = !equality.Semantic.DeepEqual(eff.Spec, vc.Spec)
			s.VC = eff
		}
	}
	s.Unpublished = unpublished(s.VC)
	s.cred, s.credErr = valkeyconn.ForCluster(ctx, r.Client, vc)
	var members []*plan.Member
	if s.credErr == nil {
		members = r.observe(ctx, nodes, s.cred)
		if vc.Spec.ExternalAccessEnabled() || announcedBefore(nodes) {
			plan.ClientView(members)
		}
	} else {
		for _, vn := range nodes {
			members = append(members, &plan.Member{Node: vn, Err: s.credErr})
		}
		if !errors.Is(s.credErr, valkeyconn.ErrNotReady) {
			log.FromContext(ctx).Error(s.credErr, "read the operator's credentials")
		}
	}
	s.Topo = plan.NewTopology(members, r.Clock())
	s.Topo.IgnoreServerDown = !r.FastFailover
	s.Topo.Exited = r.exits.get(types.NamespacedName{Namespace: vc.Namespace, Name: vc.Name}, s.Topo.Now, s.Topo.Answers)
	s.Place = r.observePlacement(ctx, s)
	return s, nil
}

// previousSpec is the spec the guard compares an update with, to refuse what the CRD's
// rules and the webhook would have refused: the last applied one, else the immutable
// parts of the spec the members were created with.
func previousSpec(vc *v1alpha1.ValkeyCluster, nodes []*v1alpha1.ValkeyNode) *v1alpha1.ValkeyCluster {
	if vc.Status.AppliedSpec != nil {
		prev := vc.DeepCopy()
		prev.Spec = *vc.Status.AppliedSpec.DeepCopy()
		return prev
	}
	for _, vn := range nodes {
		if !vn.DeletionTimestamp.IsZero() {
			continue
		}
		prev := vc.DeepCopy()
		prev.Spec.WorkloadType = vn.Spec.WorkloadType
		prev.Spec.Persistence = vn.Spec.Persistence.DeepCopy()
		if vn.Spec.TLSSecretName == "" {
			prev.Spec.TLS = nil
		} else if prev.Spec.TLS == nil {
			prev.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: vn.Spec.TLSSecretName}}
		}
		return prev
	}
	return nil
}

// block records that a roll cannot progress; it outranks whatever else the pass waits for,
// as it is what the user must act on.
func (s *scope) block(member, format string, args ...any) {
	s.blocked = member
	s.step.reason = v1alpha1.ReasonRollBlocked
	s.step.message = fmt.Sprintf(format, args...)
}

// mayAct reports whether the controller may change anything for this spec.
func (s *scope) mayAct() bool { return s.guard.Valid() && len(s.immutable) == 0 }

// heldMessage says why the spec is not applied and what the operator does instead, or
// "" when the spec may be acted on.
func (s *scope) heldMessage() string {
	what := "the operator does not act on it"
	if s.healOnly {
		what = "the operator applies none of it and keeps healing the cluster as its last valid spec says"
	}
	switch {
	case !s.guard.Valid():
		return "the spec is invalid (see InvalidSpec): " + what
	case len(s.immutable) > 0:
		return fmt.Sprintf("the spec changes fields that cannot change after creation (%s): %s",
			s.immutable.ToAggregate().Error(), what)
	}
	return ""
}

// progress records what the pass is doing; the first call of a pass wins, as the phases
// run in the order that matters.
func (s *scope) progress(reason, format string, args ...any) {
	if s.step.reason == "" {
		s.step.reason = reason
		s.step.message = fmt.Sprintf(format, args...)
	}
}

// applied reports whether the spec is fully applied: ready, and nothing in flight.
func (s *scope) applied() bool {
	return s.Ready() && s.step.reason == "" && !s.Topo.OpenSlots() && s.MembersUpToDate()
}
