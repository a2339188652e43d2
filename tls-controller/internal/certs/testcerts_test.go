package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// testCA issues certificates for tests with crypto/x509.
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
	PEM  []byte
}

// caOpts tune a test CA.
type caOpts struct {
	notBefore, notAfter time.Time
	// eku restricts what the CA may issue for (none: anything).
	eku []x509.ExtKeyUsage
}

// newTestCA creates a self-signed CA valid from an hour ago for a year.
func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	return newCAWith(t, name, nil, caOpts{})
}

func newCAWith(t testing.TB, name string, parent *testCA, o caOpts) *testCA {
	t.Helper()
	key := ecKey(t)
	if o.notBefore.IsZero() {
		o.notBefore = time.Now().Add(-time.Hour)
	}
	if o.notAfter.IsZero() {
		o.notAfter = time.Now().Add(365 * 24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: name},
		NotBefore: o.notBefore, NotAfter: o.notAfter, ExtKeyUsage: o.eku,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	signer, signKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signer, signKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, key.Public(), signKey)
	if err != nil {
		t.Fatalf("create CA %s: %v", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, PEM: pemBlock("CERTIFICATE", der)}
}

// intermediate issues an intermediate CA.
func (ca *testCA) intermediate(t testing.TB, o caOpts) *testCA {
	t.Helper()
	return newCAWith(t, "intermediate", ca, o)
}

// leafOpts tune an issued certificate. Zero values give a certificate for server and
// client authentication, valid from an hour ago for 90 days, with an ECDSA key.
type leafOpts struct {
	dns                 []string
	ips                 []net.IP
	notBefore, notAfter time.Time
	eku                 []x509.ExtKeyUsage
	noEKU               bool
	ku                  x509.KeyUsage
	rsa                 bool
	// keyForm is the PEM form of the key: "pkcs8" (default), "pkcs1" (RSA) or "sec1"
	// (ECDSA).
	keyForm string
}

// issue returns a certificate and its key in PEM.
func (ca *testCA) issue(t testing.TB, o leafOpts) (certPEM, keyPEM []byte) {
	t.Helper()
	if o.notBefore.IsZero() {
		o.notBefore = time.Now().Add(-time.Hour)
	}
	if o.notAfter.IsZero() {
		o.notAfter = time.Now().Add(90 * 24 * time.Hour)
	}
	if o.eku == nil && !o.noEKU {
		o.eku = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	if o.ku == 0 {
		o.ku = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	}
	var key crypto.Signer = ecKey(t)
	if o.rsa {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		key = k
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: "valkey"}, DNSNames: o.dns, IPAddresses: o.ips,
		NotBefore: o.notBefore, NotAfter: o.notAfter, KeyUsage: o.ku, ExtKeyUsage: o.eku,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatalf("issue certificate: %v", err)
	}
	return pemBlock("CERTIFICATE", der), keyPEMOf(t, key, o.keyForm)
}

func keyPEMOf(t testing.TB, key crypto.Signer, form string) []byte {
	t.Helper()
	switch form {
	case "pkcs1":
		return pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key.(*rsa.PrivateKey)))
	case "sec1":
		der, err := x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
		if err != nil {
			t.Fatal(err)
		}
		return pemBlock("EC PRIVATE KEY", der)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pemBlock("PRIVATE KEY", der)
}

func ecKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// secretData is the data of a certificate Secret.
func secretData(ca, cert, key []byte) map[string][]byte {
	return map[string][]byte{KeyCA: ca, KeyCert: cert, KeyKey: key}
}

// concat joins PEM blobs.
func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
