package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

var nodeCount int

// newNode returns a valid ValkeyNode with a fresh name.
func newNode() *v1alpha1.ValkeyNode {
	nodeCount++
	return &v1alpha1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("demo-n%d", nodeCount), Namespace: "default",
			Labels: v1alpha1.ShardLabels("demo", 0), Finalizers: []string{"valkey.io/member"}},
		Spec: v1alpha1.ValkeyNodeSpec{ClusterName: "demo", Revision: 1, WorkloadType: v1alpha1.WorkloadStatefulSet,
			Image: v1alpha1.DefaultImage, ACLSecretName: "demo-acl", SystemUsersSecretName: "demo-system-users"},
	}
}

// createNode stores a node as the operator; the test's cleanup removes it.
func createNode(t *testing.T) *v1alpha1.ValkeyNode {
	t.Helper()
	n := newNode()
	if err := operator.Create(context.Background(), n); err != nil {
		t.Fatalf("the operator could not create a ValkeyNode: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		latest := &v1alpha1.ValkeyNode{}
		if err := operator.Get(ctx, client.ObjectKeyFromObject(n), latest); err != nil {
			return
		}
		latest.Finalizers = nil
		_ = operator.Update(ctx, latest)
		_ = operator.Delete(ctx, latest)
	})
	return n
}

func expectForbidden(t *testing.T, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Fatalf("want Forbidden, got %v", err)
	}
	if !strings.Contains(err.Error(), "only its service accounts") || !strings.Contains(err.Error(), `user "admin"`) {
		t.Errorf("the refusal should say who may write ValkeyNodes and who tried: %v", err)
	}
}

// TestValkeyNodeIdentityRule goes through the API server with two identities: the
// operator's service account and a cluster admin.
func TestValkeyNodeIdentityRule(t *testing.T) {
	ctx := context.Background()
	t.Run("the operator creates and updates", func(t *testing.T) {
		n := createNode(t)
		n.Spec.Revision = 2
		n.Labels[v1alpha1.LabelRole] = string(v1alpha1.RoleReplica)
		if err := operator.Update(ctx, n); err != nil {
			t.Fatalf("operator update refused: %v", err)
		}
		n.Status.Role = v1alpha1.RoleReplica
		if err := operator.Status().Update(ctx, n); err != nil {
			t.Fatalf("operator status update refused: %v", err)
		}
	})
	t.Run("the operator's invalid spec is refused with the field path", func(t *testing.T) {
		n := newNode()
		n.Spec.Config = map[string]string{"dir": "/tmp"}
		err := operator.Create(ctx, n)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.config[dir]: Forbidden") {
			t.Fatalf("want Invalid on spec.config[dir], got %v", err)
		}
	})
	t.Run("an admin may not create", func(t *testing.T) {
		expectForbidden(t, admin.Create(ctx, newNode()))
	})
	t.Run("an admin may not change the spec", func(t *testing.T) {
		n := createNode(t)
		n.Spec.Image = "valkey/valkey:9.1.0"
		expectForbidden(t, admin.Update(ctx, n))
	})
	t.Run("an admin may not change a label", func(t *testing.T) {
		n := createNode(t)
		n.Labels[v1alpha1.LabelShardIndex] = "7"
		expectForbidden(t, admin.Update(ctx, n))
	})
	t.Run("an admin may not write the status", func(t *testing.T) {
		n := createNode(t)
		n.Status.Role = v1alpha1.RolePrimary
		expectForbidden(t, admin.Status().Update(ctx, n))
	})
	t.Run("an admin may remove the finalizers", func(t *testing.T) {
		n := createNode(t)
		n.Finalizers = nil
		if err := admin.Update(ctx, n); err != nil {
			t.Fatalf("finalizer removal refused: %v", err)
		}
	})
	t.Run("an admin may delete", func(t *testing.T) {
		n := createNode(t)
		if err := admin.Delete(ctx, n); err != nil {
			t.Fatalf("delete refused: %v", err)
		}
		latest := &v1alpha1.ValkeyNode{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(n), latest); err != nil {
			t.Fatal(err)
		}
		if latest.DeletionTimestamp == nil {
			t.Error("the node should be marked for deletion (held by its finalizer)")
		}
	})
}
