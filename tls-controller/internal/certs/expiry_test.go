package certs

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// TestExpiringCondition checks the warning window and when the condition is checked
// again.
func TestExpiringCondition(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	const day = 24 * time.Hour
	window := 30 * day
	tests := []struct {
		name     string
		notAfter time.Time
		status   metav1.ConditionStatus
		reason   string
		next     time.Duration
	}{
		{"40 days left", now.Add(40 * day), metav1.ConditionFalse, v1alpha1.ReasonNotExpiring, 10*day + time.Second},
		{"window starts now", now.Add(window), metav1.ConditionTrue, v1alpha1.ReasonExpiresSoon, window + time.Second},
		{"10 days left", now.Add(10 * day), metav1.ConditionTrue, v1alpha1.ReasonExpiresSoon, 10*day + time.Second},
		{"ends now", now, metav1.ConditionTrue, v1alpha1.ReasonExpired, 0},
		{"ended", now.Add(-time.Hour), metav1.ConditionTrue, v1alpha1.ReasonExpired, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, next := ExpiringCondition(tc.notAfter, now, window, 3)
			if c.Type != v1alpha1.ConditionCertificateExpiring || c.Status != tc.status || c.Reason != tc.reason || c.ObservedGeneration != 3 {
				t.Errorf("condition %+v, want %s %s", c, tc.status, tc.reason)
			}
			if next != tc.next {
				t.Errorf("next check in %s, want %s", next, tc.next)
			}
			if !strings.Contains(c.Message, tc.notAfter.Format(time.RFC3339)) {
				t.Errorf("message %q lacks the date", c.Message)
			}
		})
	}
}
