package operator

import (
	"k8s.io/apimachinery/pkg/labels"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func managedBySelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy})
}
