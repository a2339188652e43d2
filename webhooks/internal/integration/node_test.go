package integration

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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

// createNode stores a node as the operator; it is removed when the spec ends.
func createNode() *v1alpha1.ValkeyNode {
	GinkgoHelper()
	n := newNode()
	Expect(operator.Create(context.Background(), n)).To(Succeed(), "the operator could not create a ValkeyNode")
	DeferCleanup(func() {
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

// expectForbidden checks a refusal that says who may write ValkeyNodes and who tried.
func expectForbidden(err error) {
	GinkgoHelper()
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
	Expect(err.Error()).To(ContainSubstring("only its service accounts"), "the refusal says who may write ValkeyNodes")
	Expect(err.Error()).To(ContainSubstring(`user "admin"`), "the refusal says who tried")
}

// The identity rule through the API server with two identities: the operator's service
// account and a cluster admin.
var _ = Describe("The ValkeyNode identity rule", func() {
	ctx := context.Background()

	It("lets the operator create and update", func() {
		n := createNode()
		n.Spec.Revision = 2
		n.Labels[v1alpha1.LabelRole] = string(v1alpha1.RoleReplica)
		Expect(operator.Update(ctx, n)).To(Succeed(), "operator update")
		n.Status.Role = v1alpha1.RoleReplica
		Expect(operator.Status().Update(ctx, n)).To(Succeed(), "operator status update")
	})
	It("refuses the operator's invalid spec with the field path", func() {
		n := newNode()
		n.Spec.Config = map[string]string{"dir": "/tmp"}
		err := operator.Create(ctx, n)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.config[dir]: Forbidden"))
	})
	It("forbids an admin to create", func() {
		expectForbidden(admin.Create(ctx, newNode()))
	})
	It("forbids an admin to change the spec", func() {
		n := createNode()
		n.Spec.Image = "valkey/valkey:9.1.0"
		expectForbidden(admin.Update(ctx, n))
	})
	It("forbids an admin to change a label", func() {
		n := createNode()
		n.Labels[v1alpha1.LabelShardIndex] = "7"
		expectForbidden(admin.Update(ctx, n))
	})
	It("forbids an admin to write the status", func() {
		n := createNode()
		n.Status.Role = v1alpha1.RolePrimary
		expectForbidden(admin.Status().Update(ctx, n))
	})
	It("lets an admin remove the finalizers", func() {
		n := createNode()
		n.Finalizers = nil
		Expect(admin.Update(ctx, n)).To(Succeed(), "finalizer removal")
	})
	It("lets an admin delete", func() {
		n := createNode()
		Expect(admin.Delete(ctx, n)).To(Succeed())
		latest := &v1alpha1.ValkeyNode{}
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(n), latest)).To(Succeed())
		Expect(latest.DeletionTimestamp).NotTo(BeNil(), "the node should be marked for deletion (held by its finalizer)")
	})
})
