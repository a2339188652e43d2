package handlers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
)

// +kubebuilder:webhook:path=/validate-valkey-io-v1alpha1-valkeycluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=valkey.io,resources=valkeyclusters,verbs=create;update,versions=v1alpha1,name=valkeycluster.validate.valkey.io,admissionReviewVersions=v1

var (
	clusterKind = schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "ValkeyCluster"}
	nodeKind    = schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "ValkeyNode"}
)

// ClusterValidator admits ValkeyClusters that pass every rule of the validation
// package, and returns that package's warnings.
type ClusterValidator struct{}

var _ admission.Validator[*v1alpha1.ValkeyCluster] = ClusterValidator{}

// ValidateCreate checks a new cluster.
func (ClusterValidator) ValidateCreate(_ context.Context, c *v1alpha1.ValkeyCluster) (admission.Warnings, error) {
	return validation.ClusterWarnings(c), invalid(clusterKind, c.Name, validation.ValidateCluster(c))
}

// ValidateUpdate checks a changed cluster against the stored one. An update that
// leaves the spec as it is (metadata such as finalizers and labels) is always
// admitted, so a cluster accepted under older rules can still be labelled or deleted.
// A config entry the update keeps as it was, under the same image, is not checked
// against the key table again (validation.ValidateClusterUpdate); what the table
// refuses in it comes back as a warning.
func (ClusterValidator) ValidateUpdate(_ context.Context, old, c *v1alpha1.ValkeyCluster) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(old.Spec, c.Spec) {
		return nil, nil
	}
	return validation.ClusterUpdateWarnings(old, c), invalid(clusterKind, c.Name, validation.ValidateClusterUpdate(old, c))
}

// ValidateDelete admits every deletion.
func (ClusterValidator) ValidateDelete(context.Context, *v1alpha1.ValkeyCluster) (admission.Warnings, error) {
	return nil, nil
}

// invalid turns a non-empty error list into the API's Invalid error (HTTP 422, one
// cause per field); it returns nil for an empty list.
func invalid(kind schema.GroupKind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(kind, name, errs)
}
