// Package statemetrics builds Prometheus collectors whose series are computed at scrape
// time from the objects the manager's cache holds: the status the controllers wrote.
// Such a series exists exactly as long as its object does, so deleted clusters and
// retired members leave no stale series behind, and no Valkey server is asked anything.
package statemetrics

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// Emit adds one gauge sample of desc with the label values in desc's order.
type Emit func(desc *prometheus.Desc, value float64, labels ...string)

// Collector computes its gauges from a client.Reader (the manager's cache) on each scrape.
type Collector struct {
	Reader client.Reader
	Descs  []*prometheus.Desc
	// Gather reads what it needs and emits the samples; an error drops this scrape's
	// samples of the failing part only (what was emitted before it stays).
	Gather func(ctx context.Context, r client.Reader, emit Emit) error
	// Timeout bounds a scrape's reads (default 5 s: the cache answers from memory once
	// synced, and a scrape before the sync must not hang).
	Timeout time.Duration
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.Descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	emit := func(d *prometheus.Desc, v float64, labels ...string) {
		m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, v, labels...)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(d, err)
			return
		}
		ch <- m
	}
	if err := c.Gather(ctx, c.Reader, emit); err != nil {
		for _, d := range c.Descs {
			ch <- prometheus.NewInvalidMetric(d, err)
			break
		}
	}
}

// Desc is a gauge's description with the operator's metric prefix.
func Desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("valkey_operator_"+name, help, labels, nil)
}

// Bool is 1 for true, 0 for false.
func Bool(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Timestamp is t in Unix seconds.
func Timestamp(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// Shard is a shard index as a label value.
func Shard(i int32) string { return strconv.Itoa(int(i)) }

// MemberLabels are the labels of a per-member series, in the order MemberCondition
// gives their values.
var MemberLabels = []string{"namespace", "cluster", "shard", "member"}

// MemberCondition emits desc for each member that counts passes (all when nil): 1 when
// its condition typ is True, 0 otherwise.
func MemberCondition(ctx context.Context, r client.Reader, emit Emit, desc *prometheus.Desc, typ string, counts func(*v1alpha1.ValkeyNode) bool) error {
	var vns v1alpha1.ValkeyNodeList
	if err := r.List(ctx, &vns); err != nil {
		return err
	}
	for _, vn := range vns.Items {
		if counts != nil && !counts(&vn) {
			continue
		}
		emit(desc, Bool(conditions.IsTrue(vn.Status.Conditions, typ)), vn.Namespace, vn.Spec.ClusterName, Shard(vn.Spec.ShardIndex), vn.Name)
	}
	return nil
}

// Reported passes the members that carry the condition typ: those its controller has
// reported on.
func Reported(typ string) func(*v1alpha1.ValkeyNode) bool {
	return func(vn *v1alpha1.ValkeyNode) bool { return conditions.Get(vn.Status.Conditions, typ) != nil }
}
