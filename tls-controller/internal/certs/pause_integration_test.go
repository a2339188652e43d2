package certs

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// A paused cluster: a renewed certificate is held (the copy and the members keep the
// served one, TLSReady says so) and rolled out by itself at the resume; a renewal of a
// certificate that expires within the warning window is not held.
var _ = Describe("The tls-controller on a paused cluster", Ordered, func() {
	var (
		h     *harness
		ca    *testCA
		issue func(o leafOpts) map[string][]byte
		good  map[string][]byte
		nodes = []string{"vk-a", "vk-b"}
	)
	fp := func(d map[string][]byte) string { c, _ := Parse(d); return c.Fingerprint }
	BeforeAll(func() {
		ca = newTestCA(GinkgoTB(), "ca")
		boot, bootKey := ca.issue(GinkgoTB(), leafOpts{})
		h = newHarness(2, secretData(ca.PEM, boot, bootKey), ca)
		issue = func(o leafOpts) map[string][]byte {
			o.dns = append(checkedNames("vk", h.Namespace), "*.vk-nodes."+h.Namespace+".svc")
			c, k := ca.issue(GinkgoTB(), o)
			return secretData(ca.PEM, c, k)
		}
		good = issue(leafOpts{})
		h.putSecret("certs", good)
		h.createCluster("vk", "certs")
		h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateValid, fp(good))
		for _, n := range nodes {
			h.member("vk", n)
		}
		h.kubelet("vk")
		Eventually(func(g Gomega) { h.expectApplied(g, Revision(good), nodes...) }).Should(Succeed(), "every member serves the first certificate")
	})

	It("holds a renewed certificate while paused, and rolls it out at the resume", func() {
		h.SetPaused("vk", true)
		renewed := issue(leafOpts{})
		h.putSecret("certs", renewed)
		h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionFalse, v1alpha1.ReasonPaused,
			"the cluster is paused: the certificate of Secret certs (fingerprint "+fp(renewed))
		h.waitEvent("Normal", "RolloutHeld", "is held until it is resumed")
		Consistently(func(g Gomega) {
			g.Expect(sameCertificate(h.copyData("vk"), good)).To(BeTrue(), "the copy changed while paused")
			h.expectApplied(g, Revision(good), nodes...)
			for i := range nodes {
				g.Expect(h.lc.probe(i)).To(Equal(fp(good)), "member %d serves another certificate", i)
			}
			g.Expect(h.Cluster("vk").Status.TLS.Fingerprint).To(Equal(fp(good)), "status.tls")
		}).WithTimeout(4*time.Second).Should(Succeed(), "the members keep the served certificate")

		h.SetPaused("vk", false)
		h.rollTo("vk", renewed, nodes)
		h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateValid, fp(renewed))
	})

	It("does not hold the renewal of a certificate that expires within the warning window", func() {
		soon := issue(leafOpts{notAfter: time.Now().Add(10 * 24 * time.Hour)})
		h.rollTo("vk", soon, nodes)
		h.SetPaused("vk", true)
		renewed := issue(leafOpts{})
		h.rollTo("vk", renewed, nodes)
		h.waitEvent("Normal", "RolloutNotHeld", "the new certificate (fingerprint "+fp(renewed)+") is rolled out now")
		h.SetPaused("vk", false)
	})
})
