package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// Keys of a certificate Secret: the user's and the operator's copy.
const (
	KeyCA   = "ca.crt"
	KeyCert = "tls.crt"
	KeyKey  = "tls.key"
)

// secretKeys are the keys a certificate Secret must hold, in the order they are reported
// and hashed.
var secretKeys = []string{KeyCA, KeyCert, KeyKey}

// Refusal says why a certificate Secret is not used. Reason is the TLSReady reason.
type Refusal struct {
	Reason  string
	Message string
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Message }

func refuse(reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Certificate is a parsed certificate Secret. It never holds the private key.
type Certificate struct {
	// Leaf is the first certificate of tls.crt; Intermediates are the others.
	Leaf          *x509.Certificate
	Intermediates []*x509.Certificate
	// Roots are the certificates of ca.crt (one, or several during a CA change).
	Roots []*x509.Certificate
	// Fingerprint is the SHA-256 of the leaf, as `openssl x509 -fingerprint -sha256`
	// prints it.
	Fingerprint string
	// Revision identifies the content of the three keys.
	Revision string
}

// Verdict is the outcome of Check: the parsed certificate when it could be read, the
// client names it does not cover, and the refusal when a check failed.
type Verdict struct {
	Cert         *Certificate
	MissingNames []string
	Refusal      *Refusal
}

// Accepted reports whether every check passed.
func (v Verdict) Accepted() bool { return v.Refusal == nil && v.Cert != nil }

// Check runs every check on the data of a certificate Secret at time now: the keys are
// there, they parse, the key belongs to the certificate, the certificate is valid now,
// its chain verifies against ca.crt, it allows server and client authentication, and
// which of names it does not cover (a warning, not a refusal).
func Check(data map[string][]byte, names []string, now time.Time) Verdict {
	cert, ref := Parse(data)
	if ref != nil {
		return Verdict{Cert: cert, Refusal: ref}
	}
	v := Verdict{Cert: cert}
	for _, check := range []func(*Certificate, time.Time) *Refusal{checkValidity, checkChain, checkUsage} {
		if ref := check(cert, now); ref != nil {
			v.Refusal = ref
			return v
		}
	}
	v.MissingNames = MissingNames(cert.Leaf, names)
	return v
}

// Parse reads the three keys of a certificate Secret and checks that the key belongs to
// the certificate. It checks neither time, chain nor usage: the operator's copy is
// described with it even after it expired.
func Parse(data map[string][]byte) (*Certificate, *Refusal) {
	if missing := missingKeys(data); len(missing) > 0 {
		return nil, refuse(v1alpha1.ReasonKeyMissing, "the Secret has no %s (it needs %s)",
			joinWords(missing), strings.Join(secretKeys, ", "))
	}
	chain, err := parseCertificates(data[KeyCert])
	if err != nil {
		return nil, refuse(v1alpha1.ReasonMalformed, "%s: %v", KeyCert, err)
	}
	roots, err := parseCertificates(data[KeyCA])
	if err != nil {
		return nil, refuse(v1alpha1.ReasonMalformed, "%s: %v", KeyCA, err)
	}
	c := &Certificate{Leaf: chain[0], Intermediates: chain[1:], Roots: roots,
		Fingerprint: valkey.Fingerprint(chain[0]), Revision: Revision(data)}
	key, err := parsePrivateKey(data[KeyKey])
	if err != nil {
		return c, refuse(v1alpha1.ReasonMalformed, "%s: %v", KeyKey, err)
	}
	if !publicKeysEqual(c.Leaf.PublicKey, key.Public()) {
		return c, refuse(v1alpha1.ReasonKeyMismatch, "%s is not the private key of the certificate in %s (fingerprint %s)",
			KeyKey, KeyCert, c.Fingerprint)
	}
	return c, nil
}

// missingKeys lists the required keys that are absent or empty.
func missingKeys(data map[string][]byte) []string {
	var out []string
	for _, k := range secretKeys {
		if len(data[k]) == 0 {
			out = append(out, k)
		}
	}
	return out
}

// joinWords joins a list as "a", "a and b" or "a, b and c".
func joinWords(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// parseCertificates reads every PEM CERTIFICATE block of b, in order.
func parseCertificates(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return out, nil
}

// parsePrivateKey reads the first PEM private key of b, in PKCS #8, PKCS #1 or SEC 1
// form: the forms valkey-server reads without a password.
func parsePrivateKey(b []byte) (crypto.Signer, error) {
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("no PEM private key found")
		}
		if !strings.HasSuffix(block.Type, "PRIVATE KEY") {
			continue
		}
		if block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] != "" {
			return nil, errors.New("the private key is encrypted; the servers need it unencrypted")
		}
		return privateKeyFromDER(block.Bytes)
	}
}

