package images

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
)

// epoch is the modification time of every entry and the creation time of
// every image, so that equal inputs give equal digests.
var epoch = time.Unix(0, 0).UTC()

// entryKind is the type of a tree entry.
type entryKind int

const (
	kindDir entryKind = iota
	kindFile
	kindSymlink
)

// entry is one file of an image's single layer.
type entry struct {
	kind     entryKind
	mode     fs.FileMode // permission bits, including sticky
	uid, gid int
	src      string // host file to copy (kindFile, when data is nil)
	data     []byte // inline content (kindFile)
	target   string // kindSymlink
}

// tree is the content of an image's single layer, keyed by absolute path.
// Parent directories are added as root-owned 0755 directories.
type tree map[string]*entry

// mergedDirs are the top-level directories that are symlinks into /usr in
// every tree (the usr-merged layout of Debian 12 and later).
var mergedDirs = []string{"/bin", "/sbin", "/lib", "/lib64"}

// newTree returns a tree holding the usr-merge symlinks and their targets.
func newTree() tree {
	t := tree{"/usr": {kind: kindDir, mode: 0o755}}
	for _, d := range mergedDirs {
		t[d] = &entry{kind: kindSymlink, mode: 0o777, target: "usr" + d}
		t["/usr"+d] = &entry{kind: kindDir, mode: 0o755}
	}
	return t
}

// dir adds a directory. Like the other adders it stores paths below the
// usr-merge symlinks under /usr.
func (t tree) dir(p string, mode fs.FileMode, uid, gid int) {
	p = usrMerged(p)
	t.parents(p)
	t[p] = &entry{kind: kindDir, mode: mode, uid: uid, gid: gid}
}

// file adds a copy of the host file src.
func (t tree) file(p, src string, mode fs.FileMode) {
	p = usrMerged(p)
	t.parents(p)
	t[p] = &entry{kind: kindFile, mode: mode, src: src}
}

// content adds a file with the given content.
func (t tree) content(p string, data []byte, mode fs.FileMode) {
	p = usrMerged(p)
	t.parents(p)
	t[p] = &entry{kind: kindFile, mode: mode, data: data}
}

// symlink adds a symbolic link.
func (t tree) symlink(p, target string) {
	p = usrMerged(p)
	t.parents(p)
	t[p] = &entry{kind: kindSymlink, mode: 0o777, target: target}
}

// parents adds the missing parent directories of p.
func (t tree) parents(p string) {
	for d := path.Dir(p); d != "/"; d = path.Dir(d) {
		if _, ok := t[d]; ok {
			continue
		}
		t[d] = &entry{kind: kindDir, mode: 0o755}
	}
}

// copyFrom adds the in-tree path p of root: a symlink as a symlink, a
// regular file as a copy with its permission bits (setuid/setgid dropped).
// Paths through usr-merge symlinks are stored under /usr.
func (t tree) copyFrom(root rootFS, p string) error {
	p = path.Clean("/" + p)
	if slices.Contains(mergedDirs, p) {
		return nil // the tree has its own usr-merge links
	}
	src := root.host(p)
	fi, err := os.Lstat(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", p, err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return fmt.Errorf("copy %s: %w", p, err)
		}
		t.symlink(p, target)
	case fi.Mode().IsRegular():
		t.file(p, src, fi.Mode().Perm())
	case fi.IsDir():
		t.dir(p, fi.Mode().Perm(), 0, 0)
	default:
		return fmt.Errorf("copy %s: unsupported file type %v", p, fi.Mode().Type())
	}
	return nil
}

// usrMerged maps /bin, /sbin, /lib and /lib64 paths to their /usr place.
func usrMerged(p string) string {
	p = path.Clean("/" + p)
	for _, d := range mergedDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return "/usr" + p
		}
	}
	return p
}

// writeTar writes the tree as an uncompressed tar stream, sorted by path so
// that equal trees give equal bytes.
func (t tree) writeTar(w io.Writer) error {
	paths := make([]string, 0, len(t))
	for p := range t {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	tw := tar.NewWriter(w)
	for _, p := range paths {
		if err := t[p].write(tw, strings.TrimPrefix(p, "/")); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("close tar: %w", err)
	}
	return nil
}

// write writes one entry to tw under name.
func (e *entry) write(tw *tar.Writer, name string) error {
	hdr := &tar.Header{
		Name:    name,
		Mode:    int64(e.mode.Perm()),
		Uid:     e.uid,
		Gid:     e.gid,
		ModTime: epoch,
		Format:  tar.FormatPAX,
	}
	if e.mode&fs.ModeSticky != 0 {
		hdr.Mode |= 0o1000
	}
	switch e.kind {
	case kindDir:
		hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
		return tw.WriteHeader(hdr)
	case kindSymlink:
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.target
		return tw.WriteHeader(hdr)
	}
	hdr.Typeflag = tar.TypeReg
	if e.data != nil || e.src == "" {
		hdr.Size = int64(len(e.data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(e.data)
		return err
	}
	return e.writeFile(tw, hdr)
}

// writeFile writes a host file's content under hdr.
func (e *entry) writeFile(tw *tar.Writer, hdr *tar.Header) error {
	f, err := os.Open(e.src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	hdr.Size = fi.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err != nil {
		return err
	}
	if n != hdr.Size {
		return fmt.Errorf("%s changed while copying", e.src)
	}
	return nil
}
