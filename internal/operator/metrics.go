package operator

import (
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// MetricsSecureUsage explains --metrics-secure (every component has it).
const MetricsSecureUsage = "serve metrics over HTTPS (a self-signed certificate) to clients that authenticate with a " +
	"token the API server accepts (TokenReview) and may get /metrics (SubjectAccessReview: the chart's metrics-reader " +
	"ClusterRole); false serves plain HTTP to anyone, for local use"

// Every component's service account needs these to check the clients of its metrics
// endpoint; the markers are in each component's main.go (controller-gen reads the
// component's own folder):
//
//	+kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
//	+kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// MetricsOptions serves the metrics on addr: over HTTPS to the clients the API server
// authenticates and authorizes (MetricsAuthFilter) when secure, plain HTTP otherwise.
func MetricsOptions(addr string, secure bool) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr}
	if secure {
		o.SecureServing = true
		o.FilterProvider = MetricsAuthFilter
	}
	return o
}
