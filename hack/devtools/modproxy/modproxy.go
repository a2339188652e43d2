// Package modproxy writes a Go module proxy in the file:// layout (GOPROXY=file://DIR)
// that serves modules of the workspace at one version, each zipped from its folder as a
// proxy serves the tag <dir>/v<VERSION> of the repository. A consumer pointed at it sees
// what a consumer of a release sees: go.mod files whose replace lines do not count, and
// siblings that must resolve from the proxy too.
package modproxy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"

	"github.com/valkey-operator/valkey-operator/hack/devtools/modsync"
)

// Write writes, under dir, each module of mods at version from its folder under root:
// <path>/@v/list, <version>.info, .mod and .zip.
func Write(root, dir, version string, mods []modsync.Module) error {
	for _, m := range mods {
		if err := writeModule(filepath.Join(root, m.Dir), dir, module.Version{Path: m.Path, Version: version}); err != nil {
			return fmt.Errorf("publish %s: %w", m.Dir, err)
		}
	}
	return nil
}

func writeModule(src, dir string, mv module.Version) error {
	escPath, err := module.EscapePath(mv.Path)
	if err != nil {
		return err
	}
	escVersion, err := module.EscapeVersion(mv.Version)
	if err != nil {
		return err
	}
	vdir := filepath.Join(dir, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, "list"), []byte(mv.Version+"\n"), 0o644); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{mv.Version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, escVersion+".info"), info, 0o644); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, escVersion+".mod"), gomod, 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(vdir, escVersion+".zip"))
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(f, mv, src); err != nil {
		f.Close()
		return fmt.Errorf("zip %s: %w", src, err)
	}
	return f.Close()
}
