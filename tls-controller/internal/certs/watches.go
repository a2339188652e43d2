package certs

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/watches"
)

// certificateSecrets indexes ValkeyClusters by the Secret their certificate comes from
// (spec.tls.certificate.secretName, or the one cert-manager writes) and by the system
// users' Secret status.acl names (the operator's password to the members).
var certificateSecrets = watches.SecretRefs{Index: "spec.tls.certificate.secretName", Names: certificateSecretName}

// certificateSecretName is the Secret a cluster's certificate comes from, if any, and the
// system users' Secret its status names.
func certificateSecretName(vc *v1alpha1.ValkeyCluster) []string {
	var out []string
	if name := sourceName(vc); name != "" {
		out = append(out, name)
	}
	if users, err := v1alpha1.SystemUsersSecretOf(vc); err == nil {
		out = append(out, users)
	}
	return out
}

// clusterChanged passes the cluster events that matter: a cluster with TLS (or with
// TLS status left over, as owns says) appears, its spec changes, or it is deleted (the
// clusters that shared its CA lose their warning).
func clusterChanged(owns func(*v1alpha1.ValkeyCluster) bool) predicate.Predicate {
	relevant := func(o client.Object) bool {
		vc, ok := o.(*v1alpha1.ValkeyCluster)
		return ok && (vc.Spec.TLS != nil || owns(vc))
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return relevant(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return relevant(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return relevant(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() && (relevant(e.ObjectOld) || relevant(e.ObjectNew))
		},
	}
}

// memberChanged passes the member changes that matter to the certificate besides a new
// pod IP or a restart: the Secret it mounts changes, or a name the certificate covers
// (CertificateNames): its external address, or its leaving.
func memberChanged(a, b *v1alpha1.ValkeyNode) bool {
	return a.Spec.TLSSecretName != b.Spec.TLSSecretName || a.Status.ExternalAddress != b.Status.ExternalAddress ||
		a.DeletionTimestamp.IsZero() != b.DeletionTimestamp.IsZero()
}
