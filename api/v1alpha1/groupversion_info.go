// Package v1alpha1 holds the valkey.io/v1alpha1 API: ValkeyCluster, which users write,
// and ValkeyNode, one per cluster member, which the operator writes.
// +kubebuilder:object:generate=true
// +groupName=valkey.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of this package.
	GroupVersion = schema.GroupVersion{Group: "valkey.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package.
	//lint:ignore SA1019 the helper keeps registration short; this module already depends on controller-runtime.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
