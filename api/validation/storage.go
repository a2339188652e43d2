package validation

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// reclaimPolicies are the supported values of persistence.reclaimPolicy.
var reclaimPolicies = []v1alpha1.ReclaimPolicy{v1alpha1.ReclaimRetain, v1alpha1.ReclaimDelete}

// validatePersistence checks the volume settings and that the workload can carry them.
func validatePersistence(ps *v1alpha1.PersistenceSpec, workload v1alpha1.WorkloadType, p *field.Path) field.ErrorList {
	if ps == nil {
		return nil
	}
	var errs field.ErrorList
	if workload != v1alpha1.WorkloadStatefulSet {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf(
			"persistence requires workloadType StatefulSet (workloadType is %s)", workload)))
	}
	if ps.Size.Sign() <= 0 {
		errs = append(errs, field.Invalid(p.Child("size"), ps.Size.String(), "must be greater than zero"))
	}
	if ps.ReclaimPolicy != "" && !slices.Contains(reclaimPolicies, ps.ReclaimPolicy) {
		errs = append(errs, field.NotSupported(p.Child("reclaimPolicy"), ps.ReclaimPolicy, reclaimPolicies))
	}
	if ps.StorageClassName != nil && *ps.StorageClassName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(*ps.StorageClassName) {
			errs = append(errs, field.Invalid(p.Child("storageClassName"), *ps.StorageClassName, msg))
		}
	}
	return errs
}

// validatePersistenceUpdate refuses adding or removing persistence, shrinking the
// volumes and changing their class.
func validatePersistenceUpdate(old, ps *v1alpha1.PersistenceSpec, p *field.Path) field.ErrorList {
	switch {
	case old == nil && ps == nil:
		return nil
	case old == nil:
		return field.ErrorList{field.Forbidden(p, "persistence cannot be added after creation")}
	case ps == nil:
		return field.ErrorList{field.Forbidden(p, "persistence cannot be removed after creation")}
	}
	var errs field.ErrorList
	if ps.Size.Cmp(old.Size) < 0 {
		errs = append(errs, field.Invalid(p.Child("size"), ps.Size.String(),
			fmt.Sprintf("can only grow (was %s)", old.Size.String())))
	}
	if !equalClass(old.StorageClassName, ps.StorageClassName) {
		errs = append(errs, field.Invalid(p.Child("storageClassName"), deref(ps.StorageClassName),
			fmt.Sprintf("is immutable (was %s)", className(old.StorageClassName))))
	}
	return errs
}

// equalClass compares two storage class names; unset and empty differ in Kubernetes
// (the default class versus no class).
func equalClass(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// deref returns the string a pointer points at, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// className renders a storage class name for a message.
func className(c *string) string {
	if c == nil {
		return "unset"
	}
	return fmt.Sprintf("%q", *c)
}
