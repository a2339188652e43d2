package certs

import (
	"crypto/x509"
	"testing"
	"time"
)

func TestDecideHold(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	window := 30 * 24 * time.Hour
	cert := func(rev string, left time.Duration) *Certificate {
		return &Certificate{Revision: rev, Leaf: &x509.Certificate{NotAfter: now.Add(left)}}
	}
	far := cert("old", 90*24*time.Hour)
	for _, tc := range []struct {
		name             string
		paused           bool
		served, accepted *Certificate
		want             holdDecision
	}{
		{"not paused", false, far, cert("new", 0), rollOut},
		{"paused, nothing served yet", true, nil, cert("new", 0), rollOut},
		{"paused, the same revision", true, far, cert("old", 0), rollOut},
		{"paused, a renewal", true, far, cert("new", 0), holdNew},
		{"paused, the served one expires within the window", true, cert("old", 10*24*time.Hour), cert("new", 0), rollOutExpiring},
		{"paused, the served one expired", true, cert("old", -time.Hour), cert("new", 0), rollOutExpiring},
	} {
		if got := decideHold(tc.paused, tc.served, tc.accepted, now, window); got != tc.want {
			t.Errorf("%s: decideHold = %d, want %d", tc.name, got, tc.want)
		}
	}
}
