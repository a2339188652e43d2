package handlers

import (
	"context"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

const (
	garbageCollector = "system:serviceaccount:kube-system:generic-garbage-collector"
	namespaceCtrl    = "system:serviceaccount:kube-system:namespace-controller"
	admin            = "kubernetes-admin"
)

func nodeValidator(t *testing.T) NodeValidator {
	t.Helper()
	ids, err := ParseServiceAccounts("valkey-system:valkey-operator-cluster-controller,valkey-system:valkey-operator-node-controller")
	if err != nil {
		t.Fatal(err)
	}
	return NodeValidator{Operators: ids}
}

func TestNodeValidatorCreate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		user   string
		mutate func(n *v1alpha1.ValkeyNode)
		want   []string
	}{
		{name: "operator", user: operatorSA},
		{name: "operator with an invalid spec", user: operatorSA,
			mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.Config = map[string]string{"port": "1"} },
			want:   []string{`ValkeyNode.valkey.io "demo-abcde" is invalid`, "spec.config[port]"}},
		{name: "cluster admin", user: admin,
			want: []string{`valkeynodes.valkey.io "demo-abcde" is forbidden`, "only its service accounts",
				`user "kubernetes-admin"`, "valkey-system:valkey-operator-cluster-controller"}},
		{name: "another service account", user: "system:serviceaccount:valkey-system:default", want: []string{"forbidden"}},
		{name: "garbage collector", user: garbageCollector, want: []string{"forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := testNode()
			if tc.mutate != nil {
				tc.mutate(n)
			}
			_, err := nodeValidator(t).ValidateCreate(asUser(tc.user), n)
			expectError(t, err, tc.want)
		})
	}
}

func TestNodeValidatorUpdate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		user   string
		mutate func(n *v1alpha1.ValkeyNode)
		want   []string
	}{
		{name: "operator raises the revision", user: operatorSA, mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.Revision = 2 }},
		{name: "operator changes the cluster", user: operatorSA,
			mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.ClusterName = "other" },
			want:   []string{"spec.clusterName", "is immutable"}},
		{name: "operator changes labels", user: operatorSA,
			mutate: func(n *v1alpha1.ValkeyNode) { n.Labels = map[string]string{v1alpha1.LabelRole: "replica"} }},
		{name: "admin changes the spec", user: admin, mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.Image = "evil" },
			want: []string{"forbidden", "may update them"}},
		{name: "admin changes a label", user: admin,
			mutate: func(n *v1alpha1.ValkeyNode) { n.Labels = map[string]string{v1alpha1.LabelShardIndex: "9"} },
			want:   []string{"forbidden"}},
		{name: "admin changes the status", user: admin,
			mutate: func(n *v1alpha1.ValkeyNode) { n.Status.Role = v1alpha1.RolePrimary }, want: []string{"forbidden"}},
		{name: "admin adds a finalizer", user: admin,
			mutate: func(n *v1alpha1.ValkeyNode) { n.Finalizers = append(n.Finalizers, "x") }, want: []string{"forbidden"}},
		{name: "admin removes the finalizers", user: admin, mutate: func(n *v1alpha1.ValkeyNode) { n.Finalizers = nil }},
		{name: "admin changes nothing", user: admin},
		{name: "garbage collector rewrites owner references", user: garbageCollector,
			mutate: func(n *v1alpha1.ValkeyNode) { n.OwnerReferences = []metav1.OwnerReference{} }},
		{name: "namespace controller", user: namespaceCtrl, mutate: func(n *v1alpha1.ValkeyNode) { n.Finalizers = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := testNode()
			if tc.mutate != nil {
				tc.mutate(n)
			}
			_, err := nodeValidator(t).ValidateUpdate(asUser(tc.user), testNode(), n)
			expectError(t, err, tc.want)
		})
	}
}

func TestNodeValidatorDelete(t *testing.T) {
	for _, user := range []string{admin, operatorSA, garbageCollector, "someone"} {
		if _, err := nodeValidator(t).ValidateDelete(asUser(user), testNode()); err != nil {
			t.Errorf("delete by %s: want admitted, got %v", user, err)
		}
	}
}

func TestNodeValidatorWithoutRequest(t *testing.T) {
	_, err := nodeValidator(t).ValidateCreate(context.Background(), testNode())
	expectError(t, err, []string{"read admission request"})
	_, err = nodeValidator(t).ValidateUpdate(context.Background(), testNode(), testNode())
	expectError(t, err, []string{"read admission request"})
}

// TestNodeWebhookResponses checks the HTTP-level answers: 403 for the identity rule,
// 422 for an invalid spec.
func TestNodeWebhookResponses(t *testing.T) {
	hook := admission.WithValidator(testScheme(t), admission.Validator[*v1alpha1.ValkeyNode](nodeValidator(t)))
	bad := testNode()
	bad.Spec.Revision = 0
	for _, tc := range []struct {
		name        string
		req         admission.Request
		wantAllowed bool
		wantCode    int32
		wantText    string
	}{
		{name: "operator creates", req: review(t, admissionv1.Create, operatorSA, testNode(), nil), wantAllowed: true},
		{name: "admin creates", req: review(t, admissionv1.Create, admin, testNode(), nil),
			wantCode: http.StatusForbidden, wantText: "only its service accounts"},
		{name: "operator creates an invalid node", req: review(t, admissionv1.Create, operatorSA, bad, nil),
			wantCode: http.StatusUnprocessableEntity, wantText: "spec.revision"},
		{name: "admin deletes", req: review(t, admissionv1.Delete, admin, nil, testNode()), wantAllowed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := hook.Handle(context.Background(), tc.req)
			if resp.Allowed != tc.wantAllowed {
				t.Fatalf("allowed = %v, want %v (%v)", resp.Allowed, tc.wantAllowed, resp.Result)
			}
			if tc.wantAllowed {
				return
			}
			if resp.Result.Code != tc.wantCode {
				t.Errorf("code = %d, want %d", resp.Result.Code, tc.wantCode)
			}
			if !strings.Contains(resp.Result.Message, tc.wantText) {
				t.Errorf("want %q in %q", tc.wantText, resp.Result.Message)
			}
		})
	}
}
