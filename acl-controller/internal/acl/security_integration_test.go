package acl

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// A client granted ACL rights on a member (here valkeytest's admin user, which the file
// does not define and the controller leaves alone) re-enables default and widens the
// exporter's user: the next check (the harness checks every 2 s, the controller every
// minute by default) puts both back and says so.
var _ = It("puts back users changed on a member, with an event", func() {
	h := newHarness()
	Expect(h.Client.Create(h.ctx(), &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: "drift"}})).To(Succeed())
	h.waitSettled("drift", v1alpha1.ReasonACLRendered)
	s := h.member("drift", "drift-a")
	// ACLApplied comes from the pass that applied the file to the new member and recorded
	// what it lists.
	h.waitSettled("drift", v1alpha1.ReasonACLRendered, "drift-a")

	admin := s.Dial(GinkgoTB())
	Expect(admin.ACLSetUser(h.ctx(), "default", "on", "nopass", "+@all", "~*")).To(Succeed())
	Expect(admin.ACLSetUser(h.ctx(), v1alpha1.UserExporter, "+@all", "~*")).To(Succeed())
	_, err := valkeytest.RawReply(s.Addr(), "default", "", 2, "PING")
	Expect(err).NotTo(HaveOccurred(), "default is on")

	Eventually(func() error {
		_, err := valkeytest.RawReply(s.Addr(), "default", "", 2, "PING")
		return err
	}).WithTimeout(15*time.Second).Should(HaveOccurred(), "default is put back off")
	Eventually(func(g Gomega) {
		out, err := admin.Do(h.ctx(), "ACL", "DRYRUN", v1alpha1.UserExporter, "FLUSHALL")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(ContainSubstring("no permissions"))
	}).WithTimeout(15*time.Second).Should(Succeed(), "the exporter's user is put back")
	Eventually(func(g Gomega) {
		var found bool
		for _, e := range h.Events() {
			if strings.Contains(e, "ACLDriftCorrected") && strings.Contains(e, "default") && strings.Contains(e, v1alpha1.UserExporter) {
				found = true
			}
		}
		g.Expect(found).To(BeTrue(), "events: %v", h.Events())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	Expect(admin.Do(h.ctx(), "ACL", "WHOAMI")).To(Equal(valkeytest.AdminUser), "users the file does not define are left alone")
})

// A system users Secret someone created before the cluster (so they know the passwords
// in it) is not adopted: ACLReady says NameConflict naming it, and it is left as it was.
var _ = It("adopts no Secret of the cluster's names", func() {
	h := newHarness()
	squatter := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: v1alpha1.SystemUsersSecretName("nc")},
		Data: map[string][]byte{v1alpha1.UserOperator: []byte("a password its author knows")}}
	Expect(h.Client.Create(h.ctx(), squatter)).To(Succeed())
	Expect(h.Client.Create(h.ctx(), &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: "nc"}})).To(Succeed())
	Eventually(func(g Gomega) {
		c := h.aclReady("nc")
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonNameConflict))
		g.Expect(c.Message).To(ContainSubstring("Secret nc-system-users exists and is not this cluster's"))
	}).WithTimeout(15 * time.Second).Should(Succeed())
	Consistently(func(g Gomega) {
		s := h.Secret("nc-system-users")
		g.Expect(s.OwnerReferences).To(BeEmpty(), "adopted")
		g.Expect(s.Data).To(HaveLen(1), "changed")
		g.Expect(h.Secret("nc-acl")).To(BeNil(), "an aclfile was published for the squatted passwords")
	}).WithTimeout(3 * time.Second).Should(Succeed())
	Expect(h.Events()).To(ContainElement(ContainSubstring("NameConflict")))
})
