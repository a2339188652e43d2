package acl

import (
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// liveUsers lists the users a member's server has.
func liveUsers(s *valkeytest.Server) []string {
	GinkgoHelper()
	users, err := s.Dial(GinkgoTB()).ACLUsers(suite.Step())
	Expect(err).NotTo(HaveOccurred())
	return users
}

// A paused cluster: a changed user set and a requested rotation are held (the members
// keep the published revision, the Secret is not rewritten, ACLReady says so), drift is
// still put back, and both go on by themselves at the resume.
var _ = Describe("The acl-controller on a paused cluster", Ordered, func() {
	var (
		h    *harness
		a, b *valkeytest.Server
		rev1 string
	)
	BeforeAll(func() {
		h = newHarness()
		Expect(h.Client.Create(h.ctx(), &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: "held"},
			Spec: v1alpha1.ValkeyClusterSpec{Users: []v1alpha1.UserSpec{{Name: "bob", NoPass: true, Permissions: "+@all ~*"}}}})).To(Succeed())
		h.waitSettled("held", v1alpha1.ReasonACLRendered)
		a, b = h.member("held", "held-a"), h.member("held", "held-b")
		rev1 = h.waitSettled("held", v1alpha1.ReasonACLRendered, "held-a", "held-b")
	})

	It("holds a changed user set while paused", func() {
		h.SetPaused("held", true)
		h.updateCluster("held", func(vc *v1alpha1.ValkeyCluster) {
			vc.Spec.Users = append(vc.Spec.Users, v1alpha1.UserSpec{Name: "frank", NoPass: true, Commands: &v1alpha1.CommandsSpec{Allow: []string{"ping"}}})
		})
		Eventually(func(g Gomega) {
			c := h.aclReady("held")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPaused))
			g.Expect(c.Message).To(And(ContainSubstring("the cluster is paused: aclfile revision"), ContainSubstring("users is held until it is resumed"),
				ContainSubstring("members keep aclfile revision "+rev1)))
		}).Should(Succeed(), "ACLReady False Paused")
		Eventually(h.Events).Should(ContainElement(And(HavePrefix("Normal RolloutHeld"), ContainSubstring("is held"))), "a RolloutHeld event")
		Consistently(func(g Gomega) {
			g.Expect(h.revision("held")).To(Equal(rev1), "status.acl.revision")
			g.Expect(h.Secret(v1alpha1.ACLSecretName("held")).Annotations).To(HaveKeyWithValue(annotationRevision, rev1), "the published aclfile")
			g.Expect(liveUsers(a)).NotTo(ContainElement("frank"), "held-a has the held user")
			g.Expect(liveUsers(b)).NotTo(ContainElement("frank"), "held-b has the held user")
			h.expectApplied(g, "held-a", rev1)
			h.expectApplied(g, "held-b", rev1)
		}).WithTimeout(4*time.Second).Should(Succeed(), "the members keep the published revision")
	})

	It("holds a requested rotation of the system passwords while paused", func() {
		h.updateCluster("held", func(vc *v1alpha1.ValkeyCluster) {
			vc.Annotations = map[string]string{v1alpha1.AnnotationRotateSystemPasswords: "2026-02-02T00:00:00Z"}
		})
		Eventually(func() string { return h.aclReady("held").Message }).
			Should(ContainSubstring("the requested rotation of the system users' passwords does not start"))
		Consistently(func(g Gomega) {
			g.Expect(h.rotation("held")).To(BeNil(), "status.acl.rotation")
			g.Expect(h.Secret(v1alpha1.SystemUsersSecretName("held")).Data).NotTo(HaveKey(v1alpha1.UserOperator+nextSuffix), "new passwords")
		}).WithTimeout(3*time.Second).Should(Succeed(), "the rotation started")
	})

	It("still puts back a user changed on a server while paused", func() {
		Expect(a.Dial(GinkgoTB()).ACLDelUser(h.ctx(), "bob")).To(Succeed())
		Eventually(func() []string { return liveUsers(a) }).Should(ContainElement("bob"), "bob is put back on held-a")
		Eventually(h.Events).Should(ContainElement(And(HavePrefix("Warning ACLDriftCorrected"), ContainSubstring("held-a"))))
		Expect(liveUsers(a)).NotTo(ContainElement("frank"), "the drift correction applied the held revision")
	})

	It("applies the held change and runs the rotation once resumed", func() {
		h.SetPaused("held", false)
		rev2 := h.waitSettled("held", v1alpha1.ReasonACLRendered, "held-a", "held-b")
		Expect(rev2).NotTo(Equal(rev1))
		for _, s := range []*valkeytest.Server{a, b} {
			Expect(slices.Contains(liveUsers(s), "frank")).To(BeTrue(), "%s runs the change", s.Addr())
		}
		Eventually(h.rotation).WithArguments("held").WithTimeout(30*time.Second).Should(And(
			HaveField("Phase", Equal(v1alpha1.RotationIdle)), HaveField("CompletedRequest", Equal("2026-02-02T00:00:00Z")),
		), "the rotation completes")
	})
})
