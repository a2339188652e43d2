package valkeyconn

import "github.com/valkey-operator/valkey-operator/api/v1alpha1"

// ForCluster reads status.acl through the API package.
func ForCluster(vc *v1alpha1.ValkeyCluster) string { return secretOf(vc) }

func secretOf(vc *v1alpha1.ValkeyCluster) string { return v1alpha1.SystemUsersSecretOf(vc) }
