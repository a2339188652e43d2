package handlers

import (
	"context"
	"fmt"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
)

// +kubebuilder:webhook:path=/validate-valkey-io-v1alpha1-valkeynode,mutating=false,failurePolicy=fail,sideEffects=None,groups=valkey.io,resources=valkeynodes,verbs=create;update,versions=v1alpha1,name=valkeynode.validate.valkey.io,admissionReviewVersions=v1

var nodeResource = schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "valkeynodes"}

// NodeValidator keeps ValkeyNodes in the operator's hands. Who may do what:
//
//   - create: only the operator's service accounts;
//   - update: the operator's service accounts (and the spec must pass the validation
//     rules), the garbage collector and the namespace controller, and anyone whose
//     update only removes finalizers (a way out when the operator is gone);
//   - delete: anyone. Deleting a member by hand is a failure the operator recovers
//     from (it replaces the member), and blocking it would also block the cleanup
//     of a namespace.
type NodeValidator struct {
	// Operators are the operator's service accounts.
	Operators Identities
}

var _ admission.Validator[*v1alpha1.ValkeyNode] = NodeValidator{}

// ValidateCreate admits a new ValkeyNode from the operator only.
func (v NodeValidator) ValidateCreate(ctx context.Context, n *v1alpha1.ValkeyNode) (admission.Warnings, error) {
	user, err := requestUser(ctx)
	if err != nil {
		return nil, err
	}
	if !v.Operators.IsOperator(user) {
		return nil, v.forbidden(n.Name, "create", user)
	}
	return nil, invalid(nodeKind, n.Name, validation.ValidateNode(n))
}

// ValidateUpdate admits a change from the operator (when the spec is valid), from the
// built-in controllers, and from anyone when it only removes finalizers.
func (v NodeValidator) ValidateUpdate(ctx context.Context, old, n *v1alpha1.ValkeyNode) (admission.Warnings, error) {
	user, err := requestUser(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case v.Operators.IsOperator(user):
		if equality.Semantic.DeepEqual(old.Spec, n.Spec) {
			return nil, nil
		}
		return nil, invalid(nodeKind, n.Name, validation.ValidateNodeUpdate(old, n))
	case isKubeController(user), onlyRemovesFinalizers(old, n):
		return nil, nil
	}
	return nil, v.forbidden(n.Name, "update", user)
}

// ValidateDelete admits every deletion.
func (NodeValidator) ValidateDelete(context.Context, *v1alpha1.ValkeyNode) (admission.Warnings, error) {
	return nil, nil
}

// forbidden explains why a user may not write a ValkeyNode.
func (v NodeValidator) forbidden(name, verb string, user authenticationv1.UserInfo) error {
	return apierrors.NewForbidden(nodeResource, name, fmt.Errorf(
		"ValkeyNodes are internal to the valkey operator and only its service accounts (%s) may %s them; "+
			"user %q may delete a ValkeyNode or remove its finalizers, nothing else: change the ValkeyCluster instead",
		v.Operators, verb, user.Username))
}

// requestUser returns who sent the admission request being handled.
func requestUser(ctx context.Context) (authenticationv1.UserInfo, error) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return authenticationv1.UserInfo{}, fmt.Errorf("read admission request: %w", err)
	}
	return req.UserInfo, nil
}

// onlyRemovesFinalizers reports whether n differs from old in nothing but finalizers
// taken away (or not at all).
func onlyRemovesFinalizers(old, n *v1alpha1.ValkeyNode) bool {
	for _, f := range n.Finalizers {
		if !slices.Contains(old.Finalizers, f) {
			return false
		}
	}
	return equality.Semantic.DeepEqual(old.Spec, n.Spec) &&
		equality.Semantic.DeepEqual(old.Status, n.Status) &&
		equality.Semantic.DeepEqual(old.Labels, n.Labels) &&
		equality.Semantic.DeepEqual(old.Annotations, n.Annotations) &&
		equality.Semantic.DeepEqual(old.OwnerReferences, n.OwnerReferences)
}
