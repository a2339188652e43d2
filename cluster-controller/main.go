// Command cluster-controller reconciles ValkeyClusters: members, topology, slots,
// failover, rolls and scaling. It coordinates with the other controllers only through
// status conditions (see docs/status-contract.md).
package main

import (
	"context"
	"flag"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/cluster"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
)

func main() {
	fastFailover := true
	operator.Main(operator.Component{
		Name: cluster.FieldManager,
		AddFlags: func(fs *flag.FlagSet) {
			fs.BoolVar(&fastFailover, "fast-failover", fastFailover,
				"promote a primary's replica as soon as Kubernetes reports the primary's server exited (ValkeyNode ServerDown), "+
					"instead of waiting for Valkey's own failure detection")
		},
		// Only the Secrets the operator created (the system users' passwords, certificates
		// are read by the tls-controller): users' Secrets never enter this process.
		ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: operator.ManagedSecrets()},
		Setup: func(_ context.Context, mgr ctrl.Manager, f operator.Flags) error {
			pool, err := valkeyconn.NewPool(mgr, 0)
			if err != nil {
				return err
			}
			r := &cluster.Reconciler{
				Client:    mgr.GetClient(),
				APIReader: mgr.GetAPIReader(),
				Scheme:    mgr.GetScheme(),
				Recorder:  mgr.GetEventRecorder(cluster.FieldManager),
				Pool:      pool,
				Metrics:   cluster.NewMetrics(metrics.Registry),
				// The flag is read once the manager runs: flags are parsed by then.
				FastFailover: fastFailover,
			}
			return r.SetupWithManager(mgr, f.MaxConcurrentReconciles)
		},
	})
}
