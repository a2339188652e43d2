package handlers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

const operatorSA = "system:serviceaccount:valkey-system:valkey-operator-cluster-controller"

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func testCluster() *v1alpha1.ValkeyCluster {
	return &v1alpha1.ValkeyCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ValkeyCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default"},
		Spec: v1alpha1.ValkeyClusterSpec{Shards: 3, ReplicasPerShard: ptr.To[int32](1),
			WorkloadType: v1alpha1.WorkloadStatefulSet},
	}
}

func testNode() *v1alpha1.ValkeyNode {
	return &v1alpha1.ValkeyNode{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ValkeyNode"},
		ObjectMeta: metav1.ObjectMeta{Name: "demo-abcde", Namespace: "default", Finalizers: []string{"valkey.io/member"}},
		Spec: v1alpha1.ValkeyNodeSpec{ClusterName: "demo", ShardIndex: 0, Revision: 1,
			WorkloadType: v1alpha1.WorkloadStatefulSet, Image: v1alpha1.DefaultImage,
			ACLSecretName: "demo-acl", SystemUsersSecretName: "demo-system-users"},
	}
}

// asUser returns a context carrying an admission request sent by user.
func asUser(user string) context.Context {
	return admission.NewContextWithRequest(context.Background(), admission.Request{
		AdmissionRequest: admissionv1.AdmissionRequest{UserInfo: authenticationv1.UserInfo{Username: user}},
	})
}

// review builds an admission request as the API server sends it.
func review(t *testing.T, op admissionv1.Operation, user string, obj, old runtime.Object) admission.Request {
	t.Helper()
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: op, UserInfo: authenticationv1.UserInfo{Username: user},
	}}
	if obj != nil {
		req.Object = runtime.RawExtension{Raw: mustJSON(t, obj)}
	}
	if old != nil {
		req.OldObject = runtime.RawExtension{Raw: mustJSON(t, old)}
	}
	return req
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// expectError asserts that err is nil when want is empty, and otherwise contains
// every wanted substring.
func expectError(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("want no error, got %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("want an error containing %q, got none", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("want an error containing %q, got %v", w, err)
		}
	}
}
