//go:build e2e

package tls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

// testCA is a certificate authority of the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// pem is ca.crt.
	pem []byte
}

// leafCert is a certificate with its key, in the PEM forms of tls.crt and tls.key.
type leafCert struct {
	cert    *x509.Certificate
	certPEM []byte
	keyPEM  []byte
}

func serial(t *testing.T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// newCA makes a CA valid from three days ago for a day ahead.
func newCA(t *testing.T) *testCA {
	t.Helper()
	key := newKey(t)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: "valkey e2e test CA"},
		NotBefore: now.Add(-72 * time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pemBlock("CERTIFICATE", der)}
}

// leaf signs a certificate for names allowing server and client authentication (the
// members are clients of each other on the cluster bus and for replication).
func (ca *testCA) leaf(t *testing.T, names []string, notBefore, notAfter time.Time) leafCert {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return leafCert{cert: cert, certPEM: pemBlock("CERTIFICATE", der), keyPEM: pemBlock("PRIVATE KEY", keyDER)}
}

// validLeaf signs a certificate for names valid from an hour ago for a day.
func (ca *testCA) validLeaf(t *testing.T, names []string) leafCert {
	t.Helper()
	now := time.Now()
	return ca.leaf(t, names, now.Add(-time.Hour), now.Add(24*time.Hour))
}

// secretData is the content of a certificate Secret: ca.crt, tls.crt and tls.key.
func secretData(ca *testCA, l leafCert) map[string][]byte {
	return map[string][]byte{"ca.crt": ca.pem, "tls.crt": l.certPEM, "tls.key": l.keyPEM}
}
