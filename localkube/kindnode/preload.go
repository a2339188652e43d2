package kindnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// preloadConfig is the configuration of the containerd that imports the control-plane
// images into the preload layer's root: no CRI, sockets and state in a temporary folder.
const preloadConfig = `version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images", "io.containerd.podsandbox.controller.v1.podsandbox"]
[grpc]
  address = %q
[ttrpc]
  address = %q
[debug]
  address = ""
[metrics]
  address = ""
`

func (b *builder) preloadInputs() string {
	h := sha256.New()
	fmt.Fprintf(h, "builder %s\ncontainerd %s\n", builderVersion, ContainerdVersion)
	for _, img := range b.cpImages {
		fmt.Fprintf(h, "%s %s\n", img.Ref, img.ID)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// buildPreload imports the control-plane images into a containerd root that becomes
// the node's /var/lib/containerd, with the node's snapshotter (overlayfs), and writes
// that root as the preload layer.
func (b *builder) buildPreload(ctx context.Context) error {
	file, inputs := b.c.dir("preload.tar"), b.preloadInputs()
	if l, ok := cachedLayer(file, inputs); ok {
		b.preload = l
		return nil
	}
	root := b.c.dir("preload")
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "kind-preload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	sock := filepath.Join(tmp, "containerd.sock")
	cfg := filepath.Join(tmp, "config.toml")
	data := fmt.Sprintf(preloadConfig, root, filepath.Join(tmp, "state"), sock, sock+".ttrpc")
	if err := os.WriteFile(cfg, []byte(data), 0o644); err != nil {
		return err
	}
	logFile, err := os.Create(b.c.dir("preload-containerd.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(b.toolBin("containerd"), "--config", cfg)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start containerd: %w", err)
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
			return nil
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("containerd did not stop within 30s")
		}
	}
	defer func() { _ = stop() }()
	ctr := func(args ...string) error {
		full := append([]string{"--address", sock, "--namespace", "k8s.io"}, args...)
		out, err := exec.CommandContext(ctx, b.toolBin("ctr"), full...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ctr %s: %w\n%s", strings.Join(args, " "), err, tail(out, 10))
		}
		return nil
	}
	if err := waitSocket(ctx, sock, 30*time.Second); err != nil {
		return fmt.Errorf("containerd (log %s): %w", logFile.Name(), err)
	}
	for _, img := range b.cpImages {
		b.c.Log("preload %s", img.Ref)
		if err := ctr("images", "import", "--local", "--platform", "linux/amd64", "--snapshotter", "overlayfs",
			"--discard-unpacked-layers", img.File); err != nil {
			return err
		}
	}
	// The pause image stays when the kubelet collects unused images.
	if err := ctr("images", "label", PauseImage, "io.cri-containerd.pinned=pinned"); err != nil {
		return err
	}
	if err := stop(); err != nil {
		return err
	}
	lw, err := newLayerWriter(file)
	if err != nil {
		return err
	}
	if err := lw.addDir(root, "/var/lib/containerd", nil); err != nil {
		lw.abort()
		return err
	}
	b.preload, err = lw.finish(file, inputs)
	return err
}

// waitSocket waits until a unix socket accepts connections... as far as its file
// existing tells: containerd creates it once it serves.
func waitSocket(ctx context.Context, sock string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(sock); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("no socket %s after %s", sock, timeout)
}
