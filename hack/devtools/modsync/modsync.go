// Package modsync keeps the workspace's go.mod files consistent with what their code
// imports: every module builds and tests alone (GOWORK=off), so its go.mod must require
// each module of the workspace it imports, and replace it, and every module those import,
// with the folder beside it. Sync computes that from the import clauses (go/parser, no
// build), so a new import of a sibling needs no hand-written replace line, and a module
// added to go.work reaches every go.mod through `make tidy`.
package modsync

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
)

// Module is one module of the workspace.
type Module struct {
	Dir  string // folder, relative to the root
	Path string // module path
}

// Load reads the modules of root/go.work.
func Load(root string) ([]Module, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		return nil, err
	}
	wf, err := modfile.ParseWork("go.work", b, nil)
	if err != nil {
		return nil, err
	}
	var mods []Module
	for _, u := range wf.Use {
		dir := filepath.Clean(u.Path)
		mb, err := os.ReadFile(filepath.Join(root, dir, "go.mod"))
		if err != nil {
			return nil, err
		}
		mods = append(mods, Module{Dir: dir, Path: modfile.ModulePath(mb)})
	}
	return mods, nil
}

// imports returns the sibling modules whose packages the Go files of dir import.
func imports(root string, m Module, mods []Module) ([]string, error) {
	found := map[string]bool{}
	base := filepath.Join(root, m.Dir)
	err := filepath.WalkDir(base, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if p != base && (e.Name() == "testdata" || strings.HasPrefix(e.Name(), ".")) {
				return filepath.SkipDir
			}
			if p != base {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // a module of its own
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if s := owner(path, mods); s != "" && s != m.Path {
				found[s] = true
			}
		}
		return nil
	})
	out := make([]string, 0, len(found))
	for s := range found {
		out = append(out, s)
	}
	sort.Strings(out)
	return out, err
}

// owner is the module of mods that holds the package path, or "".
func owner(path string, mods []Module) string {
	best := ""
	for _, m := range mods {
		if (path == m.Path || strings.HasPrefix(path, m.Path+"/")) && len(m.Path) > len(best) {
			best = m.Path
		}
	}
	return best
}

// Plan is what each module's go.mod must say about its siblings.
type Plan struct {
	// Require are the siblings a module imports directly.
	Require map[string][]string
	// Replace are the siblings in its build: the ones it imports, and theirs.
	Replace map[string][]string
}

// MakePlan computes the plan for every module.
func MakePlan(root string, mods []Module) (Plan, error) {
	direct := map[string][]string{}
	for _, m := range mods {
		imps, err := imports(root, m, mods)
		if err != nil {
			return Plan{}, fmt.Errorf("scan %s: %w", m.Dir, err)
		}
		direct[m.Path] = imps
	}
	p := Plan{Require: direct, Replace: map[string][]string{}}
	for _, m := range mods {
		seen := map[string]bool{}
		var walk func(string)
		walk = func(path string) {
			for _, s := range direct[path] {
				if !seen[s] && s != m.Path {
					seen[s] = true
					walk(s)
				}
			}
		}
		walk(m.Path)
		var all []string
		for s := range seen {
			all = append(all, s)
		}
		sort.Strings(all)
		p.Replace[m.Path] = all
	}
	return p, nil
}

// placeholder is the version a go.mod requires a sibling at (the replace decides).
const placeholder = "v0.0.0-00010101000000-000000000000"

// Sync rewrites every go.mod after the plan; with check, it changes nothing and returns
// the modules whose go.mod differs.
func Sync(root string, check bool) ([]string, error) {
	mods, err := Load(root)
	if err != nil {
		return nil, err
	}
	plan, err := MakePlan(root, mods)
	if err != nil {
		return nil, err
	}
	dirOf := map[string]string{}
	for _, m := range mods {
		dirOf[m.Path] = m.Dir
	}
	var stale []string
	for _, m := range mods {
		file := filepath.Join(root, m.Dir, "go.mod")
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		mf, err := modfile.Parse(file, b, nil)
		if err != nil {
			return nil, err
		}
		for _, r := range slices.Clone(mf.Replace) {
			if dirOf[r.Old.Path] != "" && !slices.Contains(plan.Replace[m.Path], r.Old.Path) {
				if err := mf.DropReplace(r.Old.Path, r.Old.Version); err != nil {
					return nil, err
				}
			}
		}
		for _, s := range plan.Replace[m.Path] {
			rel, err := filepath.Rel(m.Dir, dirOf[s])
			if err != nil {
				return nil, err
			}
			if !strings.HasPrefix(rel, ".") {
				rel = "./" + rel
			}
			if err := mf.AddReplace(s, "", filepath.ToSlash(rel), ""); err != nil {
				return nil, err
			}
		}
		required := map[string]bool{}
		for _, r := range mf.Require {
			required[r.Mod.Path] = true
		}
		for _, s := range plan.Require[m.Path] {
			if !required[s] {
				if err := mf.AddRequire(s, placeholder); err != nil {
					return nil, err
				}
			}
		}
		mf.Cleanup()
		out, err := mf.Format()
		if err != nil {
			return nil, err
		}
		if string(out) == string(b) {
			continue
		}
		stale = append(stale, m.Dir)
		if !check {
			if err := os.WriteFile(file, out, 0o644); err != nil {
				return nil, err
			}
		}
	}
	return stale, nil
}
