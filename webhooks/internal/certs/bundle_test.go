package certs

import (
	"bytes"
	"crypto/x509"
	"slices"
	"testing"
	"time"
)

var (
	t0       = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	svcNames = []string{"hooks.valkey-system.svc", "hooks.valkey-system.svc.cluster.local"}
	issuer   = Issuer{CommonName: "test-ca", DNSNames: svcNames, CAValidity: 100 * time.Hour, ServingValidity: 10 * time.Hour}
)

// planned issues a fresh bundle at t0.
func planned(t *testing.T) *Bundle {
	t.Helper()
	b, changed, err := issuer.Plan(nil, t0)
	if err != nil || !changed {
		t.Fatalf("Plan(nil) = changed %v, err %v", changed, err)
	}
	return b
}

func caPool(b *Bundle) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b.TrustPEM())
	return pool
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name        string
		current     func(t *testing.T) *Bundle
		now         time.Time
		issuer      Issuer
		wantChanged bool
		check       func(t *testing.T, before, after *Bundle)
	}{
		{name: "nothing yet", current: func(*testing.T) *Bundle { return nil }, now: t0, wantChanged: true,
			check: func(t *testing.T, _, after *Bundle) {
				if after.PreviousCA != nil {
					t.Error("a first CA has no predecessor")
				}
			}},
		{name: "fresh bundle kept", current: planned, now: t0.Add(time.Hour)},
		{name: "serving certificate due at 80% (of 11 h, backdate included)", current: planned, now: t0.Add(8 * time.Hour), wantChanged: true,
			check: func(t *testing.T, before, after *Bundle) {
				sameCA(t, before, after)
				if bytes.Equal(before.Serving.CertPEM, after.Serving.CertPEM) {
					t.Error("serving certificate not renewed")
				}
			}},
		{name: "serving certificate just before 80%", current: planned, now: t0.Add(7*time.Hour + 45*time.Minute)},
		{name: "other service names", current: planned, now: t0, wantChanged: true,
			issuer: Issuer{CommonName: "test-ca", DNSNames: []string{"other.ns.svc"}, CAValidity: 100 * time.Hour, ServingValidity: 10 * time.Hour},
			check: func(t *testing.T, before, after *Bundle) {
				sameCA(t, before, after)
				if !slices.Equal(after.Serving.Cert.DNSNames, []string{"other.ns.svc"}) {
					t.Errorf("names = %v", after.Serving.Cert.DNSNames)
				}
			}},
		{name: "serving certificate of another CA", now: t0, wantChanged: true,
			current: func(t *testing.T) *Bundle {
				b, other := planned(t), planned(t)
				b.Serving = other.Serving
				return b
			},
			check: sameCA},
		{name: "serving certificate missing", now: t0, wantChanged: true,
			current: func(t *testing.T) *Bundle {
				b := planned(t)
				b.Serving = nil
				return b
			},
			check: sameCA},
		{name: "CA due at 80% keeps the old CA trusted", current: planned, now: t0.Add(81 * time.Hour), wantChanged: true,
			check: func(t *testing.T, before, after *Bundle) {
				if bytes.Equal(before.CA.CertPEM, after.CA.CertPEM) {
					t.Fatal("CA not renewed")
				}
				if !bytes.Equal(after.PreviousCA, before.CA.CertPEM) {
					t.Error("previous CA not kept")
				}
				if !bytes.Contains(after.TrustPEM(), before.CA.CertPEM) || !bytes.Contains(after.TrustPEM(), after.CA.CertPEM) {
					t.Error("caBundle must trust both CAs during the rotation")
				}
			}},
		{name: "CA expired is not kept", current: planned, now: t0.Add(101 * time.Hour), wantChanged: true,
			check: func(t *testing.T, _, after *Bundle) {
				if after.PreviousCA != nil {
					t.Error("an expired CA must not be trusted")
				}
			}},
		{name: "expired previous CA dropped", now: t0.Add(90 * time.Hour), wantChanged: true,
			current: func(t *testing.T) *Bundle {
				b, _, err := issuer.Plan(nil, t0.Add(85*time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				b.PreviousCA = expiredCA(t)
				return b
			},
			check: func(t *testing.T, _, after *Bundle) {
				if after.PreviousCA != nil {
					t.Error("expired previous CA kept")
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := issuer
			if tc.issuer.CommonName != "" {
				is = tc.issuer
			}
			before := tc.current(t)
			after, changed, err := is.Plan(before, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.wantChanged {
				t.Fatalf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if !usableServing(after.Serving, after.CA, is.DNSNames, tc.now) {
				t.Error("planned serving certificate is not usable")
			}
			if tc.check != nil {
				tc.check(t, before, after)
			}
		})
	}
}

func sameCA(t *testing.T, before, after *Bundle) {
	t.Helper()
	if !bytes.Equal(before.CA.CertPEM, after.CA.CertPEM) {
		t.Error("CA changed")
	}
}

// expiredCA is a CA certificate whose lifetime ended before t0+90h.
func expiredCA(t *testing.T) []byte {
	t.Helper()
	ca, err := NewCA("old", t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca.CertPEM
}

func TestServingNeverOutlivesCA(t *testing.T) {
	ca, err := NewCA("ca", t0, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := NewServing(ca, svcNames, t0, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if serving.Cert.NotAfter.After(ca.Cert.NotAfter) {
		t.Errorf("serving NotAfter %v after CA NotAfter %v", serving.Cert.NotAfter, ca.Cert.NotAfter)
	}
	if _, err := NewServing(ca, nil, t0, time.Hour); err == nil {
		t.Error("want an error without DNS names")
	}
}

func TestDefaultLifetimes(t *testing.T) {
	b, _, err := Issuer{CommonName: "ca", DNSNames: svcNames}.Plan(nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	caLife := b.CA.Cert.NotAfter.Sub(t0)
	servingLife := b.Serving.Cert.NotAfter.Sub(t0)
	if caLife != CAValidity || servingLife != ServingValidity {
		t.Errorf("lifetimes = %v / %v, want %v / %v", caLife, servingLife, CAValidity, ServingValidity)
	}
	if want := t0.Add(-backdate).Add(time.Duration(float64(ServingValidity+backdate) * RenewAtFraction)); !b.NextRenewal().Equal(want) {
		t.Errorf("NextRenewal = %v, want %v", b.NextRenewal(), want)
	}
}

func TestBundleDataRoundTrip(t *testing.T) {
	b := planned(t)
	b.PreviousCA = expiredCA(t)
	got := BundleFromData(b.Data())
	if !bytes.Equal(got.CA.CertPEM, b.CA.CertPEM) || !bytes.Equal(got.Serving.KeyPEM, b.Serving.KeyPEM) ||
		!bytes.Equal(got.PreviousCA, b.PreviousCA) {
		t.Error("bundle changed through Secret data")
	}
	broken := BundleFromData(map[string][]byte{KeyCACert: []byte("junk"), KeyPreviousCACert: b.Serving.CertPEM})
	if broken.CA != nil || broken.Serving != nil || broken.PreviousCA != nil {
		t.Errorf("unusable parts must read as missing: %+v", broken)
	}
}

func TestParseCertificate(t *testing.T) {
	if _, err := ParseCertificate([]byte("not pem")); err == nil {
		t.Error("want an error for non-PEM data")
	}
	if _, err := ParseKeyPair(planned(t).CA.CertPEM, planned(t).CA.KeyPEM); err == nil {
		t.Error("want an error for a certificate with another key")
	}
}
