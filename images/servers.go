package images

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// ValkeyServer is the valkey-server of one Valkey image, unpacked with its ELF closure
// into a directory of this host so that it runs here whatever its Debian suite.
//
// A server of trixie or sid needs a newer glibc than this host's (bookworm). Command
// runs it through the dynamic loader of its own suite, taken from its closure, told to
// read libraries from the closure only (--library-path, --inhibit-cache: the host's
// ld.so.cache is not read): no chroot, no privileges, and every library the server
// loads is the one its image has. Only the kernel is the host's.
type ValkeyServer struct {
	// Version is Valkey's, e.g. "8.1.1".
	Version string `json:"version"`
	// Package is the Debian package and its exact version, as in Image.Package.
	Package string `json:"package"`
	// Suite is the Debian suite of the package.
	Suite string `json:"suite"`
	// Root is the directory holding the server and its libraries at their paths.
	Root string `json:"root"`
	// Command runs the server: append its arguments (a config file, --version).
	Command []string `json:"command"`
}

// StageValkeyServers puts the valkey-server of every Valkey image (the same packages,
// resolved and cached as Build does, under c.CacheDir/debian) into dir/valkey-<version>/,
// oldest version first. Only Config.CacheDir, Refresh and Log are read.
func StageValkeyServers(ctx context.Context, c Config, dir string) ([]ValkeyServer, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("stage servers: %w", err)
	}
	b, err := newBuilder(c)
	if err != nil {
		return nil, err
	}
	defer b.close()
	if err := b.resolve(ctx); err != nil {
		return nil, err
	}
	var out []ValkeyServer
	for _, v := range valkeySources {
		s, err := b.stageServer(ctx, v.dist.name, v.suite, dir)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// stageServer copies one dist's valkey-server and its closure into dir.
func (b *builder) stageServer(ctx context.Context, dist, suite, dir string) (ValkeyServer, error) {
	const bin = "/usr/bin/valkey-server"
	d, err := b.pkg(dist, "valkey-server")
	if err != nil {
		return ValkeyServer{}, err
	}
	st, err := b.staging(ctx, dist)
	if err != nil {
		return ValkeyServer{}, err
	}
	paths, err := st.closure(ctx, []string{bin})
	if err != nil {
		return ValkeyServer{}, err
	}
	version := upstreamVersion(d.Version)
	root := filepath.Join(dir, "valkey-"+version)
	if err := os.RemoveAll(root); err != nil {
		return ValkeyServer{}, fmt.Errorf("stage server %s: %w", version, err)
	}
	r, err := newStaging(root)
	if err != nil {
		return ValkeyServer{}, err
	}
	for _, p := range paths {
		if err := copyPath(st.root, r, p); err != nil {
			return ValkeyServer{}, fmt.Errorf("stage server %s: %w", version, err)
		}
	}
	info, err := readELF(r.host(bin))
	if err != nil {
		return ValkeyServer{}, err
	}
	_, loader, err := r.resolve(info.interp)
	if err != nil {
		return ValkeyServer{}, fmt.Errorf("stage server %s: loader: %w", version, err)
	}
	libs := make([]string, 0, len(debianLibDirs))
	for _, l := range debianLibDirs {
		libs = append(libs, r.host(l))
	}
	b.log("images: staged valkey-server %s in %s", version, root)
	return ValkeyServer{
		Version: version, Package: "valkey-server=" + d.Version, Suite: suite, Root: root,
		Command: []string{r.host(loader), "--inhibit-cache", "--library-path", strings.Join(libs, ":"), r.host(bin)},
	}, nil
}

// copyPath copies the in-tree path p of from (a symlink as a symlink, a file with its
// permission bits) to the same path of to, under /usr for the usr-merged directories.
func copyPath(from, to rootFS, p string) error {
	p = path.Clean("/" + p)
	if p == "/" || slices.Contains(mergedDirs, p) {
		return nil // the root has its own usr-merge links
	}
	src, dst := from.host(p), to.host(usrMerged(p))
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		_ = os.Remove(dst)
		return os.Symlink(target, dst)
	case fi.IsDir():
		return os.MkdirAll(dst, fi.Mode().Perm())
	case fi.Mode().IsRegular():
		return copyFile(src, dst, fi.Mode().Perm())
	}
	return fmt.Errorf("copy %s: unsupported file type %v", p, fi.Mode().Type())
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
