package certs

import (
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/operator"
)

// A cluster whose certificate cert-manager issues (spec.tls.certManager), against the
// suite's API server. cert-manager's CRDs are installed from the cert-manager Go module
// during the specs (so the first spec sees them absent), but no cert-manager runs: the
// test plays its part, writing the Secret a real cert-manager writes for the Certificate
// (a certificate of the test's CA with the Certificate's names, and its secretTemplate's
// labels) and the Certificate's status. A real cert-manager issues for real in the e2e
// suite. envtest runs no garbage collector: that deletion cascades is checked as the
// owner references it follows.
var _ = Describe("The tls-controller with cert-manager", Ordered, func() {
	var (
		h        *harness
		cm       client.Client
		ca       *testCA
		first    map[string][]byte
		nodes    = []string{"vk-a", "vk-b"}
		withCert = func(mutate func(*v1alpha1.CertManagerSpec)) *v1alpha1.TLSSpec {
			spec := &v1alpha1.CertManagerSpec{}
			if mutate != nil {
				mutate(spec)
			}
			return &v1alpha1.TLSSpec{CertManager: spec}
		}
	)
	fp := func(d map[string][]byte) string { c, _ := Parse(d); return c.Fingerprint }
	BeforeAll(func() {
		ca = newTestCA(GinkgoTB(), "ca")
		boot, bootKey := ca.issue(GinkgoTB(), leafOpts{})
		h = newHarness(3, secretData(ca.PEM, boot, bootKey), ca)
		cm = certManagerClient()
	})

	It("reports a cluster that asks for cert-manager while cert-manager is not installed", func() {
		h.createClusterTLS("vk", withCert(nil))
		h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionFalse, v1alpha1.ReasonCertManagerNotInstalled,
			"cert-manager is not installed")
		h.waitEvent("Warning", v1alpha1.ReasonCertManagerNotInstalled, "install cert-manager")
		Expect(h.Secret(v1alpha1.TLSSecretName("vk"))).To(BeNil(), "a copy without a certificate")
		Expect(h.Cluster("vk").Status.TLS).To(BeNil(), "status.tls without a certificate")
	})

	It("makes the cluster's own CA and asks for the members' certificate once cert-manager's CRDs exist", func() {
		installCertManagerCRDs()
		vc := h.Cluster("vk")
		crt := &cmapi.Certificate{}
		Eventually(func(g Gomega) {
			g.Expect(cm.Get(suite.Step(), h.Key("vk-tls"), crt)).To(Succeed())
		}).Should(Succeed(), "the members' Certificate")
		Expect(crt.Spec.SecretName).To(Equal("vk-tls"))
		Expect(crt.Spec.IssuerRef).To(Equal(cmmeta.IssuerReference{Name: "vk-ca", Kind: "Issuer", Group: "cert-manager.io"}))
		Expect(crt.Spec.Usages).To(ConsistOf(cmapi.UsageServerAuth, cmapi.UsageClientAuth, cmapi.UsageDigitalSignature, cmapi.UsageKeyEncipherment))
		ns := h.Namespace
		Expect(crt.Spec.DNSNames).To(ConsistOf("vk", "vk."+ns, "vk."+ns+".svc", "vk."+ns+".svc.cluster.local",
			"vk-nodes", "vk-nodes."+ns, "vk-nodes."+ns+".svc", "vk-nodes."+ns+".svc.cluster.local",
			"*.vk-nodes."+ns+".svc", "*.vk-nodes."+ns+".svc.cluster.local"))
		Expect(crt.Spec.IPAddresses).To(BeEmpty())
		Expect(crt.Spec.SecretTemplate.Labels).To(Equal(v1alpha1.ClusterLabels("vk")))
		expectControlled(crt, vc)
		selfSigned, caIssuer, caCrt := &cmapi.Issuer{}, &cmapi.Issuer{}, &cmapi.Certificate{}
		Expect(cm.Get(suite.Step(), h.Key("vk-selfsigned"), selfSigned)).To(Succeed())
		Expect(selfSigned.Spec.SelfSigned).NotTo(BeNil())
		Expect(cm.Get(suite.Step(), h.Key("vk-ca"), caCrt)).To(Succeed())
		Expect(caCrt.Spec.IsCA).To(BeTrue())
		Expect(caCrt.Spec.IssuerRef.Name).To(Equal("vk-selfsigned"))
		Expect(cm.Get(suite.Step(), h.Key("vk-ca"), caIssuer)).To(Succeed())
		Expect(caIssuer.Spec.CA).To(Equal(&cmapi.CAIssuer{SecretName: "vk-ca"}))
		for _, o := range []client.Object{selfSigned, caCrt, caIssuer} {
			expectControlled(o, vc)
		}
		h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuing,
			"waiting for cert-manager to write Secret vk-tls for Certificate vk-tls")
		h.waitEvent("Normal", "CertificateRequested", "Certificate vk-tls (Secret vk-tls) from Issuer vk-ca")
		h.waitEvent("Normal", v1alpha1.ReasonCertificateIssuing, "members cannot start")
	})

	It("takes the Secret cert-manager writes as a Secret you keep: checked, copied and served", func() {
		playCertManagerCA(cm, h, "vk-ca")
		first = playCertManager(cm, h, ca, "vk-tls")
		h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateValid,
			"Secret vk-tls (written by cert-manager for Certificate vk-tls)")
		Expect(sameCertificate(h.copyData("vk"), first)).To(BeTrue(), "the copy holds what cert-manager wrote")
		st := h.Cluster("vk").Status.TLS
		Expect(st.SecretName).To(Equal("vk-tls"))
		Expect(st.Fingerprint).To(Equal(fp(first)))
		Expect(st.MissingNames).To(BeEmpty(), "the certificate has every name the operator asked for")
		for _, n := range nodes {
			h.member("vk", n)
		}
		h.kubelet("vk")
		Eventually(func(g Gomega) { h.expectApplied(g, Revision(first), nodes...) }).Should(Succeed(), "every member serves it")
	})

	It("gives the Secrets cert-manager wrote an owner reference to the cluster, so they go with it", func() {
		vc := h.Cluster("vk")
		for _, name := range []string{"vk-tls", "vk-ca"} {
			Eventually(func(g Gomega) {
				s := h.Secret(name)
				g.Expect(s).NotTo(BeNil())
				g.Expect(s.OwnerReferences).To(ContainElement(And(
					HaveField("UID", vc.UID), HaveField("Kind", "ValkeyCluster"), HaveField("Controller", BeNil()))), "owners of %s", name)
			}).Should(Succeed(), "Secret %s owned by the cluster", name)
		}
	})

	It("asks for the members' new addresses when they get external access, and rolls the new certificate out", func() {
		vc := h.Cluster("vk")
		vc.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer}
		Expect(h.Client.Update(suite.Step(), vc)).To(Succeed())
		setExternalAddress(h, "vk-a", "203.0.113.10:6379")
		setExternalAddress(h, "vk-b", "203.0.113.11:6379")
		Eventually(func(g Gomega) {
			crt := &cmapi.Certificate{}
			g.Expect(cm.Get(suite.Step(), h.Key("vk-tls"), crt)).To(Succeed())
			g.Expect(crt.Spec.IPAddresses).To(Equal([]string{"203.0.113.10", "203.0.113.11"}))
		}).Should(Succeed(), "the Certificate asks for the members' addresses")
		// One event at least: when the two addresses come in two passes, the events
		// recorder folds the second CertificateUpdated into a series of the first (same
		// object, reason and action within its window), so its note may not be stored.
		h.waitEvent("Normal", "CertificateUpdated", "203.0.113.10")
		h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonNamesMissing,
			"does not cover 203.0.113.10 and 203.0.113.11")
		renewed := playCertManager(cm, h, ca, "vk-tls")
		h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateValid, fp(renewed))
		Eventually(func(g Gomega) { h.expectApplied(g, Revision(renewed), nodes...) }).WithTimeout(30*time.Second).Should(Succeed(), "every member serves the new certificate")
		for i := range nodes {
			Expect(h.lc.probe(i)).To(Equal(fp(renewed)), "member %d serves", i)
		}
		h.waitEvent("Normal", "CertificateRolledOut", "revision "+Revision(renewed))
	})

	It("asks for the address of a member the cluster scales out to", func() {
		h.member("vk", "vk-c")
		setExternalAddress(h, "vk-c", "203.0.113.12:6379")
		Eventually(func(g Gomega) {
			crt := &cmapi.Certificate{}
			g.Expect(cm.Get(suite.Step(), h.Key("vk-tls"), crt)).To(Succeed())
			g.Expect(crt.Spec.IPAddresses).To(Equal([]string{"203.0.113.10", "203.0.113.11", "203.0.113.12"}))
		}).Should(Succeed(), "the Certificate asks for the new member's address")
		third := playCertManager(cm, h, ca, "vk-tls")
		Eventually(func(g Gomega) { h.expectApplied(g, Revision(third), append(nodes, "vk-c")...) }).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("reports an issuance that failed while the members keep their certificate", func() {
		served := h.Cluster("vk").Status.TLS.Fingerprint
		crt := &cmapi.Certificate{}
		Expect(cm.Get(suite.Step(), h.Key("vk-tls"), crt)).To(Succeed())
		now := metav1.Now()
		crt.Status.LastFailureTime = &now
		crt.Status.Conditions = append(crt.Status.Conditions, cmapi.CertificateCondition{Type: cmapi.CertificateConditionIssuing,
			Status: cmmeta.ConditionFalse, Reason: "Failed", ObservedGeneration: crt.Generation, LastTransitionTime: &now,
			Message: "The certificate request has failed to complete and will be retried: the issuer refused the request"})
		Expect(cm.Status().Update(suite.Step(), crt)).To(Succeed())
		h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionFalse, v1alpha1.ReasonIssuingFailed, "the issuer refused the request")
		h.waitEvent("Warning", v1alpha1.ReasonIssuingFailed, "cert-manager could not issue Certificate vk-tls")
		Expect(h.ClusterCondition("vk", v1alpha1.ConditionTLSReady).Message).To(ContainSubstring("keep serving the certificate accepted before (fingerprint " + served))
		Expect(h.lc.probe(0)).To(Equal(served))
	})

	It("drops the cluster's own CA when the spec names an issuer", func() {
		vc := h.Cluster("vk")
		vc.Spec.TLS = withCert(func(s *v1alpha1.CertManagerSpec) {
			s.IssuerRef = &v1alpha1.IssuerRef{Name: "corp", Kind: v1alpha1.IssuerKindClusterIssuer}
		})
		Expect(h.Client.Update(suite.Step(), vc)).To(Succeed())
		Eventually(func(g Gomega) {
			crt := &cmapi.Certificate{}
			g.Expect(cm.Get(suite.Step(), h.Key("vk-tls"), crt)).To(Succeed())
			g.Expect(crt.Spec.IssuerRef).To(Equal(cmmeta.IssuerReference{Name: "corp", Kind: "ClusterIssuer", Group: "cert-manager.io"}))
			g.Expect(apierrors.IsNotFound(cm.Get(suite.Step(), h.Key("vk-selfsigned"), &cmapi.Issuer{}))).To(BeTrue(), "Issuer vk-selfsigned")
			g.Expect(apierrors.IsNotFound(cm.Get(suite.Step(), h.Key("vk-ca"), &cmapi.Issuer{}))).To(BeTrue(), "Issuer vk-ca")
			g.Expect(apierrors.IsNotFound(cm.Get(suite.Step(), h.Key("vk-ca"), &cmapi.Certificate{}))).To(BeTrue(), "Certificate vk-ca")
		}).Should(Succeed(), "the Certificate names the ClusterIssuer and the own CA is gone")
		h.waitEvent("Normal", "CertManagerObjectDeleted", "Issuer vk-selfsigned")
	})

	It("never takes over a Secret of the certificate's name that is not the cluster's", func() {
		h.putSecret("taken-tls", first)
		h.createClusterTLS("taken", withCert(nil))
		h.waitCondition("taken", v1alpha1.ConditionTLSReady, metav1.ConditionFalse, v1alpha1.ReasonNameConflict,
			"Secret taken-tls exists and is not this cluster's")
		Consistently(func() bool {
			return apierrors.IsNotFound(cm.Get(suite.Step(), h.Key("taken-tls"), &cmapi.Certificate{}))
		}).WithTimeout(2*time.Second).Should(BeTrue(), "a Certificate that would overwrite the Secret")
		Expect(h.Secret("taken-tls").OwnerReferences).To(BeEmpty(), "the Secret was taken over")
	})

	It("deletes the Certificate when the cluster keeps the Secret itself, and goes on serving it", func() {
		served := h.Cluster("vk").Status.TLS.Fingerprint
		vc := h.Cluster("vk")
		vc.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "vk-tls"}}
		Expect(h.Client.Update(suite.Step(), vc)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(cm.Get(suite.Step(), h.Key("vk-tls"), &cmapi.Certificate{}))
		}).Should(BeTrue(), "Certificate vk-tls deleted")
		h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateValid, "the certificate of Secret vk-tls")
		Expect(h.Cluster("vk").Status.TLS.Fingerprint).To(Equal(served))
		Expect(h.Secret("vk-tls")).NotTo(BeNil(), "the Secret cert-manager wrote stays")
	})
})

