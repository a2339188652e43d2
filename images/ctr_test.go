package images

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestImportContainerd imports the Valkey 8.0 image into a throwaway
// containerd, lists it, and runs it once with runc (as the image config's
// user 999, in /data), when
// IMAGES_CONTAINERD=1 (needs root, and the network for the Build unless
// IMAGES_CACHE holds built images).
func TestImportContainerd(t *testing.T) {
	if os.Getenv("IMAGES_CONTAINERD") != "1" {
		t.Skip("set IMAGES_CONTAINERD=1 to import into a throwaway containerd")
	}
	ctx := context.Background()
	m, err := Build(ctx, Config{CacheDir: e2eCache(t), Log: t.Logf})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	img, ok := m.Valkey(8, 0)
	if !ok {
		t.Fatal("no Valkey 8.0 image")
	}
	pause, _ := m.Component(ComponentPause)
	addr := startContainerd(t)

	start := time.Now()
	if err := Import(ctx, "ctr", addr, []string{img.File, pause.File}); err != nil {
		t.Fatalf("Import: %v", err)
	}
	t.Logf("imported %s and %s in %s", img.Ref, pause.Ref, time.Since(start))

	out := ctr(t, addr, "images", "ls")
	t.Logf("ctr images ls:\n%s", out)
	for _, ref := range append(img.Tags, pause.Ref) {
		if !strings.Contains(out, ref+" ") {
			t.Errorf("ctr images ls lacks %s", ref)
		}
	}
	out = ctr(t, addr, "run", "--rm", img.Tags[1], "images-test", "sh", "-c", "valkey-server --version; id -u; pwd")
	t.Logf("ctr run: %s", out)
	if !strings.Contains(out, "v="+img.Version) || !strings.Contains(out, "999\n/data") {
		t.Errorf("ctr run output %q", out)
	}
}

// ctr runs ctr against the throwaway containerd in the k8s.io namespace.
func ctr(t *testing.T, addr string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ctr", append([]string{"-a", addr, "-n", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// startContainerd starts containerd with its own root, state, config and
// socket under a temporary directory (CRI disabled: import needs none of
// it), and stops it and unmounts everything under the directory at the end
// of the test. It returns the socket address.
func startContainerd(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "containerd.sock")
	config := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock, sock+".ttrpc", filepath.Join(dir, "opt"))
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("containerd", "--config", filepath.Join(dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start containerd: %v", err)
	}
	t.Cleanup(func() { stopContainerd(t, cmd, dir, logFile) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := exec.Command("ctr", "-a", sock, "version").Run(); err == nil {
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatal("containerd did not answer within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopContainerd stops the containerd started by startContainerd (by its
// PID only), unmounts what is left under dir and removes dir.
func stopContainerd(t *testing.T, cmd *exec.Cmd, dir string, logFile *os.File) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	_ = logFile.Close()
	if t.Failed() {
		if data, err := os.ReadFile(logFile.Name()); err == nil {
			t.Logf("containerd log:\n%s", tail(string(data), 40))
		}
	}
	for _, mp := range mountsUnder(t, dir) {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mp, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Errorf("remove %s: %v", dir, err)
	}
}

// mountsUnder returns the mount points under dir, deepest first.
func mountsUnder(t *testing.T, dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Errorf("read mounts: %v", err)
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			out = append(out, fields[4])
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}
