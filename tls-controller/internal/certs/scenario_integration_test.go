package certs

import (
	"crypto/x509"
	"encoding/base64"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// A TLS cluster's life against the API server and real servers: a good Secret is copied
// and reported; a mismatched and an expired certificate are refused while members keep
// serving; a renewal is rolled out live member by member; a CA changes through a bundle
// and then without one; an expiring certificate warns; a deleted Secret is reported; no
// key material reaches logs, events or conditions. The cluster serves (cluster_state ok,
// writes) throughout.
var _ = Describe("The tls-controller through a TLS cluster's life", Ordered, func() {
	var (
		h               *harness
		ca, next, other *testCA
		keys            [][]byte // every private key used, to check that none reaches a log
		issue           func(by *testCA, caPEM []byte, o leafOpts) map[string][]byte
		good, renewed   map[string][]byte
		soon            map[string][]byte
		stopWatch       func() string
		nodes           = []string{"vk-a", "vk-b", "vk-c"}
	)
	fp := func(d map[string][]byte) string { c, _ := Parse(d); return c.Fingerprint }
	BeforeAll(func() {
		ca, next, other = newTestCA(GinkgoTB(), "ca"), newTestCA(GinkgoTB(), "next"), newTestCA(GinkgoTB(), "other")
		boot, bootKey := ca.issue(GinkgoTB(), leafOpts{})
		h = newHarness(3, secretData(ca.PEM, boot, bootKey), ca, next, other)
		clientNames := checkedNames("vk", h.Namespace)
		issue = func(by *testCA, caPEM []byte, o leafOpts) map[string][]byte {
			o.dns = append(clientNames, "*.vk-nodes."+h.Namespace+".svc")
			c, k := by.issue(GinkgoTB(), o)
			keys = append(keys, k)
			return secretData(caPEM, c, k)
		}
		good = issue(ca, ca.PEM, leafOpts{})
	})
	AfterAll(func() { // the last spec checks the watch; after a failure it does not run
		if stopWatch != nil {
			stopWatch()
		}
	})

	It("copies a good Secret and reports it", func() {
		h.putSecret("certs", good)
		h.createCluster("vk", "certs")
		h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateValid, fp(good))
		h.waitCondition("vk", v1alpha1.ConditionCertificateExpiring, metav1.ConditionFalse, v1alpha1.ReasonNotExpiring, "expires on")
		vc := h.Cluster("vk")
		cp := h.Secret(v1alpha1.TLSSecretName("vk"))
		Expect(sameCertificate(cp.Data, good)).To(BeTrue(), "the copy does not hold the accepted certificate")
		Expect(string(cp.Type)).To(Equal("kubernetes.io/tls"))
		h.ExpectOwned(cp, vc)
		st := vc.Status.TLS
		Expect(st).NotTo(BeNil())
		Expect(st.SecretName).To(Equal("certs"))
		Expect(st.AcceptedSecretName).To(Equal(cp.Name), "status.tls names the copy the members mount")
		Expect(st.Fingerprint).To(Equal(fp(good)))
		Expect(st.Revision).To(Equal(Revision(good)))
		Expect(st.MissingNames).To(BeEmpty())
		Expect(st.NotAfter.IsZero()).To(BeFalse(), "status.tls.notAfter")
		Expect(st.Rollout).NotTo(BeNil(), "status.tls.rollout")
		Expect(hasLegacyAnnotations(cp)).To(BeFalse(), "the rollout's state is in the copy's annotations")
		h.waitEvent("Normal", "CertificateAccepted", "Secret certs")
	})

	It("starts members with the copy, serving it without a reload", func() {
		for _, n := range nodes {
			h.member("vk", n)
		}
		h.kubelet("vk")
		Eventually(func(g Gomega) { h.expectApplied(g, Revision(good), nodes...) }).Should(Succeed(), "every member serves the first revision")
		h.lc.form(3)
		stopWatch = h.lc.watch(3)
	})

	DescribeTable("never lets a refused Secret reach the copy or the members",
		func(reason string, data func() map[string][]byte) {
			h.putSecret("certs", data())
			h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionFalse, reason, "members keep serving the certificate accepted before")
			h.waitEvent("Warning", reason, "Secret certs is refused")
			Expect(sameCertificate(h.copyData("vk"), good)).To(BeTrue(), "the copy changed")
			Expect(h.lc.probe(0)).To(Equal(fp(good)), "a member serves another certificate")
		},
		Entry("a mismatched key", v1alpha1.ReasonKeyMismatch, func() map[string][]byte {
			second := issue(ca, ca.PEM, leafOpts{})
			return secretData(ca.PEM, second[KeyCert], good[KeyKey])
		}),
		Entry("an expired certificate", v1alpha1.ReasonExpired, func() map[string][]byte {
			return issue(ca, ca.PEM, leafOpts{notBefore: time.Now().Add(-48 * time.Hour), notAfter: time.Now().Add(-time.Hour)})
		}),
		Entry("server authentication only", v1alpha1.ReasonUsageInvalid, func() map[string][]byte {
			return issue(ca, ca.PEM, leafOpts{eku: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		}),
	)

	It("rolls a renewal from the same CA out live", func() {
		renewed = issue(ca, ca.PEM, leafOpts{})
		h.rollTo("vk", renewed, nodes)
		h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateValid, fp(renewed))
		h.waitEvent("Normal", "CertificateReloaded", "revision "+Revision(renewed))
		h.waitEvent("Normal", "CertificateRolledOut", "revision "+Revision(renewed))
	})

	It("changes the CA in steps, counting the bundle only after a reload that surely read the new files", func() {
		bundle := concat(ca.PEM, next.PEM)
		step1 := secretData(bundle, renewed[KeyCert], renewed[KeyKey])
		changed := time.Now()
		h.putSecret("certs", step1)
		Eventually(func(g Gomega) {
			st := h.Cluster("vk").Status.TLS
			g.Expect(st.Revision).To(Equal(Revision(step1)))
			g.Expect(st.Rollout).To(PointTo(MatchFields(IgnoreExtras, Fields{
				"Phase": Equal(v1alpha1.TLSRollingOut), "ReloadAfter": Not(BeNil()),
			})))
		}).Should(Succeed(), "status.tls.rollout names the time members reload the bundle from")
		h.rollTo("vk", step1, nodes)
		cp := h.Secret(v1alpha1.TLSSecretName("vk"))
		Expect(cp.Data[KeyPreviousCA]).To(BeEmpty(), "after the rollout the copy still trusts earlier CAs")
		Expect(time.Since(changed)).To(BeNumerically(">=", testDelay), "a CA-only change was confirmed before the propagation delay")
		step2 := issue(next, bundle, leafOpts{})
		h.rollTo("vk", step2, nodes)
		step3 := secretData(next.PEM, step2[KeyCert], step2[KeyKey])
		h.rollTo("vk", step3, nodes)
	})

	// The controller trusts the previous CA until every member serves the new one.
	It("accepts a CA switch without a bundle with a warning, and still rolls it out", func() {
		switched := issue(other, other.PEM, leafOpts{})
		h.rollTo("vk", switched, nodes)
		h.waitEvent("Warning", "CAChangedWithoutBundle")
	})

	It("warns of a certificate that expires within the window", func() {
		soon = issue(other, other.PEM, leafOpts{notAfter: time.Now().Add(10 * 24 * time.Hour)})
		h.rollTo("vk", soon, nodes)
		h.waitCondition("vk", v1alpha1.ConditionCertificateExpiring, metav1.ConditionTrue, v1alpha1.ReasonExpiresSoon, "within the warning window")
		h.waitEvent("Warning", "CertificateExpiring", "expires on")
	})

	// An operator upgraded in the middle of a rollout started by a version that kept its
	// state in annotations of the copy: the rollout goes on from them (its reload time
	// too), its state moves to status.tls.rollout, and the annotations go.
	It("finishes a rollout an earlier version left in the copy's annotations", func() {
		h.stopManager()
		rev := Revision(soon)
		reloadAfter := time.Now().Add(testDelay).UTC().Truncate(time.Second).Add(time.Second)
		cp := h.Secret(v1alpha1.TLSSecretName("vk"))
		cp.Annotations = map[string]string{legacySource: "certs", legacyRevision: rev, legacyReloadAfter: reloadAfter.Format(time.RFC3339)}
		Expect(h.Client.Update(suite.Step(), cp)).To(Succeed())
		h.MergeStatus("vk", `{"tls":{"rollout":null}}`)
		Expect(h.Cluster("vk").Status.TLS.Rollout).To(BeNil())

		h.start()
		Eventually(func(g Gomega) {
			st := h.Cluster("vk").Status.TLS
			g.Expect(st.Rollout).NotTo(BeNil())
			g.Expect(hasLegacyAnnotations(h.Secret(v1alpha1.TLSSecretName("vk")))).To(BeFalse(), "the old annotations are removed")
		}).Should(Succeed(), "the status holds the rollout")
		Eventually(func(g Gomega) {
			st := h.Cluster("vk").Status.TLS
			g.Expect(st.SecretName).To(Equal("certs"))
			g.Expect(st.Revision).To(Equal(rev))
			g.Expect(st.Rollout).To(Equal(&v1alpha1.TLSRolloutStatus{Phase: v1alpha1.TLSRolledOut}))
			h.expectApplied(g, rev, nodes...)
		}).WithTimeout(30*time.Second).Should(Succeed(), "the rollout completes")
		Expect(time.Now()).To(BeTemporally(">=", reloadAfter), "the rollout was counted complete before the reload time the earlier version set")
	})

	It("reports a deleted Secret and keeps the copy", func() {
		Expect(h.Client.Delete(suite.Step(), h.Secret("certs"))).To(Succeed())
		h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionFalse, v1alpha1.ReasonSecretMissing, "does not exist")
		Expect(sameCertificate(h.copyData("vk"), soon)).To(BeTrue(), "the copy changed when the Secret was deleted")
		h.expectApplied(Default, Revision(soon), nodes...)
	})

	It("kept the cluster serving throughout, and no key material reached logs, events or conditions", func() {
		Expect(stopWatch()).To(BeEmpty(), "the cluster did not keep serving")
		h.checkNoKeyMaterial(keys)
	})
})

