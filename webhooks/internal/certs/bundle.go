package certs

import (
	"fmt"
	"time"
)

// Keys of the Secret the rotator keeps. tls.crt and tls.key make it a valid
// kubernetes.io/tls Secret; the CA's key stays in it so that any replica can renew.
const (
	KeyServingCert = "tls.crt"
	KeyServingKey  = "tls.key"
	KeyCACert      = "ca.crt"
	KeyCAKey       = "ca.key"
	// KeyPreviousCACert holds the CA replaced by the last CA rotation until it
	// expires, so that servers still presenting a certificate it signed stay trusted.
	KeyPreviousCACert = "ca-previous.crt"
)

// Bundle is the content of the Secret: the CA, the serving certificate and, after a
// CA rotation, the previous CA certificate.
type Bundle struct {
	CA         *KeyPair
	Serving    *KeyPair
	PreviousCA []byte
}

// Issuer describes what the rotator issues.
type Issuer struct {
	// CommonName of the CA.
	CommonName string
	// DNSNames of the serving certificate.
	DNSNames []string
	// CAValidity and ServingValidity are the lifetimes (CAValidity and
	// ServingValidity when zero).
	CAValidity, ServingValidity time.Duration
}

// BundleFromData reads a Bundle from Secret data; parts that are missing or do not
// parse are left nil, to be issued again.
func BundleFromData(data map[string][]byte) *Bundle {
	b := &Bundle{}
	if ca, err := ParseKeyPair(data[KeyCACert], data[KeyCAKey]); err == nil {
		b.CA = ca
	}
	if serving, err := ParseKeyPair(data[KeyServingCert], data[KeyServingKey]); err == nil {
		b.Serving = serving
	}
	if prev, err := ParseCertificate(data[KeyPreviousCACert]); err == nil && prev.IsCA {
		b.PreviousCA = data[KeyPreviousCACert]
	}
	return b
}

// Data is the Secret data of the bundle.
func (b *Bundle) Data() map[string][]byte {
	data := map[string][]byte{
		KeyCACert:      b.CA.CertPEM,
		KeyCAKey:       b.CA.KeyPEM,
		KeyServingCert: b.Serving.CertPEM,
		KeyServingKey:  b.Serving.KeyPEM,
	}
	if len(b.PreviousCA) > 0 {
		data[KeyPreviousCACert] = b.PreviousCA
	}
	return data
}

// TrustPEM is the caBundle for the webhook configuration: the CA and, during a CA
// rotation, the previous one.
func (b *Bundle) TrustPEM() []byte {
	return joinPEM(b.CA.CertPEM, b.PreviousCA)
}

// NextRenewal is when the bundle next needs work: the earliest renewal time of the CA
// and the serving certificate, or the expiry of the previous CA.
func (b *Bundle) NextRenewal() time.Time {
	next := RenewAt(b.Serving.Cert)
	if ca := RenewAt(b.CA.Cert); ca.Before(next) {
		next = ca
	}
	if prev, err := ParseCertificate(b.PreviousCA); err == nil && prev.NotAfter.Before(next) {
		next = prev.NotAfter
	}
	return next
}

// Plan returns the bundle the Secret should hold at now, starting from current (nil
// when there is no Secret yet), and whether it differs from current. A CA that is
// missing, broken or due for renewal is replaced (the old one is kept as the previous
// CA), and so is a serving certificate that is missing, signed by another CA, issued
// for other names or due; a previous CA is dropped once expired.
func (is Issuer) Plan(current *Bundle, now time.Time) (*Bundle, bool, error) {
	next := &Bundle{}
	if current != nil {
		*next = *current
	}
	changed := false
	if !usableCA(next.CA, now) {
		ca, err := NewCA(is.CommonName, now, orDefault(is.CAValidity, CAValidity))
		if err != nil {
			return nil, false, fmt.Errorf("issue CA: %w", err)
		}
		next.PreviousCA = nil
		if next.CA != nil && now.Before(next.CA.Cert.NotAfter) {
			next.PreviousCA = next.CA.CertPEM
		}
		next.CA, next.Serving, changed = ca, nil, true
	}
	if !usableServing(next.Serving, next.CA, is.DNSNames, now) {
		serving, err := NewServing(next.CA, is.DNSNames, now, orDefault(is.ServingValidity, ServingValidity))
		if err != nil {
			return nil, false, fmt.Errorf("issue serving certificate: %w", err)
		}
		next.Serving, changed = serving, true
	}
	if expired(next.PreviousCA, now) {
		next.PreviousCA, changed = nil, true
	}
	return next, changed, nil
}

// expired reports whether a PEM certificate is present and past its NotAfter (or
// unreadable).
func expired(certPEM []byte, now time.Time) bool {
	if len(certPEM) == 0 {
		return false
	}
	cert, err := ParseCertificate(certPEM)
	return err != nil || !now.Before(cert.NotAfter)
}

// orDefault returns d, or def when d is zero.
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
