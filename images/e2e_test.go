package images

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// e2eCache returns the cache directory of the network tests: IMAGES_CACHE,
// or a new temporary directory (a cold build).
func e2eCache(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("IMAGES_CACHE"); dir != "" {
		return dir
	}
	return t.TempDir()
}

// logRecorder collects Build's log lines.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) logf(t *testing.T) func(string, ...any) {
	return func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		t.Log(line)
		l.mu.Lock()
		l.lines = append(l.lines, line)
		l.mu.Unlock()
	}
}

// TestBuildE2E runs the real Build (Debian mirror needed) when IMAGES_E2E=1,
// then checks a warm Build and runs every image's software in a chroot of
// the image: versions, busybox applets, Valkey 9's shutdown-on-sigterm
// failover, and the exporter logging in with user and password.
func TestBuildE2E(t *testing.T) {
	if os.Getenv("IMAGES_E2E") != "1" {
		t.Skip("set IMAGES_E2E=1 to build the images from Debian (network)")
	}
	ctx := context.Background()
	cache := e2eCache(t)
	var cold logRecorder
	start := time.Now()
	m, err := Build(ctx, Config{CacheDir: cache, Log: cold.logf(t)})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	t.Logf("first Build: %s", time.Since(start))

	var warm logRecorder
	start = time.Now()
	m2, err := Build(ctx, Config{CacheDir: cache, Log: warm.logf(t)})
	warmTime := time.Since(start)
	if err != nil {
		t.Fatalf("warm Build: %v", err)
	}
	t.Logf("warm Build: %s", warmTime)
	if warmTime > 3*time.Second {
		t.Errorf("warm Build took %s, want < 3s", warmTime)
	}
	for _, l := range warm.lines {
		if strings.Contains(l, "apt-get") || strings.Contains(l, "built ") {
			t.Errorf("warm Build did work: %s", l)
		}
	}
	if !slices.EqualFunc(m.Images, m2.Images, func(a, b Image) bool { return a.ID == b.ID }) {
		t.Errorf("warm Build changed images")
	}
	read, err := ReadManifest(cache)
	if err != nil || len(read.Images) != len(m.Images) {
		t.Fatalf("ReadManifest: %d images, %v", len(read.Images), err)
	}
	for _, img := range m.Images {
		t.Logf("%-45s %-10s %-45s %-20s %5.1f MB %s", img.Ref, img.Version, img.Package, img.Suite, float64(img.Size)/1e6, img.ID)
	}

	valkeys := m.ValkeyImages()
	if len(valkeys) != 3 {
		t.Fatalf("%d Valkey images, want 3", len(valkeys))
	}
	if img, ok := m.Valkey(8, 0); !ok || img.Version != "8.0.1" || img.Suite != "bookworm-backports" {
		t.Errorf("Valkey(8, 0) = %+v", img)
	}
	for _, img := range valkeys {
		t.Run("valkey-"+img.Version, func(t *testing.T) { checkValkeyImage(t, img) })
	}
	exporter, ok := m.Component(ComponentExporter)
	if !ok {
		t.Fatal("no exporter image")
	}
	t.Run("exporter", func(t *testing.T) { checkExporterImage(t, exporter, valkeys[len(valkeys)-1]) })
	toolbox, _ := m.Component(ComponentToolbox)
	t.Run("toolbox", func(t *testing.T) { checkToolboxImage(t, toolbox) })
}

