package certs

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/internal/operator"
)

// CacheByObject is what the manager's cache holds: whole Secrets only when the operator
// made them (without managed fields), the names of the others in a cache of their own (operator.SecretNames);
// users' Secrets are read from the API server when a cluster names them.
func CacheByObject() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: operator.ManagedBySelector(), Transform: cache.TransformStripManagedFields()},
	}
}
