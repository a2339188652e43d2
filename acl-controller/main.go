// Command acl-controller keeps the ACL of every ValkeyCluster: the system users' Secret,
// the aclfile Secret, the live users on every member, and password rotations.
package main

import (
	"context"
	"flag"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/valkey-operator/valkey-operator/acl-controller/internal/acl"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
)

const name = "acl-controller"

func main() {
	var propagation, resync time.Duration
	operator.Main(operator.Component{
		Name: name,
		AddFlags: func(fs *flag.FlagSet) {
			operator.SecretPropagationFlag(fs, &propagation, "a password rotation waits this long before retiring old passwords")
			fs.DurationVar(&resync, "resync-period", acl.DefaultResync, "how often a settled cluster's members are checked again")
		},
		// This is the only component that reads users' password Secrets: its cache holds
		// every Secret of the watched namespaces, without managed fields.
		ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {Transform: cache.TransformStripManagedFields()}},
		Setup: func(ctx context.Context, mgr ctrl.Manager, f operator.Flags) error {
			pool, err := valkeyconn.NewPool(mgr, time.Second)
			if err != nil {
				return err
			}
			r := &acl.Reconciler{
				Client:           mgr.GetClient(),
				Scheme:           mgr.GetScheme(),
				Recorder:         mgr.GetEventRecorder(name),
				Pool:             pool,
				PropagationDelay: propagation,
				Resync:           resync,
			}
			metrics.Registry.MustRegister(acl.NewCollector(mgr.GetClient()))
			return r.SetupWithManager(ctx, mgr, f.MaxConcurrentReconciles)
		},
	})
}