func privateKeyFromDER(der []byte) (crypto.Signer, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		s, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("unsupported private key type %T", k)
		}
		return s, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("the private key is neither PKCS #8, PKCS #1 nor SEC 1")
}

// publicKeysEqual compares two public keys of the types crypto/x509 parses.
func publicKeysEqual(a, b crypto.PublicKey) bool {
	switch k := a.(type) {
	case *rsa.PublicKey:
		return k.Equal(b)
	case *ecdsa.PublicKey:
		return k.Equal(b)
	case ed25519.PublicKey:
		return k.Equal(b)
	}
	return false
}

// checkValidity refuses a leaf that has expired or is not valid yet.
func checkValidity(c *Certificate, now time.Time) *Refusal {
	switch {
	case now.Before(c.Leaf.NotBefore):
		return refuse(v1alpha1.ReasonNotYetValid, "the certificate (fingerprint %s) is valid only from %s",
			c.Fingerprint, formatTime(c.Leaf.NotBefore))
	case now.After(c.Leaf.NotAfter):
		return refuse(v1alpha1.ReasonExpired, "the certificate (fingerprint %s) expired on %s",
			c.Fingerprint, formatTime(c.Leaf.NotAfter))
	}
	return nil
}

// verifyOptions verifies c's chain against its roots at now for the given usages.
func (c *Certificate) verifyOptions(now time.Time, usages ...x509.ExtKeyUsage) x509.VerifyOptions {
	return x509.VerifyOptions{
		Roots:         certPool(c.Roots),
		Intermediates: certPool(c.Intermediates),
		CurrentTime:   now,
		KeyUsages:     usages,
	}
}

func certPool(certs []*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

// checkChain refuses a certificate whose chain does not verify against ca.crt.
func checkChain(c *Certificate, now time.Time) *Refusal {
	_, err := c.Leaf.Verify(c.verifyOptions(now, x509.ExtKeyUsageAny))
	if err == nil {
		return nil
	}
	var inv x509.CertificateInvalidError
	if errors.As(err, &inv) && inv.Reason == x509.Expired {
		return refuse(v1alpha1.ReasonExpired, "a certificate of the chain is outside its validity period: %v", err)
	}
	return refuse(v1alpha1.ReasonChainInvalid, "%s does not verify against %s: %v", KeyCert, KeyCA, err)
}

// checkUsage refuses a certificate that does not allow both server and client
// authentication (members are clients of each other on the cluster bus and for
// replication), or whose key usage forbids signatures (TLS 1.3 handshakes sign).
func checkUsage(c *Certificate, now time.Time) *Refusal {
	var missing []string
	for _, u := range []struct {
		usage x509.ExtKeyUsage
		name  string
	}{{x509.ExtKeyUsageServerAuth, "server authentication"}, {x509.ExtKeyUsageClientAuth, "client authentication"}} {
		if _, err := c.Leaf.Verify(c.verifyOptions(now, u.usage)); err != nil {
			missing = append(missing, u.name)
		}
	}
	if len(missing) > 0 {
		return refuse(v1alpha1.ReasonUsageInvalid, "the certificate (or its chain) does not allow %s; members need both server and client authentication",
			joinWords(missing))
	}
	if ku := c.Leaf.KeyUsage; ku != 0 && ku&x509.KeyUsageDigitalSignature == 0 {
		return refuse(v1alpha1.ReasonUsageInvalid, "the certificate's key usage lacks digitalSignature, which TLS handshakes need")
	}
	return nil
}

// MissingNames returns the names leaf does not cover (wildcards are honoured).
func MissingNames(leaf *x509.Certificate, names []string) []string {
	var out []string
	for _, n := range names {
		if leaf.VerifyHostname(n) != nil {
			out = append(out, n)
		}
	}
	return out
}

// Revision identifies the content of a certificate Secret's three keys: the first 16 hex
// digits of a SHA-256 over each key's name, length and value.
func Revision(data map[string][]byte) string {
	h := sha256.New()
	for _, k := range secretKeys {
		v := data[k]
		h.Write([]byte(k + "\x00" + strconv.Itoa(len(v)) + "\x00"))
		h.Write(v)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// formatTime prints a time for conditions and events (UTC, to the second).
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