// checkValkeyImage checks a Valkey image's config and runs its server.
func checkValkeyImage(t *testing.T, img Image) {
	v1img := loadImage(t, img.File)
	assertConfig(t, v1img, "999:999", []string{"valkey-server"}, nil)
	cf, _ := v1img.ConfigFile()
	if cf.Config.WorkingDir != "/data" || !slices.Contains(cf.Config.Env, pathEnv) || len(cf.Config.ExposedPorts) != 2 {
		t.Errorf("config %+v", cf.Config)
	}
	wantTags := []string{"docker.io/valkey/valkey:" + img.Version, "docker.io/valkey/valkey:" + majorMinor(img.Version)}
	slices.Sort(wantTags)
	if got := repoTags(t, img.File); !slices.Equal(got, wantTags) {
		t.Errorf("tags %v, want %v", got, wantTags)
	}
	assertFiles(t, layerFiles(t, v1img), map[string]byte{
		"/usr/bin/valkey-server": tar.TypeSymlink, "/usr/bin/valkey-cli": tar.TypeReg, "/usr/bin/busybox": tar.TypeReg,
		"/lib64": tar.TypeSymlink, "/usr/lib64/ld-linux-x86-64.so.2": tar.TypeSymlink, "/data": tar.TypeDir,
		"/etc/passwd": tar.TypeReg, "/etc/group": tar.TypeReg, "/tmp": tar.TypeDir,
	})
	root := unpackImage(t, v1img)

	// The loader of the image, with the image's libraries only.
	out, err := runLoader(root, "/usr/bin/valkey-server", "--version")
	if err != nil || !strings.Contains(out, "v="+img.Version) {
		t.Errorf("ld.so valkey-server --version: %v\n%s", err, out)
	}
	if out := runIn(t, root, "valkey-server", "--version"); !strings.Contains(out, "v="+img.Version) {
		t.Errorf("valkey-server --version in chroot = %q", out)
	}
	if out := runIn(t, root, "valkey-cli", "--version"); !strings.Contains(out, img.Version) {
		t.Errorf("valkey-cli --version = %q", out)
	}
	checkBusybox(t, root)

	port := freePort(t)
	args := []string{"valkey-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}
	major := parseVersion(img.Version)[0]
	if major >= 9 {
		args = append(args, "--shutdown-on-sigterm", "failover")
	}
	startIn(t, root, nil, args...)
	waitPort(t, port)
	cli := func(a ...string) string {
		return strings.TrimSpace(runIn(t, root, append([]string{"valkey-cli", "-p", strconv.Itoa(port)}, a...)...))
	}
	if got := cli("ping"); got != "PONG" {
		t.Errorf("PING = %q", got)
	}
	if got := cli("info", "server"); !strings.Contains(got, "valkey_version:"+img.Version) {
		t.Errorf("INFO server lacks valkey_version:%s", img.Version)
	}
	got := cli("config", "get", "shutdown-on-sigterm")
	t.Logf("CONFIG GET shutdown-on-sigterm: %q", got)
	if major >= 9 && !strings.Contains(got, "failover") {
		t.Errorf("CONFIG GET shutdown-on-sigterm = %q, want failover", got)
	}
	setFailover := cli("config", "set", "shutdown-on-sigterm", "failover")
	t.Logf("Valkey %s: CONFIG SET shutdown-on-sigterm failover -> %q", img.Version, setFailover)
}

// runLoader runs bin through the image's dynamic loader with the image's
// library directories only (no chroot).
func runLoader(root rootFS, bin string, args ...string) (string, error) {
	libPath := root.host("/usr/lib/x86_64-linux-gnu") + ":" + root.host("/usr/lib")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmdArgs := append([]string{"--library-path", libPath, root.host(bin)}, args...)
	out, err := execOutput(ctx, root.host("/lib64/ld-linux-x86-64.so.2"), cmdArgs...)
	return out, err
}

// checkBusybox checks that every applet link of the image works.
func checkBusybox(t *testing.T, root rootFS) {
	t.Helper()
	list := runIn(t, root, "busybox", "--list")
	for _, a := range busyboxApplets {
		if !slices.Contains(strings.Fields(list), a) {
			t.Errorf("busybox has no applet %s", a)
		}
	}
	out := runIn(t, root, "sh", "-c", "echo hi | grep -c hi; id -u; test -d /data && timeout 5 sleep 0; nc --help 2>&1 | head -1; wget --help 2>&1 | head -1; ls -ld /tmp")
	if !strings.HasPrefix(out, "1\n999\n") || !strings.Contains(out, "drwxrwxrwt") {
		t.Errorf("busybox shell check:\n%s", out)
	}
}

// checkExporterImage runs the exporter against a Valkey server that needs a
// user and password, given through REDIS_USER and REDIS_PASSWORD.
func checkExporterImage(t *testing.T, img, valkey Image) {
	v1img := loadImage(t, img.File)
	assertConfig(t, v1img, "999:999", nil, []string{"/redis_exporter"})
	root := unpackImage(t, v1img)
	out := runIn(t, root, "/redis_exporter", "--version")
	if !strings.Contains(out, img.Version) {
		t.Errorf("redis_exporter --version = %q", out)
	}
	help, _ := chroot(context.Background(), root, 999, 999, nil, "/redis_exporter", "--help").CombinedOutput()
	for _, flag := range []string{"-redis.addr", "-redis.user", "-redis.password", "-redis.password-file", "-web.listen-address"} {
		if !strings.Contains(string(help), flag+" ") && !strings.Contains(string(help), flag+"\n") {
			t.Errorf("--help lacks %s", flag)
		}
	}

	vroot := unpackImage(t, loadImage(t, valkey.File))
	vport := freePort(t)
	startIn(t, vroot, nil, "valkey-server", "--port", strconv.Itoa(vport), "--bind", "127.0.0.1", "--save", "",
		"--requirepass", "admin-secret", "--user", "metrics", "on", ">metrics-secret", "+@all", "~*")
	waitPort(t, vport)

	for _, tc := range []struct {
		password string
		up       string
	}{{"metrics-secret", "redis_up 1"}, {"wrong", "redis_up 0"}} {
		eport := freePort(t)
		startIn(t, root, []string{
			"REDIS_ADDR=redis://127.0.0.1:" + strconv.Itoa(vport), "REDIS_USER=metrics", "REDIS_PASSWORD=" + tc.password,
		}, "/redis_exporter", "--web.listen-address", "127.0.0.1:"+strconv.Itoa(eport))
		waitPort(t, eport)
		metrics := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", eport))
		if !strings.Contains(metrics, tc.up+"\n") {
			t.Errorf("password %q: /metrics lacks %q", tc.password, tc.up)
		}
		if tc.up == "redis_up 1" {
			for _, line := range strings.Split(metrics, "\n") {
				if strings.HasPrefix(line, "redis_instance_info") {
					t.Logf("exporter %s on Valkey %s: %s", img.Version, valkey.Version, line)
					if !strings.Contains(line, `valkey_version="`+valkey.Version+`"`) {
						t.Errorf("redis_instance_info lacks valkey_version=%q", valkey.Version)
					}
				}
			}
		}
	}
}

// checkToolboxImage checks the client image's valkey-cli and shell.
func checkToolboxImage(t *testing.T, img Image) {
	v1img := loadImage(t, img.File)
	assertConfig(t, v1img, "999:999", []string{"sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"}, nil)
	root := unpackImage(t, v1img)
	if out := runIn(t, root, "valkey-cli", "--version"); !strings.Contains(out, img.Version) {
		t.Errorf("valkey-cli --version = %q", out)
	}
	checkBusybox(t, root)
}

// httpGet returns the body of a GET.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(body)
}
