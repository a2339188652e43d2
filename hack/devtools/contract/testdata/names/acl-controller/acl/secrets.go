package acl

import "github.com/valkey-operator/valkey-operator/api/v1alpha1"

// The producer builds the name of its own Secret.
func systemUsers(cluster string) string { return v1alpha1.SystemUsersSecretName(cluster) }
