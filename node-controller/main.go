// Command node-controller runs the operator's node-controller: each ValkeyNode becomes
// one running Valkey server (ConfigMap, workload, pod, claim) with its status.
package main

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/node-controller/internal/node"
)

// The metrics endpoint checks its clients (internal/operator.MetricsOptions).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

func main() {
	operator.Main(operator.Component{
		Name: node.FieldManager,
		Setup: func(_ context.Context, mgr ctrl.Manager, f operator.Flags) error {
			return node.Setup(mgr, f.MaxConcurrentReconciles)
		},
	})
}
