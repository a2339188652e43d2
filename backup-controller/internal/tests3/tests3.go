// Package tests3 runs a real S3-compatible server for the backup-controller's tests:
// versitygw over a temporary directory on 127.0.0.1, optionally with TLS.
//
// The binary is $VERSITYGW, hack/tools/bin/versitygw of the repository (hack/deps.sh
// installs it), or versitygw on PATH.
package tests3

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/objstore"
)

// Root credentials of every server.
const (
	AccessKey = "test-access"
	SecretKey = "test-secret-key"
	Bucket    = "backups"
)

// Server is one running versitygw.
type Server struct {
	Endpoint string
	// CA is the PEM certificate the server's is signed with (TLS only).
	CA  []byte
	Dir string
	cmd *exec.Cmd
}

// Policy is the endpoint policy that lets a client reach the server: the operator's
// default refuses the loopback, so the allow-list names 127.0.0.1 alone.
func (s *Server) Policy() validation.EndpointPolicy {
	return validation.EndpointPolicy{Allowed: validation.EndpointAllowList{
		Networks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}}
}

// Config returns the objstore configuration of the test bucket, with Policy.
func (s *Server) Config() objstore.Config {
	return objstore.Config{Bucket: Bucket, Endpoint: s.Endpoint, ForcePathStyle: true,
		AccessKeyID: AccessKey, SecretAccessKey: SecretKey, CABundle: s.CA, Policy: s.Policy()}
}

// Stop kills the server.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// Binary finds versitygw, failing the test when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("VERSITYGW"); b != "" {
		return b
	}
	dir, _ := os.Getwd()
	for {
		p := filepath.Join(dir, "hack", "tools", "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	t.Fatal("versitygw is not installed: run hack/deps.sh test (or set VERSITYGW)")
	return ""
}

// Start runs a server with the test bucket; withTLS serves HTTPS with a fresh CA.
func Start(t testing.TB, withTLS bool) *Server {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "data", Bucket), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{"--access", AccessKey, "--secret", SecretKey, "--port", addr, "--quiet"}
	s := &Server{Endpoint: "http://" + addr, Dir: filepath.Join(root, "data")}
	client := http.DefaultClient
	if withTLS {
		cert, key, ca := selfSigned(t, root)
		args = append(args, "--cert", cert, "--key", key)
		s.Endpoint, s.CA = "https://"+addr, ca
		client = TLSClient(t, ca)
	}
	args = append(args, "posix", "--sidecar", filepath.Join(root, "meta"), s.Dir)
	if err := os.MkdirAll(filepath.Join(root, "meta"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(Binary(t), args...)
	s.cmd.Stdout, s.cmd.Stderr = os.Stderr, os.Stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get(s.Endpoint)
		if err == nil {
			resp.Body.Close()
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw on %s did not answer: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TLSClient is an HTTP client trusting ca.
func TLSClient(t testing.TB, ca []byte) *http.Client {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("bad CA")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig.RootCAs = pool
	return &http.Client{Transport: tr}
}

// selfSigned writes a CA-signed certificate for 127.0.0.1 and returns the files and
// the CA's PEM.
func selfSigned(t testing.TB, dir string) (certFile, keyFile string, caPEM []byte) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test S3 CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}
