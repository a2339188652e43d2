package valkey

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// VerifyChainOnly returns a client TLS configuration that verifies the server's
// certificate chain against roots, for server authentication, but not its host name:
// members' certificates name the cluster's Services, and the operator dials pod IPs.
func VerifyChainOnly(roots *x509.CertPool) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, //nolint:gosec // the chain is verified in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		},
	}
}

// ServedCertificate opens a new TLS connection to addr, verified with cfg, and returns
// the leaf certificate the server presents. The handshake is bounded by timeout.
func ServedCertificate(ctx context.Context, addr string, cfg *tls.Config, timeout time.Duration) (*x509.Certificate, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := tls.Dialer{Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil, fmt.Errorf("TLS handshake with %s: no certificate", addr)
	}
	return certs[0], nil
}

// Fingerprint is the SHA-256 of a certificate as `openssl x509 -noout -fingerprint
// -sha256` writes it: upper-case hex pairs joined by colons.
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	pairs := make([]string, 0, len(sum))
	for i := 0; i < len(h); i += 2 {
		pairs = append(pairs, h[i:i+2])
	}
	return strings.Join(pairs, ":")
}
