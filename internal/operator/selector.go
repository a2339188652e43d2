package operator

import (
	"k8s.io/apimachinery/pkg/labels"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// ManagedBySelector selects the objects the operator created (label
// app.kubernetes.io/managed-by), for caches that must hold nothing else.
func ManagedBySelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy})
}
