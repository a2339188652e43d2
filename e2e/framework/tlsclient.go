package framework

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// VerifyChainOnly returns a client TLS configuration that verifies the server's chain
// against roots and not its host name: members' certificates name the cluster's
// Services, not pod IPs, and the suites dial pod IPs (the operator does the same, see
// internal/valkeyconn).
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
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
			return err
		},
	}
}

// ClusterTLS returns the client TLS configuration of a cluster with TLS: it trusts the
// ca.crt of the certificate the operator accepted ({cluster}-tls-accepted).
func (k *Cluster) ClusterTLS(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster) *tls.Config {
	t.Helper()
	var s corev1.Secret
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: v1alpha1.TLSSecretName(vc.Name)}, &s); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data["ca.crt"]) {
		t.Fatalf("Secret %s: ca.crt holds no certificate", s.Name)
	}
	return VerifyChainOnly(pool)
}

// AdminTLS is Admin over TLS: a connection to one member as the operator's own user.
func (k *Cluster) AdminTLS(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, addr string, cfg *tls.Config) *valkey.Client {
	t.Helper()
	var s corev1.Secret
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: v1alpha1.SystemUsersSecretName(vc.Name)}, &s); err != nil {
		t.Fatal(err)
	}
	c, err := valkey.Dial(ctx, valkey.Options{Addr: addr, Username: v1alpha1.UserOperator, Password: string(s.Data[v1alpha1.UserOperator]), TLS: cfg})
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

// StartCheckerWith starts the write-checker with options: empty Addrs are the members'
// addresses, an empty Username is the test user. Set TLS for a cluster with TLS.
func (k *Cluster) StartCheckerWith(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, o checker.Options) *checker.Checker {
	t.Helper()
	if len(o.Addrs) == 0 {
		o.Addrs = k.MemberAddrs(ctx, t, vc)
	}
	if o.Username == "" {
		o.Username, o.Password = TestUser, "any"
	}
	ch, err := checker.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// ServedCertificate opens a new TLS connection to addr (verified with cfg) and returns
// the leaf certificate the server presents.
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

// CertFingerprint is the SHA-256 of a certificate as status.tls.fingerprint (and
// `openssl x509 -noout -fingerprint -sha256`) writes it: upper-case hex pairs joined by
// colons.
func CertFingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	pairs := make([]string, 0, len(sum))
	for i := 0; i < len(h); i += 2 {
		pairs = append(pairs, h[i:i+2])
	}
	return strings.Join(pairs, ":")
}
