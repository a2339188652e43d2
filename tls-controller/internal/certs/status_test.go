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