// rollTo puts d in the user's Secret and waits until the copy holds it, every member
// serves it (TLSApplied and a new handshake) and the rollout is recorded.
func (h *harness) rollTo(cluster string, d map[string][]byte, nodes []string) {
	GinkgoHelper()
	h.putSecret("certs", d)
	rev := Revision(d)
	Eventually(func(g Gomega) {
		g.Expect(sameCertificate(h.copyData(cluster), d)).To(BeTrue(), "the copy does not hold the new certificate: %v",
			h.ClusterCondition(cluster, v1alpha1.ConditionTLSReady))
		h.expectApplied(g, rev, nodes...)
		st := h.Cluster(cluster).Status.TLS
		g.Expect(st.Revision).To(Equal(rev), "status.tls.revision")
		g.Expect(st.Rollout).To(Equal(&v1alpha1.TLSRolloutStatus{Phase: v1alpha1.TLSRolledOut}), "the rollout is recorded")
	}).WithTimeout(30*time.Second).Should(Succeed(), "members to serve revision %s", rev)
	want, _ := Parse(d)
	for i := range nodes {
		Expect(h.lc.probe(i)).To(Equal(want.Fingerprint), "member %d serves", i)
	}
	st := h.Cluster(cluster).Status.TLS
	Expect(st).NotTo(BeNil())
	Expect(st.Revision).To(Equal(rev), "status.tls.revision")
	Expect(st.Fingerprint).To(Equal(want.Fingerprint), "status.tls.fingerprint")
}

