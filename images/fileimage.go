package images

import (
	"fmt"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// FileImage is a one-layer image made of host files: static programs, and programs of a
// Debian root file system copied with their ELF closure (the kind node image's
// control-plane images are made this way).
type FileImage struct {
	// Tags are the image's references; the first one names it.
	Tags []string
	// Config is the image configuration (entrypoint, user, environment).
	Config v1.Config
	// Files maps in-image paths to host files, copied with mode 0755.
	Files map[string]string
	// Root is a Debian root file system; the programs of FromRoot (in-root paths) are
	// copied from it with their libraries, loader and symlinks.
	Root     string
	FromRoot []string
}

// fileImageAccounts are /etc/passwd and /etc/group of a FileImage.
var fileImageAccounts = accounts{
	Passwd: "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n",
	Group:  "root:x:0:\nnogroup:x:65534:\n",
}

// WriteFileImage writes fi as a docker-archive tarball to file and returns the image ID
// (its config digest). Equal inputs give equal bytes.
func WriteFileImage(file string, fi FileImage) (string, error) {
	if len(fi.Tags) == 0 {
		return "", fmt.Errorf("image %s: no tags", file)
	}
	t := newTree()
	addBase(t, fileImageAccounts)
	paths := make([]string, 0, len(fi.Files))
	for p := range fi.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		t.file(p, fi.Files[p], 0o755)
	}
	if len(fi.FromRoot) > 0 {
		root := rootFS(fi.Root)
		closure, err := elfClosure(root, fi.FromRoot, debianLibDirs)
		if err != nil {
			return "", fmt.Errorf("image %s: %w", fi.Tags[0], err)
		}
		for _, p := range closure {
			if err := t.copyFrom(root, p); err != nil {
				return "", fmt.Errorf("image %s: %w", fi.Tags[0], err)
			}
		}
	}
	cfg := fi.Config
	if len(cfg.Env) == 0 {
		// sbin too: kube-proxy runs nft and iptables from there.
		cfg.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	id, _, err := writeImage(file, fi.Tags, cfg, t)
	return id, err
}
