package acl

import (
	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/watches"
)

// passwordSecrets indexes ValkeyClusters by the names of their users' password Secrets.
var passwordSecrets = watches.SecretRefs{Index: "spec.users.passwordSecret.name", Names: passwordSecretNames}

// passwordSecretNames lists the password Secrets a cluster's users reference.
func passwordSecretNames(vc *v1alpha1.ValkeyCluster) []string {
	var out []string
	for _, u := range vc.Spec.Users {
		if u.PasswordSecret != nil {
			out = append(out, u.PasswordSecret.Name)
		}
	}
	return out
}

// versionChanged passes the member changes that matter to the ACL besides a new pod IP
// or a restart: its server's version changes.
func versionChanged(a, b *v1alpha1.ValkeyNode) bool {
	return a.Status.Version != b.Status.Version
}
