package certs

import (
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// TestControllerScenario drives the controller through a TLS cluster's life against the
// API server and real servers: a good Secret is copied and reported; a mismatched and an
// expired certificate are refused while members keep serving; a renewal is rolled out
// live member by member; a CA changes through a bundle and then without one; an expiring
// certificate warns; a deleted Secret is reported; no key material reaches logs, events
// or conditions. The cluster serves (cluster_state ok, writes) throughout.
func TestControllerScenario(t *testing.T) {
	ca, next, other := newTestCA(t, "ca"), newTestCA(t, "next"), newTestCA(t, "other")
	boot, bootKey := ca.issue(t, leafOpts{})
	h := newHarness(t, 3, secretData(ca.PEM, boot, bootKey), ca, next, other)
	clientNames := ClientNames("vk", h.ns, DefaultClusterDomain)
	var keys [][]byte // every private key used, to check that none reaches a log
	issue := func(by *testCA, caPEM []byte, o leafOpts) map[string][]byte {
		o.dns = append(clientNames, "*.vk-nodes."+h.ns+".svc")
		c, k := by.issue(t, o)
		keys = append(keys, k)
		return secretData(caPEM, c, k)
	}
	fp := func(d map[string][]byte) string { c, _ := Parse(d); return c.Fingerprint }
	good := issue(ca, ca.PEM, leafOpts{})
	nodes := []string{"vk-a", "vk-b", "vk-c"}

	// 1. A good Secret: copy, status, conditions.
	h.putSecret("certs", good)
	h.createCluster("vk", "certs")
	h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateValid, fp(good))
	h.waitCondition("vk", v1alpha1.ConditionCertificateExpiring, metav1.ConditionFalse, v1alpha1.ReasonNotExpiring, "expires on")
	vc := h.cluster("vk")
	cp := h.secret(v1alpha1.TLSSecretName("vk"))
	if !sameCertificate(cp.Data, good) || cp.Type != "kubernetes.io/tls" {
		t.Fatalf("the copy does not hold the accepted certificate (type %s)", cp.Type)
	}
	for k, v := range v1alpha1.ClusterLabels("vk") {
		if cp.Labels[k] != v {
			t.Errorf("copy label %s=%q, want %q", k, cp.Labels[k], v)
		}
	}
	if len(cp.OwnerReferences) != 1 || cp.OwnerReferences[0].UID != vc.UID || !ptr.Deref(cp.OwnerReferences[0].Controller, false) {
		t.Errorf("copy owner %+v", cp.OwnerReferences)
	}
	st := vc.Status.TLS
	if st == nil || st.SecretName != "certs" || st.Fingerprint != fp(good) || st.Revision != Revision(good) || len(st.MissingNames) != 0 ||
		st.NotAfter.IsZero() {
		t.Fatalf("status.tls %+v", st)
	}
	h.waitEvent("Normal", "CertificateAccepted", "Secret certs")

	// 2. Members start with the copy and serve it without a reload.
	for _, n := range nodes {
		h.member("vk", n)
	}
	h.kubelet("vk")
	eventually(t, 20*time.Second, "every member serves the first revision", func() string { return h.applied(Revision(good), nodes...) })
	h.lc.form(3)
	stop := h.lc.watch(3)
	defer func() {
		if msg := stop(); msg != "" {
			t.Errorf("the cluster did not keep serving: %s", msg)
		}
	}()

	// 3. Refused Secrets never reach the copy or the members.
	second := issue(ca, ca.PEM, leafOpts{})
	refusals := []struct {
		name, reason string
		data         map[string][]byte
	}{
		{"mismatched key", v1alpha1.ReasonKeyMismatch, secretData(ca.PEM, second[KeyCert], good[KeyKey])},
		{"expired", v1alpha1.ReasonExpired, issue(ca, ca.PEM, leafOpts{notBefore: time.Now().Add(-48 * time.Hour), notAfter: time.Now().Add(-time.Hour)})},
		{"server authentication only", v1alpha1.ReasonUsageInvalid, issue(ca, ca.PEM, leafOpts{eku: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})},
	}
	for _, r := range refusals {
		h.putSecret("certs", r.data)
		h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionFalse, r.reason, "members keep serving the certificate accepted before")
		h.waitEvent("Warning", r.reason, "Secret certs is refused")
		if !sameCertificate(h.copyData("vk"), good) {
			t.Fatalf("%s: the copy changed", r.name)
		}
		if got := h.lc.probe(0); got != fp(good) {
			t.Fatalf("%s: a member serves %s", r.name, got)
		}
	}

	// 4. A renewal from the same CA rolls out live.
	renewed := issue(ca, ca.PEM, leafOpts{})
	h.rollTo("vk", renewed, nodes)
	h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateValid, fp(renewed))
	h.waitEvent("Normal", "CertificateReloaded", "revision "+Revision(renewed))
	h.waitEvent("Normal", "CertificateRolledOut", "revision "+Revision(renewed))

	// 5. A CA change in steps: the bundle (same leaf) counts only after a reload that
	// surely read the new files.
	bundle := concat(ca.PEM, next.PEM)
	step1 := secretData(bundle, renewed[KeyCert], renewed[KeyKey])
	changed := time.Now()
	h.rollTo("vk", step1, nodes)
	if cp := h.secret(v1alpha1.TLSSecretName("vk")); len(cp.Data[KeyPreviousCA]) != 0 || cp.Annotations[AnnotationRolledOut] != Revision(step1) {
		t.Errorf("after the rollout the copy still trusts earlier CAs or lacks the rollout mark: %v", cp.Annotations)
	}
	if took := time.Since(changed); took < testDelay {
		t.Errorf("a CA-only change was confirmed after %s, before the propagation delay %s", took, testDelay)
	}
	step2 := issue(next, bundle, leafOpts{})
	h.rollTo("vk", step2, nodes)
	step3 := secretData(next.PEM, step2[KeyCert], step2[KeyKey])
	h.rollTo("vk", step3, nodes)

	// 6. A CA switch without a bundle is accepted with a warning and still rolls out:
	// the controller trusts the previous CA until every member serves the new one.
	switched := issue(other, other.PEM, leafOpts{})
	h.rollTo("vk", switched, nodes)
	h.waitEvent("Warning", "CAChangedWithoutBundle")

	// 7. A certificate that expires within the window warns.
	soon := issue(other, other.PEM, leafOpts{notAfter: time.Now().Add(10 * 24 * time.Hour)})
	h.rollTo("vk", soon, nodes)
	h.waitCondition("vk", v1alpha1.ConditionCertificateExpiring, metav1.ConditionTrue, v1alpha1.ReasonExpiresSoon, "within the warning window")
	h.waitEvent("Warning", "CertificateExpiring", "expires on")

	// 8. A deleted Secret is reported; the copy stays.
	must(t, h.c.Delete(ctxT(t), h.secret("certs")))
	h.waitCondition("vk", v1alpha1.ConditionTLSReady, metav1.ConditionFalse, v1alpha1.ReasonSecretMissing, "does not exist")
	if !sameCertificate(h.copyData("vk"), soon) {
		t.Fatal("the copy changed when the Secret was deleted")
	}
	if msg := h.applied(Revision(soon), nodes...); msg != "" {
		t.Fatal(msg)
	}

	h.checkNoKeyMaterial(keys)
}

