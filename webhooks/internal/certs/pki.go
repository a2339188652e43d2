package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"
)

// Lifetimes of what the rotator issues, and when it renews them.
const (
	// CAValidity is the lifetime of the self-signed CA.
	CAValidity = 10 * 365 * 24 * time.Hour
	// ServingValidity is the lifetime of the serving certificate.
	ServingValidity = 365 * 24 * time.Hour
	// RenewAtFraction of a certificate's lifetime, it is replaced.
	RenewAtFraction = 0.8
	// backdate is subtracted from NotBefore to tolerate clock skew.
	backdate = time.Hour
)

// KeyPair is a certificate with its private key, parsed and in PEM.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA creates a self-signed CA valid from now (less a backdate) for validity.
func NewCA(commonName string, now time.Time, validity time.Duration) (*KeyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return issue(tmpl, nil)
}

// NewServing creates a serving certificate for dnsNames signed by ca, valid for
// validity but never beyond the CA.
func NewServing(ca *KeyPair, dnsNames []string, now time.Time, validity time.Duration) (*KeyPair, error) {
	if len(dnsNames) == 0 {
		return nil, errors.New("issue serving certificate: no DNS name")
	}
	notAfter := now.Add(validity)
	if ca.Cert.NotAfter.Before(notAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: dnsNames[0]},
		DNSNames:    dnsNames,
		NotBefore:   now.Add(-backdate),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	return issue(tmpl, ca)
}

// issue generates a key and signs tmpl with parent (self-signed when parent is nil).
func issue(tmpl *x509.Certificate, parent *KeyPair) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	signerCert, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		return nil, fmt.Errorf("sign certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return ParseKeyPair(
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
}

// ParseKeyPair parses a PEM certificate (the first of a chain) and its private key,
// and checks that they belong together.
func ParseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parse key pair: %w", err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("parse key pair: the private key cannot sign")
	}
	return &KeyPair{Cert: pair.Leaf, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// ParseCertificate parses the first PEM certificate of data.
func ParseCertificate(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("parse certificate: no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	return cert, nil
}

// RenewAt is the time a certificate is due for replacement: RenewAtFraction of the
// way from NotBefore to NotAfter.
func RenewAt(cert *x509.Certificate) time.Time {
	lifetime := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotBefore.Add(time.Duration(float64(lifetime) * RenewAtFraction))
}

// usableCA reports whether ca is a CA that needs no renewal at now.
func usableCA(ca *KeyPair, now time.Time) bool {
	return ca != nil && ca.Cert.IsCA && now.Before(RenewAt(ca.Cert)) && !now.Before(ca.Cert.NotBefore)
}

// usableServing reports whether serving is signed by ca, covers exactly dnsNames and
// needs no renewal at now.
func usableServing(serving, ca *KeyPair, dnsNames []string, now time.Time) bool {
	if serving == nil || ca == nil || !now.Before(RenewAt(serving.Cert)) {
		return false
	}
	if !slices.Equal(sortedCopy(serving.Cert.DNSNames), sortedCopy(dnsNames)) {
		return false
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	_, err := serving.Cert.Verify(x509.VerifyOptions{
		Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err == nil
}

// sortedCopy returns a sorted copy of names.
func sortedCopy(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return out
}

// joinPEM concatenates PEM blocks, each ending with a newline.
func joinPEM(blocks ...[]byte) []byte {
	var b bytes.Buffer
	for _, block := range blocks {
		if len(block) == 0 {
			continue
		}
		b.Write(block)
		if !bytes.HasSuffix(block, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
