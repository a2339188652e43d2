package acl

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// A client with ACL rights on a member creates a user whose rules make ACL LIST larger
// than the controller reads: the drift check fails on that member alone, the cluster
// says so once, and the controller goes on and recovers when the reply fits again.
var _ = It("reports a member whose ACL LIST is too large to read, and goes on", func() {
	const budget = 64 << 10
	h := newHarnessWith(budget)
	Expect(h.Client.Create(h.ctx(), &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: "big"},
		Spec: v1alpha1.ValkeyClusterSpec{Users: []v1alpha1.UserSpec{{Name: "bob", NoPass: true}}}})).To(Succeed())
	h.waitSettled("big", v1alpha1.ReasonACLRendered)
	s := h.member("big", "big-a")
	h.waitSettled("big", v1alpha1.ReasonACLRendered, "big-a")

	By("a user of 100 KB of key patterns, made on the server")
	rules := []string{"on", "nopass"}
	for i := range 1000 {
		rules = append(rules, fmt.Sprintf("~%s%07d", strings.Repeat("p", 92), i))
	}
	admin := s.Dial(GinkgoTB())
	Expect(admin.ACLSetUser(h.ctx(), "bulky", rules...)).To(Succeed())

	const want = "member big-a answered ACL LIST with more than 64 KiB; the controller cannot check that member's users until the reply fits"
	Eventually(func(g Gomega) {
		c := h.aclReady("big")
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonReplyTooLarge))
		g.Expect(c.Message).To(Equal(want))
	}).Should(Succeed(), "ACLReady ReplyTooLarge naming the member and the command")
	tooLarge := func() []eventsv1.Event {
		var list eventsv1.EventList
		Expect(h.Client.List(h.ctx(), &list, client.InNamespace(h.Namespace))).To(Succeed())
		var out []eventsv1.Event
		for _, e := range list.Items {
			if e.Reason == v1alpha1.ReasonReplyTooLarge {
				out = append(out, e)
			}
		}
		return out
	}
	Eventually(tooLarge).Should(HaveLen(1), "a Warning event")
	e := tooLarge()[0]
	Expect(e.Type).To(Equal(corev1.EventTypeWarning))
	Expect(e.Note).To(Equal(want))
	Expect(e.Regarding.Name).To(Equal("big"))

	By("going on at the resync period, telling it once")
	Consistently(func(g Gomega) {
		events := tooLarge()
		g.Expect(events).To(HaveLen(1))
		g.Expect(events[0].Series).To(BeNil(), "the event repeated")
		g.Expect(h.aclReady("big").Reason).To(Equal(v1alpha1.ReasonReplyTooLarge))
	}).WithTimeout(3*time.Second + 3*testResync).Should(Succeed())

	By("recovering once the reply fits")
	Expect(admin.ACLDelUser(h.ctx(), "bulky")).To(Succeed())
	h.waitSettled("big", v1alpha1.ReasonACLRendered, "big-a")
})
