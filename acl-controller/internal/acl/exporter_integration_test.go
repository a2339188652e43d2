package acl

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// exporterImage is the redis_exporter image `make images` builds (a docker archive).
const exporterImage = "images/redis_exporter-1.86.0.tar"

// exporterBinary returns redis_exporter 1.86: $REDIS_EXPORTER, or the binary extracted
// from the image in the project cache ($LOCALKUBE_CACHE or ../../../.cache).
func exporterBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("REDIS_EXPORTER"); p != "" {
		return p
	}
	cache := os.Getenv("LOCALKUBE_CACHE")
	if cache == "" {
		cache = filepath.Join("..", "..", "..", ".cache")
	}
	archive := filepath.Join(cache, exporterImage)
	if _, err := os.Stat(archive); err != nil {
		t.Skipf("redis_exporter not available: set REDIS_EXPORTER or run `make images` to build %s (%v)", archive, err)
	}
	out := filepath.Join(t.TempDir(), "redis_exporter")
	if err := extractExporter(archive, out); err != nil {
		t.Fatalf("extract redis_exporter from %s: %v", archive, err)
	}
	return out
}

// extractExporter copies usr/bin/prometheus-redis-exporter out of the image's layers.
func extractExporter(archive, out string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	outer := tar.NewReader(f)
	for {
		h, err := outer.Next()
		if err != nil {
			return fmt.Errorf("no layer holds the exporter: %w", err)
		}
		if !strings.HasSuffix(h.Name, ".tar.gz") {
			continue
		}
		found, err := extractFromLayer(outer, out)
		if err != nil || found {
			return err
		}
	}
}

func extractFromLayer(r io.Reader, out string) (bool, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return false, err
	}
	layer := tar.NewReader(gz)
	for {
		h, err := layer.Next()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if strings.TrimPrefix(h.Name, "./") != "usr/bin/prometheus-redis-exporter" {
			continue
		}
		w, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			return false, err
		}
		if _, err := io.Copy(w, layer); err != nil {
			w.Close()
			return false, err
		}
		return true, w.Close()
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// scrape returns the value of redis_up.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return "unreachable: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "redis_up "); ok {
			return v
		}
	}
	return "no redis_up"
}

// TestExporterUser runs redis_exporter 1.86 as _exporter with the password file this
// controller publishes: it is up, nothing is refused, and a rotation (both passwords,
// new file, GET /-/reload, old password removed) keeps it up.
func TestExporterUser(t *testing.T) {
	bin := exporterBinary(t)
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	sys := SystemUsers(testPasswords, s.Version)
	loadFile(t, s, NewFile(sys, nil))
	admin := s.Dial(t)
	if _, err := admin.Do(ctxT(t), "ACL", "LOG", "RESET"); err != nil {
		t.Fatal(err)
	}
	pwFile := filepath.Join(t.TempDir(), "exporter-passwords.json")
	oldPW := testPasswords[v1alpha1.UserExporter][0]
	must(t, os.WriteFile(pwFile, v1alpha1.ExporterPasswordFile(oldPW, s.Port), 0o600))
	var m map[string]string
	must(t, json.Unmarshal(v1alpha1.ExporterPasswordFile(oldPW, s.Port), &m))
	if m[fmt.Sprintf("redis://_exporter@127.0.0.1:%d", s.Port)] != oldPW {
		t.Fatalf("password file %v", m)
	}

	port := freePort(t)
	cmd := exec.Command(bin, "-redis.addr", fmt.Sprintf("redis://127.0.0.1:%d", s.Port), "-redis.user", v1alpha1.UserExporter,
		"-redis.password-file", pwFile, "-web.listen-address", fmt.Sprintf("127.0.0.1:%d", port))
	logFile := filepath.Join(t.TempDir(), "exporter.log")
	lf, err := os.Create(logFile)
	must(t, err)
	cmd.Stdout, cmd.Stderr = lf, lf
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); lf.Close() })
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	waitFor(t, 10*time.Second, "the exporter reports redis_up 1", func() bool { return scrape(t, metrics) == "1" })
	scrape(t, metrics)
	for _, entry := range aclLogUsers(t, s) {
		if strings.HasPrefix(entry, v1alpha1.UserExporter) {
			t.Errorf("the exporter was refused: %s", entry)
		}
	}
	if log, _ := os.ReadFile(logFile); strings.Contains(string(log), "NOPERM") {
		t.Errorf("exporter log has NOPERM:\n%s", log)
	}

	// Rotation: both passwords, then the new file, reload, then the old one goes.
	const newPW = "exporter-new-password-0123456789"
	both := systemPasswords{}
	for k, v := range testPasswords {
		both[k] = v
	}
	both[v1alpha1.UserExporter] = []string{oldPW, newPW}
	loadFile(t, s, NewFile(SystemUsers(both, s.Version), nil))
	must(t, os.WriteFile(pwFile, v1alpha1.ExporterPasswordFile(newPW, s.Port), 0o600))
	r := newTestReconciler(t)
	must(t, r.reloadExporter(ctxT(t), fmt.Sprintf("http://127.0.0.1:%d/-/reload", port)))
	only := systemPasswords{}
	for k, v := range testPasswords {
		only[k] = v
	}
	only[v1alpha1.UserExporter] = []string{newPW}
	loadFile(t, s, NewFile(SystemUsers(only, s.Version), nil))
	if got := scrape(t, metrics); got != "1" {
		t.Fatalf("after the rotation redis_up = %s", got)
	}
	// Without the reload the exporter would have kept the old password: prove that the
	// file is not re-read per scrape.
	must(t, os.WriteFile(pwFile, v1alpha1.ExporterPasswordFile("not-the-password", s.Port), 0o600))
	if got := scrape(t, metrics); got != "1" {
		t.Fatalf("the exporter re-read its password file on a scrape (redis_up = %s)", got)
	}
}
