package perf

import (
	"testing"
	"time"
)

func TestWriteRates(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := WriteSnapshot{At: t0,
		Component:  map[string]map[string]float64{"cluster-controller": {WritesLeases: 100, WritesOther: 10}, "webhooks": {WritesLeases: 50, WritesOther: 0}},
		ByResource: map[string]float64{"PUT coordination.k8s.io/leases": 500, "PATCH valkey.io/valkeyclusters/status": 7}}
	b := WriteSnapshot{At: t0.Add(30 * time.Second),
		Component:  map[string]map[string]float64{"cluster-controller": {WritesLeases: 115, WritesOther: 11}, "webhooks": {WritesLeases: 65, WritesOther: 0}},
		ByResource: map[string]float64{"PUT coordination.k8s.io/leases": 560, "PATCH valkey.io/valkeyclusters/status": 7}}
	r := b.Rates(a)
	if r.Component["cluster-controller"][WritesLeases] != 30 || r.Component["cluster-controller"][WritesOther] != 2 {
		t.Errorf("cluster-controller rates %v", r.Component["cluster-controller"])
	}
	if r.Total(WritesLeases) != 60 || r.Total(WritesOther) != 2 {
		t.Errorf("totals %v %v", r.Total(WritesLeases), r.Total(WritesOther))
	}
	if len(r.ByResource) != 1 || r.ByResource["PUT coordination.k8s.io/leases"] != 120 {
		t.Errorf("by resource %v (unchanged ones must be left out)", r.ByResource)
	}
	if got := r.Describe(WritesOther); got != "cluster-controller 2.0/min" {
		t.Errorf("Describe = %q", got)
	}
	if d := b.Delta(a); d["webhooks"][WritesLeases] != 15 {
		t.Errorf("delta %v", d)
	}
}

func TestResourceKey(t *testing.T) {
	cases := []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"verb": "POST", "group": "", "resource": "pods"}, "POST core/pods"},
		{map[string]string{"verb": "PATCH", "group": "valkey.io", "resource": "valkeynodes", "subresource": "status"}, "PATCH valkey.io/valkeynodes/status"},
	}
	for _, c := range cases {
		if got := resourceKey(c.labels); got != c.want {
			t.Errorf("resourceKey(%v) = %q, want %q", c.labels, got, c.want)
		}
	}
}

func TestFlowSchema(t *testing.T) {
	leases := flowSchema("cluster-controller", WritesLeases, "ns", "sa", 20)
	other := flowSchema("cluster-controller", WritesOther, "ns", "sa", 21)
	if leases.Spec.MatchingPrecedence >= other.Spec.MatchingPrecedence {
		t.Error("the leases schema must be matched first")
	}
	rl, ro := leases.Spec.Rules[0], other.Spec.Rules[0]
	if rl.ResourceRules[0].Resources[0] != "leases" || ro.ResourceRules[0].Resources[0] != "*" {
		t.Errorf("resources: %v %v", rl.ResourceRules[0].Resources, ro.ResourceRules[0].Resources)
	}
	if s := rl.Subjects[0].ServiceAccount; s == nil || s.Name != "sa" || s.Namespace != "ns" {
		t.Errorf("subject %+v", rl.Subjects[0])
	}
	for _, v := range ro.ResourceRules[0].Verbs {
		if v == "get" || v == "list" || v == "watch" {
			t.Errorf("the schema counts reads: %v", ro.ResourceRules[0].Verbs)
		}
	}
	if leases.Name != "bench-cluster-controller-leases" || leases.Labels[writeCounterLabel] != "true" {
		t.Errorf("meta %+v", leases.ObjectMeta)
	}
}
