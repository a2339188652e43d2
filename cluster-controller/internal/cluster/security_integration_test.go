package cluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

var _ = Describe("The cluster-controller's defences", func() {
	var e *env
	ctx := context.Background()

	BeforeEach(func() { e = newEnv() })

	policy := func(g Gomega, name string) *networkingv1.NetworkPolicy {
		var np networkingv1.NetworkPolicy
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &np)).To(Succeed())
		return &np
	}

	It("keeps a NetworkPolicy: the bus from the members only, clients as the spec lists them, and none once disabled", func() {
		e.createCluster("np", 1, 0)
		e.expectReady("np", time.Minute)
		np := policy(Default, "np")
		Expect(metav1.IsControlledBy(np, e.cluster(Default, "np"))).To(BeTrue(), "owned by the cluster")
		Expect(np.Spec.PodSelector.MatchLabels).To(HaveKeyWithValue(v1alpha1.LabelInstance, "np"))
		Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}))
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if p.Port.IntValue() != busPort {
					continue
				}
				Expect(rule.From).To(HaveLen(1), "the bus is open to one peer, the members")
				Expect(rule.From[0].NamespaceSelector).To(BeNil(), "the members' namespace only")
				Expect(rule.From[0].PodSelector.MatchLabels).To(Equal(map[string]string{
					v1alpha1.LabelName: v1alpha1.AppName, v1alpha1.LabelInstance: "np", v1alpha1.LabelManagedBy: v1alpha1.ManagedBy,
					v1alpha1.LabelComponent: "server"}))
			}
		}
		Expect(clientPeers(np)).To(ContainElement(networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}}),
			"every pod of the namespace by default")

		By("listing the clients")
		web := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
		e.update("np", func(s *v1alpha1.ValkeyClusterSpec) {
			s.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Clients: []networkingv1.NetworkPolicyPeer{web}}
		})
		Eventually(func(g Gomega) {
			g.Expect(clientPeers(policy(g, "np"))).To(ContainElement(web))
			g.Expect(clientPeers(policy(g, "np"))).NotTo(ContainElement(networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}}))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		By("turning it off")
		e.update("np", func(s *v1alpha1.ValkeyClusterSpec) { s.NetworkPolicy.Enabled = ptr.To(false) })
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "np"}, &networkingv1.NetworkPolicy{}))
		}).WithTimeout(20*time.Second).Should(BeTrue(), "the NetworkPolicy is deleted")
	})

	It("takes over no object of the cluster's names: NameConflict names it, and it is left as it was", func() {
		squatter := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: v1alpha1.HeadlessServiceName("nc")},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "mine"},
				Ports: []corev1.ServicePort{{Name: "x", Port: 1234}}},
		}
		Expect(k8s.Create(ctx, squatter)).To(Succeed())
		e.createCluster("nc", 1, 0)
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "nc")
			ready := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonNameConflict))
			g.Expect(ready.Message).To(ContainSubstring("Service nc-nodes exists and is not this cluster's"))
			g.Expect(vc.Status.State).To(Equal(v1alpha1.StateFailed))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) {
			var svc corev1.Service
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(squatter), &svc)).To(Succeed())
			g.Expect(svc.Spec.Selector).To(Equal(map[string]string{"app": "mine"}), "the Service was changed")
			g.Expect(svc.OwnerReferences).To(BeEmpty(), "the Service was adopted")
			g.Expect(e.members(g, "nc")).To(BeEmpty(), "members were created past the conflict")
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("deleting it: the cluster goes on")
		Expect(k8s.Delete(ctx, squatter)).To(Succeed())
		e.expectReady("nc", time.Minute)
	})
})

// clientPeers are the peers of the rule that admits the client port alone.
func clientPeers(np *networkingv1.NetworkPolicy) []networkingv1.NetworkPolicyPeer {
	for _, rule := range np.Spec.Ingress {
		if len(rule.Ports) == 1 && rule.Ports[0].Port.IntValue() == 6379 {
			return rule.From
		}
	}
	return nil
}
