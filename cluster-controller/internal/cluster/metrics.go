package cluster

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// Metrics are the operator's own metrics, served on the manager's metrics endpoint.
type Metrics struct {
	failovers *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "valkey_operator_failovers_total",
			Help: "Failovers the operator made, by cluster, shard and kind: planned (CLUSTER FAILOVER to a replica in sync, counted once the replica serves the shard) or takeover (forced after quorum was lost).",
		}, []string{"namespace", "cluster", "shard", "kind"}),
	}
	reg.MustRegister(m.failovers)
	return m
}

func (m *Metrics) failover(vc *v1alpha1.ValkeyCluster, shard int32, kind string) {
	if m == nil {
		return
	}
	m.failovers.WithLabelValues(vc.Namespace, vc.Name, strconv.Itoa(int(shard)), kind).Inc()
}
