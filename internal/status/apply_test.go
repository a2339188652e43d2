package status

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// TestOwns: the writer reads its own field manager's entries of the status
// subresource only.
func TestOwns(t *testing.T) {
	vc := &v1alpha1.ValkeyCluster{}
	vc.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "cluster-controller", Subresource: "status", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{}}}}`)},
		{Manager: "acl-controller", Subresource: "status", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{"k:{\"type\":\"InvalidSpec\"}":{}}}}`)},
		{Manager: "acl-controller", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{}}}`)},
	}
	w := Writer{FieldManager: "acl-controller"}
	if !w.owns(vc, v1alpha1.ConditionInvalidSpec) || w.owns(vc, v1alpha1.ConditionReady) {
		t.Fatal("ownership misread")
	}
	if (Writer{FieldManager: "tls-controller"}).owns(vc, v1alpha1.ConditionInvalidSpec) {
		t.Fatal("another manager's condition read as owned")
	}
}

func TestIsNil(t *testing.T) {
	var acl *v1alpha1.ACLStatus
	for _, tc := range []struct {
		v    any
		want bool
	}{{nil, true}, {acl, true}, {&v1alpha1.ACLStatus{}, false}, {"x", false}} {
		if got := isNil(tc.v); got != tc.want {
			t.Errorf("isNil(%#v) = %v, want %v", tc.v, got, tc.want)
		}
	}
	if !Equal(nilIfNil(acl), nilIfNil(nil)) {
		t.Error("a nil pointer and nil are not the same absent field")
	}
}