// rollTo puts d in the user's Secret and waits until the copy holds it, every member
// serves it (TLSApplied and a new handshake) and the rollout is recorded.
func (h *harness) rollTo(cluster string, d map[string][]byte, nodes []string) {
	h.t.Helper()
	h.putSecret("certs", d)
	rev := Revision(d)
	eventually(h.t, 30*time.Second, "members to serve revision "+rev, func() string {
		if !sameCertificate(h.copyData(cluster), d) {
			return "the copy does not hold the new certificate: " + fmt.Sprint(conditions.Get(h.cluster(cluster).Status.Conditions, v1alpha1.ConditionTLSReady))
		}
		if msg := h.applied(rev, nodes...); msg != "" {
			return msg
		}
		if cp := h.secret(v1alpha1.TLSSecretName(cluster)); cp.Annotations[AnnotationRolledOut] != rev {
			return "the rollout is not recorded"
		}
		return ""
	})
	want, _ := Parse(d)
	for i := range nodes {
		if got := h.lc.probe(i); got != want.Fingerprint {
			h.t.Fatalf("member %d serves %s, want %s", i, got, want.Fingerprint)
		}
	}
	if st := h.cluster(cluster).Status.TLS; st == nil || st.Revision != rev || st.Fingerprint != want.Fingerprint {
		h.t.Fatalf("status.tls %+v, want revision %s", st, rev)
	}
}

