package acl

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/membership"
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

// clustersOfSecret maps a Secret to the clusters whose users reference it.
func (r *Reconciler) clustersOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	return passwordSecrets.Clusters(ctx, r.Client, o)
}

// nodeChanged passes the member changes that matter to the ACL: a member appears or
// goes, its pod IP or server version changes, or its pod restarts (PodReady flips).
func nodeChanged() predicate.Predicate {
	return membership.Changed(func(a, b *v1alpha1.ValkeyNode) bool {
		return a.Status.Version != b.Status.Version
	})
}
