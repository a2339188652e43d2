// Command tls-controller keeps the certificates of every ValkeyCluster with TLS: it
// checks the user's certificate Secret, copies it once it passes into the Secret the
// pods mount ({cluster}-tls-accepted), reloads it live on every member, and warns before it
// expires.
package main

import (
	"context"
	"flag"
	"time"

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

func main() {
	r := &certs.Reconciler{}
	operator.Main(operator.Component{
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
		// the others (operator.SecretNames).
		Setup: func(ctx context.Context, mgr ctrl.Manager, f operator.Flags) error {
			r.Client = mgr.GetClient()
			r.APIReader = mgr.GetAPIReader()
			r.Namespaces = f.WatchNamespaces
			r.Scheme = mgr.GetScheme()
			r.Recorder = mgr.GetEventRecorder(name)
			pool, err := valkeyconn.NewPool(mgr, time.Second)
			if err != nil {
				return err
			}
			r.Pool = pool
			metrics.Registry.MustRegister(certs.NewCollector(mgr.GetClient()))
			return r.SetupWithManager(ctx, mgr, f.MaxConcurrentReconciles)
		},
	})
}
