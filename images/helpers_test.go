package images

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// loadImage reads the single image of a docker-archive tarball.
func loadImage(t *testing.T, file string) v1.Image {
	t.Helper()
	img, err := tarball.ImageFromPath(file, nil)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	return img
}

// repoTags returns the RepoTags of a docker-archive tarball.
func repoTags(t *testing.T, file string) []string {
	t.Helper()
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(file) })
	if err != nil {
		t.Fatalf("read manifest of %s: %v", file, err)
	}
	var tags []string
	for _, d := range m {
		tags = append(tags, d.RepoTags...)
	}
	slices.Sort(tags)
	return tags
}

// listTar returns the paths ("/usr/bin/x") and type flags of a tar stream.
func listTar(r io.Reader) (map[string]byte, error) {
	out := map[string]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out[path.Clean("/"+hdr.Name)] = hdr.Typeflag
	}
}

// unpackImage extracts the image's filesystem into a new directory.
func unpackImage(t *testing.T, img v1.Image) rootFS {
	t.Helper()
	root, err := newStaging(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	if err := untar(rc, root, nil); err != nil {
		t.Fatalf("unpack image: %v", err)
	}
	return root
}

// layerFiles lists the paths (with a leading slash) and types of the image's
// filesystem.
func layerFiles(t *testing.T, img v1.Image) map[string]byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files, err := listTar(rc)
	if err != nil {
		t.Fatalf("list image: %v", err)
	}
	return files
}

// chroot returns a command running args inside root as uid:gid, in /data
// when it exists, with the images' PATH.
func chroot(ctx context.Context, root rootFS, uid, gid uint32, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Path = args[0]
	if !strings.Contains(args[0], "/") {
		cmd.Path = "/usr/bin/" + args[0]
	}
	cmd.Env = append([]string{pathEnv}, env...)
	cmd.Dir = "/"
	if fi, err := os.Stat(root.host("/data")); err == nil && fi.IsDir() {
		cmd.Dir = "/data"
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     string(root),
		Credential: &syscall.Credential{Uid: uid, Gid: gid},
		Setpgid:    true,
	}
	return cmd
}

// runIn runs args in root as valkey (999) and returns the combined output.
func runIn(t *testing.T, root rootFS, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := chroot(ctx, root, 999, 999, nil, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s in %s: %v\n%s", strings.Join(args, " "), root, err, out)
	}
	return string(out)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitPort waits until something listens on the loopback port.
func waitPort(t *testing.T, port int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on 127.0.0.1:%d", port)
}

// startIn starts a long-running command in root as valkey (999) and stops
// it with SIGTERM at the end of the test.
func startIn(t *testing.T, root rootFS, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := chroot(context.Background(), root, 999, 999, env, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", args[0], err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", strings.Join(args, " "), out.String())
		}
	})
	return cmd
}

// assertConfig checks the image config fields the pods rely on.
func assertConfig(t *testing.T, img v1.Image, user string, cmd, entrypoint []string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Architecture != "amd64" || cf.OS != "linux" {
		t.Errorf("platform %s/%s, want linux/amd64", cf.OS, cf.Architecture)
	}
	if cf.Config.User != user {
		t.Errorf("User %q, want %q", cf.Config.User, user)
	}
	if !slices.Equal(cf.Config.Cmd, cmd) || !slices.Equal(cf.Config.Entrypoint, entrypoint) {
		t.Errorf("Cmd %q Entrypoint %q, want %q %q", cf.Config.Cmd, cf.Config.Entrypoint, cmd, entrypoint)
	}
}

// assertFiles checks that the image has the given paths, with the given
// type ('0' file, '2' symlink, '5' directory) when not 0.
func assertFiles(t *testing.T, files map[string]byte, want map[string]byte) {
	t.Helper()
	for p, typ := range want {
		got, ok := files[path.Clean(p)]
		if !ok {
			t.Errorf("image lacks %s", p)
			continue
		}
		if typ != 0 && got != typ {
			t.Errorf("%s has type %q, want %q", p, got, typ)
		}
	}
}

// execOutput runs a host command and returns its combined output.
func execOutput(ctx context.Context, bin string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out), err
}
