package images

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
)

// newStaging creates dir as an empty usr-merged root: /usr/{bin,sbin,lib,lib64}
// and the top-level symlinks to them.
func newStaging(dir string) (rootFS, error) {
	for _, d := range mergedDirs {
		if err := os.MkdirAll(dir+"/usr"+d, 0o755); err != nil {
			return "", fmt.Errorf("create staging %s: %w", dir, err)
		}
		if err := os.Symlink("usr"+d, dir+d); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("create staging %s: %w", dir, err)
		}
	}
	return rootFS(dir), nil
}

// skipShare leaves out /usr/share, which no image needs.
func skipShare(p string) bool { return strings.HasPrefix(p, "/usr/share/") }

// extractDeb unpacks the data of the .deb at debPath into root (see untar).
func extractDeb(ctx context.Context, debPath string, root rootFS, skip func(string) bool) error {
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", debPath)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("extract %s: %w", debPath, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("extract %s: %w", debPath, err)
	}
	untarErr := untar(out, root, skip)
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("extract %s: %w: %s", debPath, err, strings.TrimSpace(stderr.String()))
	}
	if untarErr != nil {
		return fmt.Errorf("extract %s: %w", debPath, untarErr)
	}
	return nil
}

// untar unpacks a tar stream into root, a staging tree made by newStaging.
// Paths under /bin, /sbin, /lib and /lib64 land under /usr (the usr-merge
// the packages of Debian 12 still leave to their installer); parent
// symlinks are followed inside root only. Ownership is not kept; device
// files are skipped, and so are the paths skip returns true for.
func untar(r io.Reader, root rootFS, skip func(string) bool) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		name := path.Clean("/" + hdr.Name)
		if name == "/" || slices.Contains(mergedDirs, name) {
			continue
		}
		name = usrMerged(name)
		if skip != nil && skip(name) {
			continue
		}
		if err := writeTarEntry(root, name, hdr, tr); err != nil {
			return fmt.Errorf("unpack %s: %w", name, err)
		}
	}
}

// writeTarEntry writes one tar entry at the in-tree path name.
func writeTarEntry(root rootFS, name string, hdr *tar.Header, r io.Reader) error {
	parent, err := root.mkdirAll(path.Dir(name))
	if err != nil {
		return err
	}
	dst := root.host(path.Join(parent, path.Base(name)))
	mode := fs.FileMode(hdr.Mode).Perm()
	switch hdr.Typeflag {
	case tar.TypeDir:
		return mkdirMode(dst, mode, hdr.Mode&0o1000 != 0)
	case tar.TypeReg:
		return writeFile(dst, mode, r)
	case tar.TypeSymlink:
		if err := removeIfExists(dst); err != nil {
			return err
		}
		return os.Symlink(hdr.Linkname, dst)
	case tar.TypeLink:
		_, src, err := root.resolve(usrMerged(hdr.Linkname))
		if err != nil {
			return err
		}
		if err := removeIfExists(dst); err != nil {
			return err
		}
		return os.Link(root.host(src), dst)
	}
	return nil
}

// mkdirMode creates the directory dst if needed and sets its mode.
func mkdirMode(dst string, mode fs.FileMode, sticky bool) error {
	if err := os.Mkdir(dst, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if sticky {
		mode |= fs.ModeSticky
	}
	return os.Chmod(dst, mode)
}

// writeFile replaces dst by the content of r.
func writeFile(dst string, mode fs.FileMode, r io.Reader) error {
	if err := removeIfExists(dst); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

// removeIfExists removes dst unless it is missing or a directory.
func removeIfExists(dst string) error {
	fi, err := os.Lstat(dst)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", dst)
	}
	return os.Remove(dst)
}

// mkdirAll creates the in-tree directory p and its parents, following
// symlinks inside the tree, and returns p's resolved in-tree path.
func (r rootFS) mkdirAll(p string) (string, error) {
	cur := "/"
	for _, part := range strings.Split(strings.TrimPrefix(path.Clean("/"+p), "/"), "/") {
		if part == "" {
			continue
		}
		next := path.Join(cur, part)
		fi, err := os.Lstat(r.host(next))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(r.host(next), 0o755); err != nil {
				return "", err
			}
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink != 0:
			_, final, err := r.resolve(next)
			if err != nil {
				return "", err
			}
			next = final
		case !fi.IsDir():
			return "", fmt.Errorf("%s is not a directory", next)
		}
		cur = next
	}
	return cur, nil
}
