package perf

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
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

func TestWriteCounterCoversNewDeployments(t *testing.T) {
	ctx := context.Background()
	dep := func(comp string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "valkey-operator-" + comp, Labels: map[string]string{ComponentLabel: comp}}}
		d.Spec.Template.Spec.ServiceAccountName = "valkey-operator-" + comp
		return d
	}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(dep("cluster-controller"), dep("webhooks")).Build()
	w, err := InstallWriteCounter(ctx, c, nil, "op")
	if err != nil {
		t.Fatal(err)
	}
	// The chart switched to controllers.combined: the manager runs as its own account.
	if err := c.Delete(ctx, dep("cluster-controller")); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, dep("manager")); err != nil {
		t.Fatal(err)
	}
	if err := w.Cover(ctx, "op"); err != nil {
		t.Fatal(err)
	}
	var list flowcontrolv1.FlowSchemaList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, fs := range list.Items {
		got[fs.Name] = fs.Spec.Rules[0].Subjects[0].ServiceAccount.Name
	}
	want := map[string]string{
		"bench-cluster-controller-leases": "valkey-operator-cluster-controller", "bench-cluster-controller-other": "valkey-operator-cluster-controller",
		"bench-webhooks-leases": "valkey-operator-webhooks", "bench-webhooks-other": "valkey-operator-webhooks",
		"bench-manager-leases": "valkey-operator-manager", "bench-manager-other": "valkey-operator-manager",
	}
	if len(got) != len(want) {
		t.Errorf("FlowSchemas %v, want %v", got, want)
	}
	for name, sa := range want {
		if got[name] != sa {
			t.Errorf("FlowSchema %s counts %q, want %q", name, got[name], sa)
		}
	}
	if len(w.schemas) != 6 || w.schemas["bench-manager-other"] != (schemaOf{component: "manager", kind: WritesOther}) {
		t.Errorf("schemas %v", w.schemas)
	}
}