// checkNoKeyMaterial fails when a private key, or a piece of one, appears in the logs,
// events or conditions. (Plain booleans: a matcher's failure would print the key.)
func (h *harness) checkNoKeyMaterial(keys [][]byte) {
	GinkgoHelper()
	var all strings.Builder
	all.WriteString(h.logs.String())
	for _, e := range h.Events() {
		all.WriteString(e)
	}
	for _, c := range h.Cluster("vk").Status.Conditions {
		all.WriteString(c.Message)
	}
	text := all.String()
	Expect(strings.Contains(text, "PRIVATE KEY")).To(BeFalse(), "a PEM private key header appears in logs, events or conditions")
	for _, k := range keys {
		body := strings.Join(strings.Split(string(k), "\n")[1:2], "")
		Expect(len(body) > 20 && strings.Contains(text, body)).To(BeFalse(), "private key material appears in logs, events or conditions")
		Expect(strings.Contains(text, base64.StdEncoding.EncodeToString(k)[:40])).To(BeFalse(), "a base64 private key appears in logs, events or conditions")
	}
}

// Clusters that get no copy at first or never: a Secret named like the copy, a
// certificate not valid yet (accepted when it becomes valid), an invalid spec, and a
// cluster without TLS (no TLS condition at all).
var _ = Describe("The tls-controller at the edges", Ordered, func() {
	var (
		h               *harness
		ca              *testCA
		later, laterKey []byte
	)
	BeforeAll(func() {
		ca = newTestCA(GinkgoTB(), "ca")
		c, k := ca.issue(GinkgoTB(), leafOpts{})
		h = newHarness(1, secretData(ca.PEM, c, k), ca)
	})

	It("refuses a Secret named like the operator's copy, and leaves it alone", func() {
		c, k := ca.issue(GinkgoTB(), leafOpts{})
		clash := v1alpha1.TLSSecretName("clash")
		h.putSecret(clash, secretData(ca.PEM, c, k))
		h.createCluster("clash", clash)
		h.waitCondition("clash", v1alpha1.ConditionTLSReady, metav1.ConditionFalse, v1alpha1.ReasonSecretNameConflict, "name of the operator's own copy")
		h.waitCondition("clash", v1alpha1.ConditionCertificateExpiring, metav1.ConditionUnknown, v1alpha1.ReasonUnknown, "no certificate")
		s := h.Secret(clash)
		Expect(s.OwnerReferences).To(BeEmpty(), "the user's Secret was taken over")
		Expect(s.Labels).To(BeEmpty(), "the user's Secret was taken over")
	})

	It("accepts a certificate that is not valid yet once it becomes valid", func() {
		later, laterKey = ca.issue(GinkgoTB(), leafOpts{notBefore: time.Now().Add(4 * time.Second)})
		h.putSecret("later-certs", secretData(ca.PEM, later, laterKey))
		h.createCluster("later", "later-certs")
		h.waitCondition("later", v1alpha1.ConditionTLSReady, metav1.ConditionFalse, v1alpha1.ReasonNotYetValid, "no certificate was accepted before")
		h.waitCondition("later", v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonNamesMissing, "does not cover")
		st := h.Cluster("later").Status.TLS
		Expect(st).NotTo(BeNil())
		Expect(st.MissingNames).To(HaveLen(2), "status.tls.missingNames")
	})

	// A reserved user name; the webhook would refuse it.
	It("reports an invalid spec and does not act on it", func() {
		bad := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: "bad"}, Spec: v1alpha1.ValkeyClusterSpec{
			TLS:   &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "later-certs"}},
			Users: []v1alpha1.UserSpec{{Name: "_evil", NoPass: true}},
		}}
		Expect(h.Client.Create(suite.Step(), bad)).To(Succeed())
		h.waitCondition("bad", v1alpha1.ConditionInvalidSpec, metav1.ConditionTrue, v1alpha1.ReasonInvalid, "")
		h.waitCondition("bad", v1alpha1.ConditionTLSReady, metav1.ConditionUnknown, v1alpha1.ReasonUnknown, "the spec is invalid")
		h.waitCondition("bad", v1alpha1.ConditionCertificateExpiring, metav1.ConditionUnknown, v1alpha1.ReasonUnknown, "the spec is invalid")
		Expect(h.Secret("bad-tls")).To(BeNil(), "a copy was made for an invalid spec")
	})

	It("warns of a CA that another cluster trusts too, until that cluster is gone", func() {
		// later trusts ca (NamesMissing); twin's certificate from ca covers every name.
		c, k := ca.issue(GinkgoTB(), leafOpts{dns: append(checkedNames("twin", h.Namespace), "*.twin-nodes."+h.Namespace+".svc")})
		h.putSecret("twin-certs", secretData(ca.PEM, c, k))
		h.createCluster("twin", "twin-certs")
		h.waitCondition("twin", v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonCAShared, "also trusted by ValkeyCluster later of this namespace")
		h.waitCondition("later", v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonNamesMissing, "also trusted by ValkeyCluster twin of this namespace")
		h.waitEvent("Warning", "CAShared", "may join this cluster's bus")

		Expect(h.Client.Delete(suite.Step(), h.Cluster("twin"))).To(Succeed())
		Eventually(func(g Gomega) {
			c := h.ClusterCondition("later", v1alpha1.ConditionTLSReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(ContainSubstring("does not cover"))
			g.Expect(c.Message).NotTo(ContainSubstring("also trusted"))
		}).Should(Succeed(), "the warning of later to go with twin")
	})

	It("gives a cluster without TLS no TLS status and no copy", func() {
		h.createCluster("plain", "")
		h.member("later", "later-a") // a member of another cluster, so the controller is busy
		Eventually(func(g Gomega) { h.expectApplied(g, Revision(secretData(ca.PEM, later, laterKey)), "later-a") }).
			Should(Succeed(), "the member of the TLS cluster to be reported")
		plain := h.Cluster("plain")
		Expect(conditions.Owned(plain.Status.Conditions, ownedClusterConditions...)).To(BeEmpty(), "a cluster without TLS got TLS conditions")
		Expect(plain.Status.TLS).To(BeNil(), "a cluster without TLS got status.tls")
		Expect(h.Secret("plain-tls")).To(BeNil(), "a cluster without TLS got a copy")
	})
})