// certManagerClient is a client of the suite's API server that knows cert-manager's types.
func certManagerClient() client.Client {
	GinkgoHelper()
	s := operator.Scheme()
	Expect(cmapi.AddToScheme(s)).To(Succeed())
	c, err := client.New(suite.Config, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// installCertManagerCRDs installs cert-manager's Certificate and Issuer CRDs from the
// cert-manager module this module requires.
func installCertManagerCRDs() {
	GinkgoHelper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager").Output()
	Expect(err).NotTo(HaveOccurred(), "find the cert-manager module")
	dir := filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds")
	_, err = envtest.InstallCRDs(suite.Config, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(dir, "cert-manager.io_certificates.yaml"), filepath.Join(dir, "cert-manager.io_issuers.yaml")},
		ErrorIfPathMissing: true,
	})
	Expect(err).NotTo(HaveOccurred(), "install cert-manager's CRDs")
}

// expectControlled checks that an object is labelled as the cluster's and controlled by
// it, so it is deleted with it.
func expectControlled(o client.Object, vc *v1alpha1.ValkeyCluster) {
	GinkgoHelper()
	Expect(o.GetLabels()).To(Equal(v1alpha1.ClusterLabels(vc.Name)), "labels of %s", o.GetName())
	Expect(metav1.IsControlledBy(o, vc)).To(BeTrue(), "%s is controlled by the cluster: %v", o.GetName(), o.GetOwnerReferences())
}

