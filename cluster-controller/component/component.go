// Package component is the cluster-controller as the operator runs it, alone (its own
// binary) or beside the other controllers in one process (the manager binary): it
// reconciles ValkeyClusters (members, topology, slots, failover, rolls and scaling) and
// coordinates with the other controllers only through status conditions (see
// docs/status-contract.md).
package component

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/cluster"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
)

// The metrics endpoint checks its clients (internal/operator.MetricsOptions).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// New returns the component.
func New() operator.Component {
	np := cluster.NetworkPolicyDefaults{OperatorNamespace: os.Getenv("POD_NAMESPACE")}
	fastFailover := true
	var metricsPeers string
	return operator.Component{
		Name: cluster.FieldManager,
		AddFlags: func(fs *flag.FlagSet) {
			fs.BoolVar(&fastFailover, "fast-failover", fastFailover,
				"promote a primary's replica as soon as Kubernetes reports the primary's server exited (ValkeyNode ServerDown), "+
					"instead of waiting for Valkey's own failure detection")
			fs.BoolVar(&np.Enabled, "network-policy-default", true,
				"keep a NetworkPolicy for every cluster that leaves spec.networkPolicy.enabled unset")
			fs.StringVar(&metricsPeers, "network-policy-metrics", "",
				"NetworkPolicy peers (a JSON list) that may scrape the exporters of clusters whose spec lists none")
			fs.StringVar(&np.OperatorNamespace, "operator-namespace", np.OperatorNamespace,
				"namespace of the operator's components, which the clusters' NetworkPolicies admit (default: $POD_NAMESPACE)")
		},
		// Only the Secrets the operator created (the system users' passwords, certificates
		// are read by the tls-controller): users' Secrets never enter this process.
		Setup: func(_ context.Context, mgr ctrl.Manager, f operator.Flags) error {
			if metricsPeers != "" {
				if err := json.Unmarshal([]byte(metricsPeers), &np.Metrics); err != nil {
					return fmt.Errorf("--network-policy-metrics: want a JSON list of NetworkPolicy peers: %w", err)
				}
			}
			pool, err := valkeyconn.For(mgr)
			if err != nil {
				return err
			}
			r := &cluster.Reconciler{
				Client:        mgr.GetClient(),
				APIReader:     mgr.GetAPIReader(),
				Scheme:        mgr.GetScheme(),
				Recorder:      mgr.GetEventRecorder(cluster.FieldManager),
				Pool:          pool,
				Metrics:       cluster.NewMetrics(metrics.Registry),
				NetworkPolicy: np,
				// The flag is read once the manager runs: flags are parsed by then.
				FastFailover: fastFailover,
			}
			return r.SetupWithManager(mgr, f.MaxConcurrentReconciles)
		},
	}
}
