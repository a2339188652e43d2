package kindnode

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// epoch is the modification time of every entry, so that equal inputs give equal layers.
var epoch = time.Unix(0, 0).UTC()

// Layer is an uncompressed layer tarball with its digest (the image's diff ID).
type Layer struct {
	File   string `json:"file"`
	DiffID string `json:"diffID"`
	// Inputs is the hash of what the layer was made from.
	Inputs string `json:"inputs"`
}

// entry is one file of a layer made from a list (the kube layer).
type entry struct {
	path   string // absolute, in the image
	mode   fs.FileMode
	src    string // host file to copy
	data   []byte // inline content
	dir    bool
	target string // symlink target
}

// cachedLayer returns the layer recorded in file's stamp when it was made from inputs.
func cachedLayer(file, inputs string) (Layer, bool) {
	data, err := os.ReadFile(file + ".json")
	if err != nil {
		return Layer{}, false
	}
	var l Layer
	if json.Unmarshal(data, &l) != nil || l.Inputs != inputs || l.File != file {
		return Layer{}, false
	}
	if _, err := os.Stat(file); err != nil {
		return Layer{}, false
	}
	return l, true
}

// layerWriter writes a tar stream and hashes it.
type layerWriter struct {
	f    *os.File
	h    hashWriter
	tw   *tar.Writer
	seen map[string]bool
	// links maps a (device, inode) of a regular file with several links to the first
	// path written, so later paths become hard links.
	links map[[2]uint64]string
}

type hashWriter struct {
	w io.Writer
	h interface {
		io.Writer
		Sum([]byte) []byte
	}
}

func (h hashWriter) Write(p []byte) (int, error) {
	h.h.Write(p)
	return h.w.Write(p)
}

func newLayerWriter(file string) (*layerWriter, error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(file + ".tmp")
	if err != nil {
		return nil, err
	}
	lw := &layerWriter{f: f, h: hashWriter{w: f, h: sha256.New()}, seen: map[string]bool{}, links: map[[2]uint64]string{}}
	lw.tw = tar.NewWriter(lw.h)
	return lw, nil
}

// finish closes the tar stream, moves the file in place and records its stamp.
func (lw *layerWriter) finish(file, inputs string) (Layer, error) {
	if err := lw.tw.Close(); err != nil {
		lw.f.Close()
		return Layer{}, err
	}
	if err := lw.f.Close(); err != nil {
		return Layer{}, err
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		return Layer{}, err
	}
	l := Layer{File: file, DiffID: "sha256:" + hex.EncodeToString(lw.h.h.Sum(nil)), Inputs: inputs}
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return Layer{}, err
	}
	return l, os.WriteFile(file+".json", append(data, '\n'), 0o644)
}

// abort removes a half-written layer.
func (lw *layerWriter) abort() {
	lw.f.Close()
	os.Remove(lw.f.Name())
}

func header(name string, fi fs.FileInfo) *tar.Header {
	h := &tar.Header{Name: name, ModTime: epoch, Format: tar.FormatPAX, Mode: int64(fi.Mode().Perm())}
	if fi.Mode()&fs.ModeSetuid != 0 {
		h.Mode |= 0o4000
	}
	if fi.Mode()&fs.ModeSetgid != 0 {
		h.Mode |= 0o2000
	}
	if fi.Mode()&fs.ModeSticky != 0 {
		h.Mode |= 0o1000
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		h.Uid, h.Gid = int(st.Uid), int(st.Gid)
	}
	return h
}

// parents writes the missing parent directories of p (root-owned, 0755).
func (lw *layerWriter) parents(p string) error {
	var missing []string
	for d := path.Dir(p); d != "/" && !lw.seen[d]; d = path.Dir(d) {
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		lw.seen[d] = true
		h := &tar.Header{Name: strings.TrimPrefix(d, "/") + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}
		if err := lw.tw.WriteHeader(h); err != nil {
			return err
		}
	}
	return nil
}

