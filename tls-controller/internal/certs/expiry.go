package certs

import (
	"crypto/x509"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// DefaultExpiryWarning is how long before its end a certificate is reported as expiring.
const DefaultExpiryWarning = 30 * 24 * time.Hour

// ExpiringCondition computes CertificateExpiring for the certificate members serve,
// which ends at notAfter, and how long until the condition next changes (0: never).
// It is True with reason ExpiresSoon inside the warning window, True with reason Expired
// once the certificate has ended, and False (NotExpiring) before the window.
func ExpiringCondition(notAfter, now time.Time, window time.Duration, gen int64) (metav1.Condition, time.Duration) {
	date := formatTime(notAfter)
	typ := v1alpha1.ConditionCertificateExpiring
	if !now.Before(notAfter) {
		msg := fmt.Sprintf("the certificate the members serve expired on %s: replace the certificate Secret", date)
		return conditions.New(typ, true, v1alpha1.ReasonExpired, msg, gen), 0
	}
	if !now.Before(notAfter.Add(-window)) {
		msg := fmt.Sprintf("the certificate the members serve expires on %s, within the warning window of %s: renew the certificate Secret", date, window)
		return conditions.New(typ, true, v1alpha1.ReasonExpiresSoon, msg, gen), untilAfter(now, notAfter)
	}
	msg := fmt.Sprintf("the certificate the members serve expires on %s", date)
	return conditions.New(typ, false, v1alpha1.ReasonNotExpiring, msg, gen), untilAfter(now, notAfter.Add(-window))
}

// untilAfter is the wait from now until just after t, so the next check sees t passed.
func untilAfter(now, t time.Time) time.Duration { return t.Sub(now) + time.Second }

// ExpiryWindow is the warning window of a served certificate whose leaf is leaf: the
// --expiry-warning window, and for a certificate cert-manager renews (cm set) at most
// half the time cert-manager renews it before its end (renewBefore, else a third of its
// lifetime, cert-manager's default). A renewal on time then never raises the warning; one
// late by half its margin does, whatever the window.
func ExpiryWindow(window time.Duration, cm *v1alpha1.CertManagerSpec, leaf *x509.Certificate) time.Duration {
	if cm == nil {
		return window
	}
	margin := leaf.NotAfter.Sub(leaf.NotBefore) / 3
	if cm.RenewBefore != nil {
		margin = cm.RenewBefore.Duration
	}
	return min(window, margin/2)
}
