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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// exporterImage is the redis_exporter image `make images` builds (a docker archive).
const exporterImage = "images/redis_exporter-1.86.0.tar"

// exporterBinary returns redis_exporter 1.86: $REDIS_EXPORTER, or the binary extracted
// from the image in the project cache ($LOCALKUBE_CACHE or ../../../.cache); the spec
// is skipped without either.
func exporterBinary() string {
	GinkgoHelper()
	if p := os.Getenv("REDIS_EXPORTER"); p != "" {
		return p
	}
	cache := os.Getenv("LOCALKUBE_CACHE")
	if cache == "" {
		cache = filepath.Join("..", "..", "..", ".cache")
	}
	archive := filepath.Join(cache, exporterImage)
	if _, err := os.Stat(archive); err != nil {
		Skip(fmt.Sprintf("redis_exporter not available: set REDIS_EXPORTER or run `make images` to build %s (%v)", archive, err))
	}
	out := filepath.Join(GinkgoT().TempDir(), "redis_exporter")
	Expect(extractExporter(archive, out)).To(Succeed(), "extract redis_exporter from %s", archive)
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

func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// scrape returns the value of redis_up.
func scrape(url string) string {
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

// redis_exporter 1.86 as _exporter with the password file this controller publishes and
// its config scraping off: it is up, nothing is refused (the server's ACL LOG and the
// exporter's log), and a rotation (both passwords, new file, GET /-/reload,
// old password removed) keeps it up.
var _ = It("keeps redis_exporter up as _exporter through a password rotation", func() {
	bin := exporterBinary()
	s := startServer()
	loadFile(s, NewFile(SystemUsers(testPasswords, s.Version), nil))
	admin := s.Dial(GinkgoTB())
	Expect(admin.Do(suite.Step(), "ACL", "LOG", "RESET")).Error().NotTo(HaveOccurred())
	pwFile := filepath.Join(GinkgoT().TempDir(), "exporter-passwords.json")
	oldPW := testPasswords[v1alpha1.UserExporter][0]
	Expect(os.WriteFile(pwFile, v1alpha1.ExporterPasswordFile(oldPW, s.Port), 0o600)).To(Succeed())
	var m map[string]string
	Expect(json.Unmarshal(v1alpha1.ExporterPasswordFile(oldPW, s.Port), &m)).To(Succeed())
	Expect(m).To(HaveKeyWithValue(fmt.Sprintf("redis://_exporter@127.0.0.1:%d", s.Port), oldPW), "password file")

	port := freePort()
	cmd := exec.Command(bin, "-redis.addr", fmt.Sprintf("redis://127.0.0.1:%d", s.Port), "-redis.user", v1alpha1.UserExporter,
		"-redis.password-file", pwFile, "-web.listen-address", fmt.Sprintf("127.0.0.1:%d", port),
		// As the node-controller runs it (REDIS_EXPORTER_CONFIG_COMMAND): no CONFIG GET.
		"-config-command", "-")
	logFile := filepath.Join(GinkgoT().TempDir(), "exporter.log")
	lf, err := os.Create(logFile)
	Expect(err).NotTo(HaveOccurred())
	cmd.Stdout, cmd.Stderr = lf, lf
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); lf.Close() })
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	Eventually(scrape).WithArguments(metrics).WithTimeout(10*time.Second).WithPolling(50*time.Millisecond).
		Should(Equal("1"), "the exporter reports redis_up 1")
	scrape(metrics)
	for _, entry := range aclLogUsers(s) {
		Expect(entry).NotTo(HavePrefix(v1alpha1.UserExporter), "the exporter was refused")
	}
	Expect(os.ReadFile(logFile)).NotTo(ContainSubstring("NOPERM"), "exporter log")

	By("rotating: both passwords, then the new file, reload, then the old one goes")
	const newPW = "exporter-new-password-0123456789"
	both := systemPasswords{}
	for k, v := range testPasswords {
		both[k] = v
	}
	both[v1alpha1.UserExporter] = []string{oldPW, newPW}
	loadFile(s, NewFile(SystemUsers(both, s.Version), nil))
	Expect(os.WriteFile(pwFile, v1alpha1.ExporterPasswordFile(newPW, s.Port), 0o600)).To(Succeed())
	r := newTestReconciler()
	Expect(r.reloadExporter(suite.Step(), fmt.Sprintf("http://127.0.0.1:%d/-/reload", port))).To(Succeed())
	only := systemPasswords{}
	for k, v := range testPasswords {
		only[k] = v
	}
	only[v1alpha1.UserExporter] = []string{newPW}
	loadFile(s, NewFile(SystemUsers(only, s.Version), nil))
	Expect(scrape(metrics)).To(Equal("1"), "redis_up after the rotation")
	// Without the reload the exporter would have kept the old password: prove that the
	// file is not re-read per scrape.
	Expect(os.WriteFile(pwFile, v1alpha1.ExporterPasswordFile("not-the-password", s.Port), 0o600)).To(Succeed())
	Expect(scrape(metrics)).To(Equal("1"), "the exporter re-read its password file on a scrape")
})
