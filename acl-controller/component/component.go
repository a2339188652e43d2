// Package component is the acl-controller as the operator runs it, alone (its own
// binary) or beside the other controllers in one process (the manager binary): it keeps
// the ACL of every ValkeyCluster (the system users' Secret, the aclfile Secret, the live
// users on every member, password rotations).
package component

import (
	"context"
	"flag"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/valkey-operator/valkey-operator/acl-controller/internal/acl"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/publish"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
)

// The metrics endpoint checks its clients (internal/operator.MetricsOptions).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

const name = "acl-controller"

// New returns the component.
func New() operator.Component {
	var propagation, resync time.Duration
	return operator.Component{
		Name: name,
		AddFlags: func(fs *flag.FlagSet) {
			operator.SecretPropagationFlag(fs, &propagation, "a password rotation waits this long before retiring old passwords")
			fs.DurationVar(&resync, "resync-period", acl.DefaultResync, "how often a settled cluster's members are checked again")
		},
		// This is the only component that reads users' password Secrets, and it reads
		// them from the API server when a cluster names them: its cache holds the
		// operator's own Secrets and the names of the others (operator.SecretNames).
		Setup: func(ctx context.Context, mgr ctrl.Manager, f operator.Flags) error {
			pool, err := valkeyconn.For(mgr)
			if err != nil {
				return err
			}
			r := &acl.Reconciler{Base: publish.Base{
				Client:           mgr.GetClient(),
				APIReader:        mgr.GetAPIReader(),
				Namespaces:       f.WatchNamespaces,
				Scheme:           mgr.GetScheme(),
				Recorder:         mgr.GetEventRecorder(name),
				Pool:             pool,
				PropagationDelay: propagation,
				Resync:           resync,
			}}
			metrics.Registry.MustRegister(acl.NewCollector(mgr.GetClient()))
			return r.SetupWithManager(ctx, mgr, f.MaxConcurrentReconciles)
		},
	}
}
