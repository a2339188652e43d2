package acl

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// lockOut changes the operator's user on a server as a client granted ACL rights can,
// and closes the operator's open connections there, in one transaction (the
// controller's drift check would otherwise put the user back through a connection
// still open in between).
func lockOut(s *valkeytest.Server, rules ...string) {
	GinkgoHelper()
	c, err := valkeytest.DialRaw(s.Addr(), valkeytest.AdminUser, s.AdminPassword, 2, 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	for _, cmd := range [][]string{
		{"MULTI"},
		append([]string{"ACL", "SETUSER", v1alpha1.UserOperator}, rules...),
		{"CLIENT", "KILL", "USER", v1alpha1.UserOperator},
		{"EXEC"},
	} {
		out, err := c.Do(cmd...)
		Expect(err).NotTo(HaveOccurred(), "%v", cmd)
		Expect(string(out)).NotTo(ContainSubstring("\r\n-"), "%v: an error in the transaction", cmd)
	}
}

// loginCondition returns a member's OperatorLoginRefused.
func (h *harness) loginCondition(g Gomega, name string) metav1.Condition {
	c := h.NodeCondition(g, name, v1alpha1.ConditionOperatorLoginRefused)
	g.Expect(c).NotTo(BeNil(), "OperatorLoginRefused of %s", name)
	return *c
}

// statusTexts returns every condition message of the cluster and of its members.
func (h *harness) statusTexts(cluster string, members ...string) []string {
	GinkgoHelper()
	var out []string
	for _, c := range h.Cluster(cluster).Status.Conditions {
		out = append(out, c.Message)
	}
	for _, name := range members {
		var vn v1alpha1.ValkeyNode
		Expect(h.Client.Get(h.ctx(), h.Key(name), &vn)).To(Succeed())
		for _, c := range vn.Status.Conditions {
			out = append(out, c.Message)
		}
	}
	return out
}

// A client granted ACL rights changes the operator's user on members: a new password on
// one, the ACL commands taken away on another, and the operator's connections closed, so
// the drift check cannot put the user back. The members and the cluster say so, with a
// Warning event each; once a member's server restarts (the cluster- and
// node-controllers' part, played here by the harness) and loads the aclfile, the
// operator logs in again, and the events say that too. No password is in any of it.
var _ = It("reports members that refuse the operator's login, and when they accept it again", func() {
	h := newHarness()
	Expect(h.Client.Create(h.ctx(), &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: "lock"}})).To(Succeed())
	h.waitSettled("lock", v1alpha1.ReasonACLRendered)
	a := h.member("lock", "lock-a")
	b := h.member("lock", "lock-b")
	h.member("lock", "lock-c")
	h.waitSettled("lock", v1alpha1.ReasonACLRendered, "lock-a", "lock-b", "lock-c")
	operatorPW := string(h.Secret(v1alpha1.SystemUsersSecretName("lock")).Data[v1alpha1.UserOperator])
	Expect(operatorPW).NotTo(BeEmpty())
	const tenantPW = "a-password-the-tenant-chose"

	By("a client with ACL rights changes the operator's password on lock-a and its commands on lock-b")
	lockOut(a, "resetpass", ">"+tenantPW)
	lockOut(b, "-acl")
	Expect(loginWorks(a, v1alpha1.UserOperator, operatorPW)).To(MatchError(ContainSubstring("WRONGPASS")))

	Eventually(func(g Gomega) {
		ca := h.loginCondition(g, "lock-a")
		g.Expect(ca.Status).To(Equal(metav1.ConditionTrue), "lock-a: %s", ca.Message)
		g.Expect(ca.Reason).To(Equal(v1alpha1.ReasonPasswordRefused))
		g.Expect(ca.Message).To(ContainSubstring("WRONGPASS"))
		cb := h.loginCondition(g, "lock-b")
		g.Expect(cb.Status).To(Equal(metav1.ConditionTrue), "lock-b: %s", cb.Message)
		g.Expect(cb.Reason).To(Equal(v1alpha1.ReasonPermissionDenied))
		g.Expect(cb.Message).To(ContainSubstring("NOPERM"))
		cc := h.loginCondition(g, "lock-c")
		g.Expect(cc.Status).To(Equal(metav1.ConditionFalse), "lock-c: %s", cc.Message)
		g.Expect(cc.Reason).To(Equal(v1alpha1.ReasonLoginAccepted))
		c := h.ClusterCondition("lock", v1alpha1.ConditionOperatorLoginRefused)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonLoginRefused))
		g.Expect(c.Message).To(HavePrefix("2 of 3 members refuse the operator's login (lock-a, lock-b)"))
	}).WithTimeout(20*time.Second).Should(Succeed(), "the refusals reported")
	Eventually(h.Events).Should(ContainElements(
		ContainSubstring("Warning OperatorLoginRefused member lock-a refuses the operator's login as _operator (WRONGPASS"),
		ContainSubstring("Warning OperatorLoginRefused member lock-b refuses the operator's login as _operator (NOPERM"),
	))

	By("their servers restart and load the aclfile")
	for name, old := range map[string]*valkeytest.Server{"lock-a": a, "lock-b": b} {
		s := h.startServer("lock", name)
		old.Stop()
		Expect(loginWorks(s, v1alpha1.UserOperator, operatorPW)).To(Succeed(), name)
	}
	Eventually(func(g Gomega) {
		for _, name := range []string{"lock-a", "lock-b"} {
			c := h.loginCondition(g, name)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse), "%s: %s", name, c.Message)
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonLoginAccepted))
			h.expectApplied(g, name, h.revision("lock"))
		}
		c := h.ClusterCondition("lock", v1alpha1.ConditionOperatorLoginRefused)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), c.Message)
	}).WithTimeout(30*time.Second).Should(Succeed(), "the logins accepted again")
	Eventually(h.Events).Should(ContainElements(
		"Normal OperatorLoginRecovered member lock-a accepts the operator's login as _operator again",
		"Normal OperatorLoginRecovered member lock-b accepts the operator's login as _operator again",
	))

	By("no password in a condition or an event")
	texts := append(h.statusTexts("lock", "lock-a", "lock-b", "lock-c"), h.Events()...)
	for _, pw := range []string{operatorPW, tenantPW} {
		for _, t := range texts {
			Expect(strings.Contains(t, pw)).To(BeFalse(), fmt.Sprintf("a password in %q", t))
		}
	}
})
