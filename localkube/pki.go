package localkube

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// authority is a CA that signs the cluster's certificates.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// certSpec describes one leaf certificate.
type certSpec struct {
	file   string // base name: <file>.crt and <file>.key
	cn     string
	orgs   []string
	dns    []string
	ips    []string
	server bool
	client bool
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func serial() (*big.Int, error) { return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62)) }

// newAuthority creates a self-signed CA and writes <dir>/<name>.crt and .key.
func newAuthority(dir, name string) (*authority, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	if err := writePair(dir, name, der, key); err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key}, nil
}

// issue signs a leaf certificate and writes it next to its key.
func (a *authority) issue(dir string, s certSpec) error {
	key, err := newKey()
	if err != nil {
		return err
	}
	sn, err := serial()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: s.cn, Organization: s.orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		DNSNames:     s.dns,
	}
	for _, ip := range s.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	if s.server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if s.client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return fmt.Errorf("sign %s: %w", s.file, err)
	}
	return writePair(dir, s.file, der, key)
}

func writePair(dir, name string, der []byte, key crypto.Signer) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", der, 0o644); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, name+".key"), "PRIVATE KEY", keyDER, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}

// writeServiceAccountKeys writes the RSA key pair that signs service account tokens.
func writeServiceAccountKeys(dir string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	priv, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "sa.key"), "PRIVATE KEY", priv, 0o600); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pub, 0o644)
}

// clientIdentity is a certificate-authenticated user of the API server with its kubeconfig.
type clientIdentity struct {
	name string
	cn   string
	orgs []string
}

// writePKI creates every certificate and kubeconfig of the cluster under RunDir/pki and
// RunDir/kubeconfigs.
func (c Config) writePKI() error {
	dir := c.path("pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := newAuthority(dir, "ca")
	if err != nil {
		return err
	}
	frontCA, err := newAuthority(dir, "front-proxy-ca")
	if err != nil {
		return err
	}
	if err := frontCA.issue(dir, certSpec{file: "front-proxy-client", cn: "front-proxy-client", client: true}); err != nil {
		return err
	}
	if err := writeServiceAccountKeys(dir); err != nil {
		return err
	}
	if err := ca.issue(dir, certSpec{
		file: "apiserver", cn: "kube-apiserver", server: true,
		dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc." + ClusterDomain},
		ips: []string{"127.0.0.1", BridgeIP, KubeServiceIP},
	}); err != nil {
		return err
	}
	if err := ca.issue(dir, certSpec{file: "registry", cn: "localkube-registry", server: true,
		dns: []string{"localhost"}, ips: []string{BridgeIP, "127.0.0.1"}}); err != nil {
		return err
	}
	if err := ca.issue(dir, certSpec{file: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client",
		orgs: []string{"system:masters"}, client: true}); err != nil {
		return err
	}
	ids := []clientIdentity{
		{name: "admin", cn: "kubernetes-admin", orgs: []string{"system:masters"}},
		{name: "controller-manager", cn: "system:kube-controller-manager"},
		{name: "scheduler", cn: "system:kube-scheduler"},
		{name: "kube-proxy", cn: "system:kube-proxy"},
		{name: "coredns", cn: "localkube:coredns", orgs: []string{"system:masters"}},
		{name: "provisioner", cn: "localkube:provisioner", orgs: []string{"system:masters"}},
	}
	for _, n := range c.nodes() {
		ids = append(ids, clientIdentity{name: "kubelet-" + n.Name(), cn: "system:node:" + n.Name(), orgs: []string{"system:nodes"}})
	}
	kdir := c.path("kubeconfigs")
	if err := os.MkdirAll(kdir, 0o700); err != nil {
		return err
	}
	for _, id := range ids {
		if err := ca.issue(dir, certSpec{file: id.name, cn: id.cn, orgs: id.orgs, client: true}); err != nil {
			return err
		}
		if err := c.writeKubeconfig(filepath.Join(kdir, id.name+".kubeconfig"), id.name); err != nil {
			return err
		}
	}
	// The admin kubeconfig is also published at a stable, documented path.
	return c.writeKubeconfig(c.Kubeconfig(), "admin")
}

// writeKubeconfig writes a kubeconfig with embedded certificates for identity name.
func (c Config) writeKubeconfig(path, name string) error {
	read := func(f string) (string, error) {
		b, err := os.ReadFile(c.path("pki", f))
		return string(b), err
	}
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	crt, err := read(name + ".crt")
	if err != nil {
		return err
	}
	key, err := read(name + ".key")
	if err != nil {
		return err
	}
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: localkube
  cluster:
    server: https://%s:%d
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: localkube
  context: {cluster: localkube, user: %s}
current-context: localkube
`, BridgeIP, APIServerPort, b64(ca), name, b64(crt), b64(key), name)
	return os.WriteFile(path, []byte(body), 0o600)
}
