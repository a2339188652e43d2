package acl

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/testsuite"
)

func TestCollector(t *testing.T) {
	member := func(name string, shard int32, applied metav1.ConditionStatus) *v1alpha1.ValkeyNode {
		vn := &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		vn.Spec.ClusterName, vn.Spec.ShardIndex = "vk", shard
		if applied != "" {
			vn.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionACLApplied, Status: applied}}
		}
		return vn
	}
	c := testsuite.FakeClient(member("vk-a", 0, metav1.ConditionTrue), member("vk-b", 1, metav1.ConditionFalse), member("vk-new", 1, ""))
	want := `
# HELP valkey_operator_acl_revision_applied 1 when the member's server runs the cluster's current aclfile revision (its ACLApplied condition is True), 0 while the revision is not live there yet.
# TYPE valkey_operator_acl_revision_applied gauge
valkey_operator_acl_revision_applied{cluster="vk",member="vk-a",namespace="ns",shard="0"} 1
valkey_operator_acl_revision_applied{cluster="vk",member="vk-b",namespace="ns",shard="1"} 0
`
	if err := testutil.CollectAndCompare(NewCollector(c), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
