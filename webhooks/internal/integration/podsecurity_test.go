package integration

import (
	"context"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// withSidecar is a ValkeyCluster with the seed reference's sidecar, changed by mutate.
func withSidecar(name string, mutate func(c *corev1.Container)) *v1alpha1.ValkeyCluster {
	c := corev1.Container{Name: "my-sidecar", Image: "busybox:latest", Command: []string{"sh", "-c", "sleep infinity"}}
	mutate(&c)
	return &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       v1alpha1.ValkeyClusterSpec{Containers: []corev1.Container{c}},
	}
}

// Sidecars through the real API server: the member's pod with the sidecar is checked
// with the Pod Security library at restricted, and a refusal carries the field of the
// sidecar and the library's reason as the cause the API server returns.
var _ = Describe("Sidecars held to the restricted Pod Security Standard", func() {
	DescribeTable("are refused with the field named",
		func(vc *v1alpha1.ValkeyCluster, field, message string) {
			err := admin.Create(context.Background(), vc, client.DryRunAll)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			var status apierrors.APIStatus
			Expect(errors.As(err, &status)).To(BeTrue())
			Expect(status.Status().Details.Causes).To(ContainElement(And(
				HaveField("Type", metav1.CauseTypeForbidden),
				HaveField("Field", field),
				HaveField("Message", ContainSubstring(message)),
			)), "causes of %v", err)
			GinkgoWriter.Println(err.Error())
		},
		Entry("a readiness probe to the cloud's metadata service", withSidecar("probe-host", func(c *corev1.Container) {
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Host: "169.254.169.254", Path: "/latest/meta-data/", Port: intstr.FromInt32(80)}}}
		}), "spec.containers[0].readinessProbe.httpGet.host",
			`violates PodSecurity "restricted:latest": probe or lifecycle host (container "my-sidecar" uses probe or lifecycle host "169.254.169.254")`),
		Entry("SELinux type spc_t", withSidecar("selinux-spc", func(c *corev1.Container) {
			c.SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}
		}), "spec.containers[0].securityContext.seLinuxOptions.type",
			`violates PodSecurity "restricted:latest": seLinuxOptions (container "my-sidecar" set forbidden securityContext.seLinuxOptions: type "spc_t")`),
	)

	It("admits the reference's sidecar", func() {
		Expect(admin.Create(context.Background(), withSidecar("reference-sidecar", func(*corev1.Container) {}), client.DryRunAll)).To(Succeed())
	})
})