// checkNoKeyMaterial fails when a private key, or a piece of one, appears in the logs,
// events or conditions.
func (h *harness) checkNoKeyMaterial(keys [][]byte) {
	h.t.Helper()
	var all strings.Builder
	all.WriteString(h.logs.String())
	for _, e := range h.events() {
		all.WriteString(e)
	}
	for _, c := range h.cluster("vk").Status.Conditions {
		all.WriteString(c.Message)
	}
	text := all.String()
	if strings.Contains(text, "PRIVATE KEY") {
		h.t.Error("a PEM private key header appears in logs, events or conditions")
	}
	for _, k := range keys {
		body := strings.Join(strings.Split(string(k), "\n")[1:2], "")
		if len(body) > 20 && strings.Contains(text, body) {
			h.t.Error("private key material appears in logs, events or conditions")
		}
		if strings.Contains(text, base64.StdEncoding.EncodeToString(k)[:40]) {
			h.t.Error("a base64 private key appears in logs, events or conditions")
		}
	}
}

// TestControllerEdges covers clusters that get no copy at first or never: a Secret named
// like the copy, a certificate not valid yet (accepted when it becomes valid), an invalid
// spec, and a cluster without TLS (no TLS condition at all).
func TestControllerEdges(t *testing.T) {
	ca := newTestCA(t, "ca")
	h := newHarness(t, 1, func() map[string][]byte { c, k := ca.issue(t, leafOpts{}); return secretData(ca.PEM, c, k) }(), ca)
	c, k := ca.issue(t, leafOpts{})

	clash := v1alpha1.TLSSecretName("clash")
	h.putSecret(clash, secretData(ca.PEM, c, k))
	h.createCluster("clash", clash)
	h.waitCondition("clash", v1alpha1.ConditionTLSReady, metav1.ConditionFalse, v1alpha1.ReasonSecretNameConflict, "name of the operator's own copy")
	h.waitCondition("clash", v1alpha1.ConditionCertificateExpiring, metav1.ConditionUnknown, v1alpha1.ReasonUnknown, "no certificate")
	if s := h.secret(clash); len(s.OwnerReferences) != 0 || len(s.Labels) != 0 {
		t.Errorf("the user's Secret was taken over: %+v", s.ObjectMeta)
	}

	later, laterKey := ca.issue(t, leafOpts{notBefore: time.Now().Add(4 * time.Second)})
	h.putSecret("later-certs", secretData(ca.PEM, later, laterKey))
	h.createCluster("later", "later-certs")
	h.waitCondition("later", v1alpha1.ConditionTLSReady, metav1.ConditionFalse, v1alpha1.ReasonNotYetValid, "no certificate was accepted before")
	h.waitCondition("later", v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonNamesMissing, "does not cover")
	if st := h.cluster("later").Status.TLS; st == nil || len(st.MissingNames) != 2 {
		t.Errorf("status.tls %+v, want two missing names", st)
	}

	// An invalid spec (a reserved user name; the webhook would refuse it) is reported and
	// not acted on.
	bad := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "bad"}, Spec: v1alpha1.ValkeyClusterSpec{
		TLS:   &v1alpha1.TLSSpec{Certificate: v1alpha1.CertificateSpec{SecretName: "later-certs"}},
		Users: []v1alpha1.UserSpec{{Name: "_evil", NoPass: true}},
	}}
	must(t, h.c.Create(ctxT(t), bad))
	h.waitCondition("bad", v1alpha1.ConditionInvalidSpec, metav1.ConditionTrue, v1alpha1.ReasonInvalid, "")
	h.waitCondition("bad", v1alpha1.ConditionTLSReady, metav1.ConditionUnknown, v1alpha1.ReasonUnknown, "the spec is invalid")
	h.waitCondition("bad", v1alpha1.ConditionCertificateExpiring, metav1.ConditionUnknown, v1alpha1.ReasonUnknown, "the spec is invalid")
	if h.secret("bad-tls") != nil {
		t.Error("a copy was made for an invalid spec")
	}

	h.createCluster("plain", "")
	h.member("later", "later-a") // a member of another cluster, so the controller is busy
	eventually(t, 20*time.Second, "the member of the TLS cluster to be reported", func() string { return h.applied(Revision(secretData(ca.PEM, later, laterKey)), "later-a") })
	if conds := h.cluster("plain").Status.Conditions; len(conditions.Owned(conds, ownedClusterConditions...)) != 0 || h.cluster("plain").Status.TLS != nil {
		t.Errorf("a cluster without TLS got TLS status: %+v", conds)
	}
	if h.secret("plain-tls") != nil {
		t.Error("a cluster without TLS got a copy")
	}
}
