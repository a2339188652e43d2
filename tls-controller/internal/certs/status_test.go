package certs

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// TestReadyCondition checks TLSReady for each outcome of the checks.
func TestReadyCondition(t *testing.T) {
	ca := newTestCA(t, "ca")
	c, k := ca.issue(t, leafOpts{dns: []string{"vk.ns.svc"}})
	names := checkedNames("vk", "ns")
	accepted := Check(secretData(ca.PEM, c, k), names, time.Now())
	complete := Check(secretData(ca.PEM, c, k), names[:1], time.Now())
	current := accepted.Cert
	refused := Verdict{Refusal: &Refusal{Reason: v1alpha1.ReasonKeyMismatch, Message: "tls.key is not the private key"}}
	tests := []struct {
		name    string
		o       checkOutcome
		current *Certificate
		status  metav1.ConditionStatus
		reason  string
		msg     []string
	}{
		{name: "accepted", o: checkOutcome{Source: "s", Verdict: complete}, status: metav1.ConditionTrue,
			reason: v1alpha1.ReasonCertificateValid, msg: []string{"Secret s", current.Fingerprint, "passed every check"}},
		{name: "accepted, names missing", o: checkOutcome{Source: "s", Verdict: accepted}, status: metav1.ConditionTrue,
			reason: v1alpha1.ReasonNamesMissing, msg: []string{"warning", "vk.ns.svc.cluster.local"}},
		{name: "missing, never accepted", o: checkOutcome{Source: "s", Missing: true}, status: metav1.ConditionFalse,
			reason: v1alpha1.ReasonSecretMissing, msg: []string{"Secret s does not exist", "members cannot start"}},
		{name: "refused, earlier one kept", o: checkOutcome{Source: "s", Verdict: refused}, current: current, status: metav1.ConditionFalse,
			reason: v1alpha1.ReasonKeyMismatch, msg: []string{"Secret s is refused: tls.key", "keep serving", current.Fingerprint}},
		{name: "conflict", o: checkOutcome{Source: "vk-tls", Conflict: "names the copy"}, status: metav1.ConditionFalse,
			reason: v1alpha1.ReasonSecretNameConflict, msg: []string{"names the copy"}},
		// A certificate cert-manager issues.
		{name: "cert-manager not installed", o: checkOutcome{Source: "vk-tls", Missing: true, Issuance: &issuance{Certificate: "vk-tls", NotInstalled: true}},
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonCertManagerNotInstalled,
			msg: []string{"cert-manager is not installed", "spec.tls.certificate", "members cannot start"}},
		{name: "cert-manager not installed, an earlier certificate kept", o: checkOutcome{Source: "vk-tls", Issuance: &issuance{Certificate: "vk-tls", NotInstalled: true}},
			current: current, status: metav1.ConditionFalse, reason: v1alpha1.ReasonCertManagerNotInstalled,
			msg: []string{"cert-manager is not installed", "keep serving", current.Fingerprint}},
		{name: "not issued yet", o: checkOutcome{Source: "vk-tls", Missing: true, Issuance: &issuance{Certificate: "vk-tls", Pending: "Ready=False DoesNotExist: Issuing"}},
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonCertificateIssuing,
			msg: []string{"waiting for cert-manager to write Secret vk-tls for Certificate vk-tls (Ready=False DoesNotExist: Issuing)", "members cannot start"}},
		{name: "issuing failed", o: checkOutcome{Source: "vk-tls", Missing: true, Issuance: &issuance{Certificate: "vk-tls", Failed: "the issuer refused"}},
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonIssuingFailed,
			msg: []string{"cert-manager could not issue Certificate vk-tls", "kubectl describe certificate vk-tls", "the issuer refused"}},
		{name: "a renewal failed, the certificate served stays", o: checkOutcome{Source: "vk-tls", Verdict: complete, Issuance: &issuance{Certificate: "vk-tls", Failed: "the issuer refused"}},
			current: current, status: metav1.ConditionFalse, reason: v1alpha1.ReasonIssuingFailed,
			msg: []string{"the issuer refused", "keep serving", current.Fingerprint}},
		{name: "what cert-manager wrote is refused", o: checkOutcome{Source: "vk-tls", Verdict: refused, Issuance: &issuance{Certificate: "vk-tls"}},
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonKeyMismatch,
			msg: []string{"Secret vk-tls (written by cert-manager for Certificate vk-tls) is refused: tls.key"}},
		{name: "issued", o: checkOutcome{Source: "vk-tls", Verdict: complete, Issuance: &issuance{Certificate: "vk-tls"}},
			status: metav1.ConditionTrue, reason: v1alpha1.ReasonCertificateValid,
			msg: []string{"Secret vk-tls (written by cert-manager for Certificate vk-tls)", "passed every check"}},
		{name: "issued, a new name not yet", o: checkOutcome{Source: "vk-tls", Verdict: accepted, Issuance: &issuance{Certificate: "vk-tls", Pending: "Ready=False Reissuing"}},
			status: metav1.ConditionTrue, reason: v1alpha1.ReasonNamesMissing,
			msg: []string{"does not cover vk.ns.svc.cluster.local", "until cert-manager issues what Certificate vk-tls (Ready=False Reissuing) asks for"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ReadyCondition(tc.o, tc.current, 7)
			if got.Type != v1alpha1.ConditionTLSReady || got.Status != tc.status || got.Reason != tc.reason || got.ObservedGeneration != 7 {
				t.Errorf("condition %+v, want %s %s", got, tc.status, tc.reason)
			}
			for _, m := range tc.msg {
				if !strings.Contains(got.Message, m) {
					t.Errorf("message %q lacks %q", got.Message, m)
				}
			}
		})
	}
}

func TestAppliedCondition(t *testing.T) {
	tests := []struct {
		name   string
		res    *memberResult
		status metav1.ConditionStatus
		reason string
		msg    string
	}{
		{"nothing accepted", nil, metav1.ConditionUnknown, v1alpha1.ReasonCertificatePending, "no certificate"},
		{"served", &memberResult{Served: true}, metav1.ConditionTrue, v1alpha1.ReasonCertificateServed, "serves certificate revision r1 (fingerprint F)"},
		{"pending", &memberResult{Message: "files not updated"}, metav1.ConditionFalse, v1alpha1.ReasonCertificatePending, "r1 is not served yet: files not updated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := AppliedCondition(tc.res, "r1", "F", 2)
			if got.Type != v1alpha1.ConditionTLSApplied || got.Status != tc.status || got.Reason != tc.reason || !strings.Contains(got.Message, tc.msg) {
				t.Errorf("condition %+v, want %s %s %q", got, tc.status, tc.reason, tc.msg)
			}
		})
	}
}
