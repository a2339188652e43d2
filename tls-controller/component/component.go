// Package component is the tls-controller as the operator runs it, alone (its own
// binary) or beside the other controllers in one process (the manager binary): it checks
// the certificate Secret of every ValkeyCluster with TLS (the user's, or the one
// cert-manager writes for the Certificate it keeps with spec.tls.certManager), copies it
// once it passes into the Secret the pods mount ({cluster}-tls-accepted), reloads it live
// on every member, and warns before it expires.
package component

import (
	"context"
	"flag"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/tls-controller/internal/certs"
)

// The metrics endpoint checks its clients (internal/operator.MetricsOptions).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

const name = "tls-controller"

// New returns the component.
func New() operator.Component {
	r := &certs.Reconciler{}
	return operator.Component{
		Name: name,
		AddFlags: func(fs *flag.FlagSet) {
			fs.DurationVar(&r.ExpiryWarning, "expiry-warning", certs.DefaultExpiryWarning,
				"how long before its end a certificate is reported by the CertificateExpiring condition and a Warning event")
			operator.SecretPropagationFlag(fs, &r.PropagationDelay, "when only ca.crt changes, members are reloaded once this has passed")
			fs.DurationVar(&r.Resync, "resync-period", certs.DefaultResync, "how often a settled cluster's members are checked again")
			fs.StringVar(&r.ClusterDomain, "cluster-domain", certs.DefaultClusterDomain, "DNS domain of the Kubernetes cluster, for the client names a certificate should cover")
		},
		// This component reads users' certificate Secrets, from the API server when a
		// cluster names them: its cache holds the operator's own Secrets and the names of
		// the others (operator.SecretNames). cert-manager's objects are in a cache of its
		// own, started once a cluster asks for cert-manager and its CRDs exist.
		Setup: func(ctx context.Context, mgr ctrl.Manager, f operator.Flags) error {
			pool, err := valkeyconn.For(mgr)
			if err != nil {
				return err
			}
			r.Client, r.APIReader, r.Namespaces = mgr.GetClient(), mgr.GetAPIReader(), f.WatchNamespaces
			r.Scheme, r.Recorder, r.Pool = mgr.GetScheme(), mgr.GetEventRecorder(name), pool
			metrics.Registry.MustRegister(certs.NewCollector(mgr.GetClient()))
			return r.SetupWithManager(ctx, mgr, f.MaxConcurrentReconciles)
		},
	}
}