// playCertManager does what cert-manager does for the members' Certificate name: it
// issues a certificate of ca with the Certificate's names, writes it into the
// Certificate's Secret with the secretTemplate's labels, and reports the Certificate
// Ready. It returns the Secret's data.
func playCertManager(cm client.Client, h *harness, ca *testCA, name string) map[string][]byte {
	GinkgoHelper()
	crt := &cmapi.Certificate{}
	Expect(cm.Get(suite.Step(), h.Key(name), crt)).To(Succeed())
	var ips []net.IP
	for _, a := range crt.Spec.IPAddresses {
		ips = append(ips, net.ParseIP(a))
	}
	c, k := ca.issue(GinkgoTB(), leafOpts{dns: crt.Spec.DNSNames, ips: ips})
	data := secretData(ca.PEM, c, k)
	writeIssuedSecret(h, crt, data)
	leaf, _ := Parse(data)
	now := metav1.Now()
	crt.Status = cmapi.CertificateStatus{
		NotBefore: &metav1.Time{Time: leaf.Leaf.NotBefore}, NotAfter: &metav1.Time{Time: leaf.Leaf.NotAfter},
		Conditions: []cmapi.CertificateCondition{{Type: cmapi.CertificateConditionReady, Status: cmmeta.ConditionTrue, Reason: "Ready",
			Message: "Certificate is up to date and has not expired", ObservedGeneration: crt.Generation, LastTransitionTime: &now}},
	}
	Expect(cm.Status().Update(suite.Step(), crt)).To(Succeed())
	return data
}

