package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/status"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// lockOut changes the operator's user on a server as a client granted ACL rights can,
// and closes the operator's open connections there, in one transaction.
func lockOut(s *valkeytest.Server, rules ...string) {
	GinkgoHelper()
	c, err := valkeytest.DialRaw(s.Addr(), valkeytest.AdminUser, adminPassword, 2, 5*time.Second)
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

// operatorLogin logs in to a server as the operator and runs PING.
func operatorLogin(s *valkeytest.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := valkey.Dial(ctx, valkey.Options{Addr: s.Addr(), Username: v1alpha1.UserOperator, Password: operatorPassword, DialTimeout: time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Ping(ctx)
}

// reportLogin writes a member's OperatorLoginRefused as the acl-controller does (under
// its field manager): True with a server's answer, or False.
func (e *env) reportLogin(name string, refused bool) {
	GinkgoHelper()
	c := conditions.New(v1alpha1.ConditionOperatorLoginRefused, false, v1alpha1.ReasonLoginAccepted, "the server accepts the operator's login", 1)
	if refused {
		c = conditions.New(v1alpha1.ConditionOperatorLoginRefused, true, v1alpha1.ReasonPasswordRefused,
			"the server refuses the operator's login as _operator (WRONGPASS invalid username-password pair or user is disabled.)", 1)
	}
	Eventually(func() error {
		var vn v1alpha1.ValkeyNode
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: name}, &vn); err != nil {
			return err
		}
		c.ObservedGeneration = vn.Generation
		return status.Apply(context.Background(), k8s, "acl-controller", &vn, v1alpha1.GroupVersion.WithKind("ValkeyNode"),
			map[string]any{"conditions": conditions.Resolve(vn.Status.Conditions, time.Now(), c)})
	}).Should(Succeed(), "OperatorLoginRefused of %s", name)
}

// eventNotes returns the notes of the events of a reason in the spec's namespace.
func (e *env) eventNotes(g Gomega, reason string) []string {
	var evs eventsv1.EventList
	g.Expect(k8s.List(context.Background(), &evs, client.InNamespace(e.ns))).To(Succeed())
	var out []string
	for _, ev := range evs.Items {
		if ev.Reason == reason {
			out = append(out, ev.Note)
		}
	}
	return out
}

var _ = Describe("Members that refuse the operator's login", func() {
	It("are restarted, a primary once its replica took over, and the operator logs in again", Label("slow"), func() {
		e := newEnv()
		e.createCluster("login", 2, 1)
		e.expectReady("login", time.Minute)
		keys := writeKeys(e.anyServer("login"), 200)
		primary := e.member(Default, "login", 1, true)
		replica := e.member(Default, "login", 1, false)
		other := e.member(Default, "login", 0, false)
		expectCaughtUp(e, primary.Name, replica.Name)
		locked := []v1alpha1.ValkeyNode{primary, other}

		By("a client with ACL rights changes the operator's password on shard 1's primary and on shard 0's replica")
		for _, vn := range locked {
			s := e.kubelet.server(vn.Name)
			lockOut(s, "resetpass", ">a-password-the-tenant-chose")
			Expect(operatorLogin(s)).To(MatchError(ContainSubstring("WRONGPASS")), vn.Name)
			e.reportLogin(vn.Name, true)
		}

		By("shard 1's replica takes over, then both members get a new pod whose server accepts the operator")
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "login")
			g.Expect(vc.Status.Shards[1].Primary).To(Equal(replica.Name), "shard 1's primary")
			for _, vn := range locked {
				var now v1alpha1.ValkeyNode
				g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(&vn), &now)).To(Succeed())
				g.Expect(now.Spec.Revision).To(Equal(vn.Spec.Revision+1), "%s restarted once", vn.Name)
				g.Expect(now.Status.Revision).To(Equal(now.Spec.Revision), "%s runs its new pod", vn.Name)
				s := e.kubelet.server(vn.Name)
				g.Expect(s).NotTo(BeNil())
				g.Expect(operatorLogin(s)).To(Succeed(), vn.Name)
			}
		}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(e.eventNotes(g, "Failover")).To(ContainElement(And(
				ContainSubstring(replica.Name+" takes over shard 1"), ContainSubstring(primary.Name+" refuses the operator's login"))))
			notes := e.eventNotes(g, "OperatorLoginRecovery")
			for _, vn := range locked {
				g.Expect(notes).To(ContainElement(HavePrefix(fmt.Sprintf("restarting %s (a new pod) so that its server loads the aclfile again", vn.Name))))
			}
		}).Should(Succeed())

		By("no second restart while the acl-controller has not looked at the new servers yet")
		Eventually(func(g Gomega) {
			p := conditions.Get(e.cluster(g, "login").Status.Conditions, v1alpha1.ConditionProgressing)
			g.Expect(p).NotTo(BeNil())
			g.Expect(p.Reason).To(Equal(v1alpha1.ReasonRecoveringLogin))
			g.Expect(p.Message).To(ContainSubstring("is not restarted again before"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) {
			for _, vn := range locked {
				var now v1alpha1.ValkeyNode
				g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(&vn), &now)).To(Succeed())
				g.Expect(now.Spec.Revision).To(Equal(vn.Spec.Revision+1), vn.Name)
			}
		}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("once the acl-controller sees the logins accepted, the cluster is Ready with every key")
		for _, vn := range locked {
			e.reportLogin(vn.Name, false)
		}
		e.expectReady("login", time.Minute)
		Eventually(func(g Gomega) { expectKeys(g, e.anyServer("login"), keys) }).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(e.failovers("login", 2)).To(Equal([]int{0, 1}), "one planned failover, in shard 1")
		for _, vn := range e.members(Default, "login") {
			c := conditions.Get(vn.Status.Conditions, v1alpha1.ConditionOperatorLoginRefused)
			Expect(c == nil || c.Status != metav1.ConditionTrue).To(BeTrue(), vn.Name)
			Expect(strings.Contains(fmt.Sprint(vn.Status.Conditions), operatorPassword)).To(BeFalse())
		}
	})
})
