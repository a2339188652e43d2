package statemetrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/operator"
)

func TestMemberCondition(t *testing.T) {
	member := func(name string, shard int32, st metav1.ConditionStatus) *v1alpha1.ValkeyNode {
		vn := &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		vn.Spec.ClusterName, vn.Spec.ShardIndex = "vk", shard
		if st != "" {
			vn.Status.Conditions = []metav1.Condition{{Type: "Done", Status: st}}
		}
		return vn
	}
	c := fake.NewClientBuilder().WithScheme(operator.Scheme()).
		WithObjects(member("vk-a", 0, metav1.ConditionTrue), member("vk-b", 1, metav1.ConditionFalse), member("vk-new", 1, "")).Build()
	desc := Desc("done", "1 when Done is True.", MemberLabels...)
	head := "# HELP valkey_operator_done 1 when Done is True.\n# TYPE valkey_operator_done gauge\n"
	a := `valkey_operator_done{cluster="vk",member="vk-a",namespace="ns",shard="0"} 1` + "\n"
	b := `valkey_operator_done{cluster="vk",member="vk-b",namespace="ns",shard="1"} 0` + "\n"
	fresh := `valkey_operator_done{cluster="vk",member="vk-new",namespace="ns",shard="1"} 0` + "\n"
	for _, tc := range []struct {
		name   string
		counts func(*v1alpha1.ValkeyNode) bool
		want   string
	}{
		{"every member: one without the condition counts as 0", nil, head + a + b + fresh},
		{"the members reported on", Reported("Done"), head + a + b},
		{"none", func(*v1alpha1.ValkeyNode) bool { return false }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			col := &Collector{Reader: c, Descs: []*prometheus.Desc{desc}, Gather: func(ctx context.Context, r client.Reader, emit Emit) error {
				return MemberCondition(ctx, r, emit, desc, "Done", tc.counts)
			}}
			if err := testutil.CollectAndCompare(col, strings.NewReader(tc.want)); err != nil {
				t.Error(err)
			}
		})
	}
}
