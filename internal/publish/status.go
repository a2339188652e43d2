package publish

import (
	"context"
	"errors"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/membership"
	"github.com/valkey-operator/valkey-operator/internal/status"
)

// Status is what a controller in the frame owns in status, and its one writer: on a
// cluster its condition types and one status field of its own, on each member its
// condition types, each written only when it changed, under its field manager.
type Status struct {
	status.Writer
	// Field is the JSON name of the cluster status field the controller owns ("acl").
	Field string
	// Current returns that field of a cluster (vc.Status.ACL).
	Current func(*v1alpha1.ValkeyCluster) any
	// Conditions are the condition types the controller writes on clusters, its
	// readiness condition (ACLReady) first.
	Conditions []string
	// NodeConditions are the condition types it writes on members.
	NodeConditions []string
}

// WriteCluster applies the owned status of the cluster when it changed: field as the
// controller's status field (nil: the field is given up) and conds.
func (s Status) WriteCluster(ctx context.Context, vc *v1alpha1.ValkeyCluster, field any, conds ...metav1.Condition) error {
	return s.Cluster(ctx, vc, &status.Field{Name: s.Field, Before: s.Current(vc), After: field}, conds...)
}

// WriteNode applies the owned conditions of a member when they changed.
func (s Status) WriteNode(ctx context.Context, vn *v1alpha1.ValkeyNode, conds ...metav1.Condition) error {
	return s.Node(ctx, vn, conds...)
}

// Keep writes the cluster's owned conditions as they are, or Unknown with why when one
// was never set, except those extra sets (the guard's InvalidSpec, a NameConflict), and
// field as the status field.
func (s Status) Keep(ctx context.Context, vc *v1alpha1.ValkeyCluster, field any, why string, extra ...metav1.Condition) error {
	conds := make([]metav1.Condition, 0, len(s.Conditions)+len(extra))
	for _, t := range s.Conditions {
		if !slices.ContainsFunc(extra, func(c metav1.Condition) bool { return c.Type == t }) {
			conds = append(conds, KeepOrUnknown(vc.Status.Conditions, t, why, vc.Generation))
		}
	}
	return s.WriteCluster(ctx, vc, field, append(conds, extra...)...)
}

// KeepOrUnknown returns the condition typ of list, or Unknown with why when there is
// none yet.
func KeepOrUnknown(list []metav1.Condition, typ, why string, gen int64) metav1.Condition {
	if cur := conditions.Get(list, typ); cur != nil {
		return *cur
	}
	return conditions.Unknown(typ, v1alpha1.ReasonUnknown, why, gen)
}

// Owns reports whether a cluster carries anything the controller writes.
func (s Status) Owns(vc *v1alpha1.ValkeyCluster) bool {
	return !isNil(s.Current(vc)) || len(conditions.Owned(vc.Status.Conditions, s.Conditions...)) > 0
}

// Forget removes what the controller wrote on a cluster and its members.
func (s Status) Forget(ctx context.Context, vc *v1alpha1.ValkeyCluster) error {
	var errs []error
	if s.Owns(vc) {
		errs = append(errs, status.Apply(ctx, s.Client, s.FieldManager, vc, v1alpha1.GroupVersion.WithKind("ValkeyCluster"), struct{}{}))
	}
	nodes, err := membership.Of(ctx, s.Client, vc)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for i := range nodes {
		if len(conditions.Owned(nodes[i].Status.Conditions, s.NodeConditions...)) > 0 {
			errs = append(errs, status.Apply(ctx, s.Client, s.FieldManager, &nodes[i], v1alpha1.GroupVersion.WithKind("ValkeyNode"), struct{}{}))
		}
	}
	return errors.Join(errs...)
}

// Announce records the readiness condition ready of a cluster when it is False and new
// (not the cluster's condition of that type yet): a held rollout (reason Paused) as a
// Normal RolloutHeld event, a certificate cert-manager is issuing (CertificateIssuing)
// as a Normal event of that reason, any other as a Warning event of its reason, with
// action.
func Announce(rec events.EventRecorder, vc *v1alpha1.ValkeyCluster, ready metav1.Condition, action string) {
	old := conditions.Get(vc.Status.Conditions, ready.Type)
	if ready.Status != metav1.ConditionFalse || (old != nil && old.Status == ready.Status && old.Message == ready.Message) {
		return
	}
	switch ready.Reason {
	case v1alpha1.ReasonPaused:
		rec.Eventf(vc, nil, corev1.EventTypeNormal, "RolloutHeld", "Hold", "%s", ready.Message)
		return
	case v1alpha1.ReasonCertificateIssuing:
		rec.Eventf(vc, nil, corev1.EventTypeNormal, ready.Reason, action, "%s", ready.Message)
		return
	}
	rec.Eventf(vc, nil, corev1.EventTypeWarning, ready.Reason, action, "%s", ready.Message)
}

// isNil reports whether v is nil or a nil pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