// playCertManagerCA writes the Secret of the cluster's own CA Certificate, as
// cert-manager does (the test's certificates do not come from it).
func playCertManagerCA(cm client.Client, h *harness, name string) {
	GinkgoHelper()
	crt := &cmapi.Certificate{}
	Expect(cm.Get(suite.Step(), h.Key(name), crt)).To(Succeed())
	other := newTestCA(GinkgoTB(), name)
	writeIssuedSecret(h, crt, map[string][]byte{KeyCA: other.PEM, KeyCert: other.PEM, KeyKey: []byte("not read by the operator")})
}

// writeIssuedSecret writes the Secret of a Certificate as cert-manager writes it: type
// kubernetes.io/tls, the secretTemplate's labels, cert-manager's annotations.
func writeIssuedSecret(h *harness, crt *cmapi.Certificate, data map[string][]byte) {
	GinkgoHelper()
	s := h.Secret(crt.Spec.SecretName)
	if s == nil {
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: crt.Spec.SecretName}, Type: corev1.SecretTypeTLS}
	}
	s.Labels = crt.Spec.SecretTemplate.Labels
	s.Annotations = map[string]string{"cert-manager.io/certificate-name": crt.Name, "cert-manager.io/issuer-name": crt.Spec.IssuerRef.Name}
	s.Data = data
	if s.ResourceVersion == "" {
		Expect(h.Client.Create(suite.Step(), s)).To(Succeed())
		return
	}
	Expect(h.Client.Update(suite.Step(), s)).To(Succeed())
}

// setExternalAddress writes the address a member announces, as the cluster-controller
// does once the member's Service has one.
func setExternalAddress(h *harness, member, addr string) {
	GinkgoHelper()
	vn := &v1alpha1.ValkeyNode{}
	Expect(h.Client.Get(suite.Step(), h.Key(member), vn)).To(Succeed())
	patch := client.MergeFrom(vn.DeepCopy())
	vn.Status.ExternalAddress = addr
	Expect(h.Client.Status().Patch(suite.Step(), vn, patch)).To(Succeed())
}
