//go:build e2e

// Package monitoring is the e2e suite of the chart's monitoring (docs/monitoring.md): the
// Prometheus Operator, built from the Go module proxy, runs a Prometheus from Debian's
// package that reads the chart's own ServiceMonitor, PodMonitor and PrometheusRule. It
// checks the series and labels the operator's and the exporters' scrapes give, an alert
// firing for a dead replica, and that every query of the dashboard returns data.
package monitoring

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

const suite = "monitoring"

// alertFor is the for: of ValkeyShardWithoutReplicaInSync in this suite (5m by default).
const alertFor = "10s"

var (
	testenv env.Environment
	prom    *framework.Prometheus
)

func TestMain(m *testing.M) {
	e, err := framework.NewEnv(suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	// The Prometheus Operator's CRDs first: the chart renders its monitors and rules only
	// when the API server has their kinds.
	e.Setup(framework.InstallPrometheusOperator())
	e.Setup(framework.InstallOperator(
		// The chart's default: Prometheus scrapes the components over HTTPS with its
		// service account's token.
		"metrics.secure=true",
		"metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.interval=5s",
		"metrics.podMonitor.enabled=true", "metrics.podMonitor.interval=5s",
		"metrics.prometheusRule.enabled=true", "metrics.dashboard.enabled=true",
		"metrics.prometheusRule.alerts.ValkeyShardWithoutReplicaInSync.for="+alertFor,
	))
	e.Setup(framework.StartPrometheus(framework.PrometheusOptions{MetricsReader: framework.OperatorRelease + "-metrics-reader"}, &prom))
	testenv = e
	os.Exit(e.Run(m))
}
