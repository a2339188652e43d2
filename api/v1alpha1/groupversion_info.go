// Package v1alpha1 holds the valkey.io/v1alpha1 API: ValkeyCluster, which users write,
// and ValkeyNode, one per cluster member, which the operator writes.
// +kubebuilder:object:generate=true
// +groupName=valkey.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of this package.
	GroupVersion = schema.GroupVersion{Group: "valkey.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package (apimachinery's, so the API
	// module needs no controller-runtime).
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers every kind of the group version, with the meta types.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ValkeyCluster{}, &ValkeyClusterList{}, &ValkeyNode{}, &ValkeyNodeList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
