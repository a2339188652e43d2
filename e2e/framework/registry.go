package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/localkube"
)

// Registry is a real OCI registry (the Distribution registry of Debian's docker-registry
// package) serving HTTPS at localkube.RegistryAddress on the node bridge, where every
// node's containerd pulls from, trusting the cluster's CA.
type Registry struct {
	// Address is host:port.
	Address string
	// CABundle is a PEM file with the system's CAs and the cluster's: give it to clients
	// as SSL_CERT_FILE (Go programs, helm among them, read it) so they need no flag.
	CABundle string
	// Log is the registry's log file.
	Log string
}

// StartRegistry starts an empty registry for the running test and stops it at its end.
// Only the local provider's nodes are set up to pull from it.
func (k *Cluster) StartRegistry(ctx context.Context, t *testing.T) *Registry {
	t.Helper()
	if k.Provider.ProviderName() != ProviderLocal {
		t.Skipf("the %s provider's nodes are not set up to pull from a registry on the host (the local provider's are)", k.Provider.ProviderName())
	}
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		t.Fatalf("docker-registry (Debian package docker-registry) is not installed: run make deps: %v", err)
	}
	lk := k.Paths.localkubeConfig()
	cert, key := lk.RegistryCert()
	dir := t.TempDir()
	config := fmt.Sprintf(`version: 0.1
log: {level: info, formatter: text}
storage:
  filesystem: {rootdirectory: %q}
  delete: {enabled: true}
http:
  addr: %q
  tls: {certificate: %q, key: %q}
`, filepath.Join(dir, "data"), localkube.RegistryAddress, cert, key)
	configFile := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &Registry{Address: localkube.RegistryAddress, CABundle: filepath.Join(dir, "ca-bundle.pem"), Log: filepath.Join(dir, "registry.log")}
	pool := writeCABundle(t, r.CABundle, lk.CACert())

	logFile, err := os.Create(r.Log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", configFile)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start docker-registry: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			if b, err := os.ReadFile(r.Log); err == nil {
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				t.Logf("registry log (last %d lines of %s):\n%s", min(len(lines), 40), r.Log, strings.Join(lines[max(0, len(lines)-40):], "\n"))
			}
		}
	})

	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("https://" + r.Address + "/v2/")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		select {
		case <-done:
			b, _ := os.ReadFile(r.Log)
			t.Fatalf("docker-registry exited: %s", b)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry at %s not serving after 30 s: %v", r.Address, err)
		}
	}
	t.Logf("registry serving at https://%s (CA bundle %s)", r.Address, r.CABundle)
	return r
}

// Env returns the environment for a client of the registry: SSL_CERT_FILE.
func (r *Registry) Env() []string { return []string{"SSL_CERT_FILE=" + r.CABundle} }

// writeCABundle writes the system's CA certificates and the extra CA file into file, and
// returns a pool of them.
func writeCABundle(t *testing.T, file, extra string) *x509.CertPool {
	t.Helper()
	var bundle []byte
	for _, sys := range []string{"/etc/ssl/certs/ca-certificates.crt"} {
		if b, err := os.ReadFile(sys); err == nil {
			bundle = append(bundle, b...)
			bundle = append(bundle, '\n')
		}
	}
	ca, err := os.ReadFile(extra)
	if err != nil {
		t.Fatalf("the cluster's CA: %v", err)
	}
	bundle = append(bundle, ca...)
	if err := os.WriteFile(file, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("no certificate in %s", extra)
	}
	return pool
}