// addDir writes the tree under the host directory dir as the image path prefix, sorted,
// keeping owners, modes, symlinks, hard links and device nodes; sockets and fifos are
// left out, and so are the contents of the image paths in skip.
func (lw *layerWriter) addDir(dir, prefix string, skip map[string]bool) error {
	if err := lw.parents(path.Join(prefix, "x")); err != nil {
		return err
	}
	var walk func(host, img string) error
	walk = func(host, img string) error {
		entries, err := os.ReadDir(host)
		if err != nil {
			return err
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		for _, n := range names {
			hp, ip := filepath.Join(host, n), path.Join(img, n)
			fi, err := os.Lstat(hp)
			if err != nil {
				return err
			}
			if err := lw.addHost(hp, ip, fi); err != nil {
				return fmt.Errorf("%s: %w", ip, err)
			}
			if fi.IsDir() && !skip[ip] {
				if err := walk(hp, ip); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(dir, path.Clean("/"+prefix))
}

// addHost writes the host file hp as the image path ip.
func (lw *layerWriter) addHost(hp, ip string, fi fs.FileInfo) error {
	name := strings.TrimPrefix(ip, "/")
	h := header(name, fi)
	lw.seen[ip] = true
	switch m := fi.Mode(); {
	case m.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
		return lw.tw.WriteHeader(h)
	case m&fs.ModeSymlink != 0:
		target, err := os.Readlink(hp)
		if err != nil {
			return err
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, target
		return lw.tw.WriteHeader(h)
	case m&fs.ModeDevice != 0:
		st := fi.Sys().(*syscall.Stat_t)
		h.Typeflag = tar.TypeBlock
		if m&fs.ModeCharDevice != 0 {
			h.Typeflag = tar.TypeChar
		}
		h.Devmajor, h.Devminor = int64(unixMajor(st.Rdev)), int64(unixMinor(st.Rdev))
		return lw.tw.WriteHeader(h)
	case m.IsRegular():
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			key := [2]uint64{st.Dev, st.Ino}
			if first, ok := lw.links[key]; ok {
				h.Typeflag, h.Linkname = tar.TypeLink, strings.TrimPrefix(first, "/")
				return lw.tw.WriteHeader(h)
			}
			lw.links[key] = ip
		}
		h.Typeflag, h.Size = tar.TypeReg, fi.Size()
		return lw.copyFile(h, hp)
	}
	return nil // sockets and fifos
}

func (lw *layerWriter) copyFile(h *tar.Header, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := lw.tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.Copy(lw.tw, f)
	if err != nil {
		return err
	}
	if n != h.Size {
		return fmt.Errorf("%s changed while copying", src)
	}
	return nil
}

// addEntries writes a list of entries (root-owned), sorted by path.
func (lw *layerWriter) addEntries(es []entry) error {
	sort.Slice(es, func(i, j int) bool { return es[i].path < es[j].path })
	for _, e := range es {
		if err := lw.parents(e.path); err != nil {
			return err
		}
		lw.seen[e.path] = true
		name := strings.TrimPrefix(e.path, "/")
		h := &tar.Header{Name: name, Mode: int64(e.mode.Perm()), ModTime: epoch, Format: tar.FormatPAX}
		var err error
		switch {
		case e.dir:
			h.Typeflag, h.Name = tar.TypeDir, name+"/"
			err = lw.tw.WriteHeader(h)
		case e.target != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.target, 0o777
			err = lw.tw.WriteHeader(h)
		case e.src != "":
			fi, serr := os.Stat(e.src)
			if serr != nil {
				return serr
			}
			h.Typeflag, h.Size = tar.TypeReg, fi.Size()
			err = lw.copyFile(h, e.src)
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
			if err = lw.tw.WriteHeader(h); err == nil {
				_, err = lw.tw.Write(e.data)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", e.path, err)
		}
	}
	return nil
}

func unixMajor(dev uint64) uint32 { return uint32((dev>>8)&0xfff) | uint32((dev>>32)&^0xfff) }
func unixMinor(dev uint64) uint32 { return uint32(dev&0xff) | uint32((dev>>12)&^0xff) }
