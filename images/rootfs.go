package images

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxSymlinkHops bounds symlink resolution, like the kernel's MAXSYMLINKS.
const maxSymlinkHops = 40

// rootFS is a directory on the host that stands for the root of another
// filesystem (a staging tree or an extracted image). Paths given to its
// methods are absolute paths inside that filesystem ("/usr/lib/...");
// symlinks are followed inside the tree and can never leave it.
type rootFS string

// host returns the host path of the in-tree path p.
func (r rootFS) host(p string) string {
	return filepath.Join(string(r), filepath.FromSlash(path.Clean("/"+p)))
}

// resolve follows every symlink on the way to p inside the tree. It returns
// the in-tree paths of the symlinks met (in order) and the final path, which
// is not a symlink. ".." and absolute targets are interpreted relative to the
// tree's root, as a chroot would.
func (r rootFS) resolve(p string) (links []string, final string, err error) {
	p = path.Clean("/" + p)
	for hops := 0; hops <= maxSymlinkHops; hops++ {
		next, link, err := r.resolveOnce(p)
		if err != nil {
			return nil, "", err
		}
		if link == "" {
			return links, p, nil
		}
		links = append(links, link)
		p = next
	}
	return nil, "", fmt.Errorf("resolve %s: too many levels of symbolic links", p)
}

// resolveOnce walks p component by component and replaces the first symlink
// it meets by its target. It returns the rewritten path and the symlink's
// path, or p and "" when no component of p is a symlink.
func (r rootFS) resolveOnce(p string) (next, link string, err error) {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	for i, part := range parts {
		if part == "" {
			continue
		}
		candidate := path.Join(cur, part)
		fi, err := os.Lstat(r.host(candidate))
		if err != nil {
			return "", "", fmt.Errorf("resolve %s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = candidate
			continue
		}
		target, err := os.Readlink(r.host(candidate))
		if err != nil {
			return "", "", fmt.Errorf("resolve %s: %w", p, err)
		}
		if !path.IsAbs(target) {
			target = path.Join(cur, target)
		}
		rest := append([]string{"/", target}, parts[i+1:]...)
		return path.Join(rest...), candidate, nil
	}
	return p, "", nil
}

// exists reports whether p resolves to an existing file inside the tree.
func (r rootFS) exists(p string) bool {
	_, final, err := r.resolve(p)
	if err != nil {
		return false
	}
	_, err = os.Stat(r.host(final))
	return err == nil
}
