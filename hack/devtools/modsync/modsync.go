// Package modsync keeps the workspace's go.mod files consistent with what their code
// imports: every module builds and tests alone (GOWORK=off), so its go.mod must require
// each module of the workspace it imports, and replace it, and every module those import,
// with the folder beside it. Sync computes that from the import clauses (go/parser, no
// build), so a new import of a sibling needs no hand-written replace line, and a module
// added to go.work reaches every go.mod through `make tidy`.
//
// The modules are versioned together: each go.mod requires its siblings at the version of
// the repository's VERSION file (the chart's), so a consumer outside the workspace, for
// whom the replace lines do not count, resolves them from the tags <dir>/v<VERSION>.
// Every third-party module is required at one version across the workspace (Skews finds
// the others; Sync raises each to the newest one a go.mod already uses).
package modsync

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
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

// Version is the version the modules require each other at: v and the repository's
// VERSION file.
func Version(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return "", fmt.Errorf("read the release version: %w", err)
	}
	v := "v" + strings.TrimSpace(string(b))
	if semver.Canonical(v) != v {
		return "", fmt.Errorf("VERSION %q is not a semantic version", strings.TrimSpace(string(b)))
	}
	return v, nil
}

// Use is one version of a module and the go.mod files (folders) that require it.
type Use struct {
	Version string
	Dirs    []string
}

// Skew is a third-party module that the workspace's go.mod files require at more than
// one version; Uses runs from the newest.
type Skew struct {
	Path string
	Uses []Use
}

// Newest is the version Sync aligns every go.mod on.
func (s Skew) Newest() string { return s.Uses[0].Version }

func (s Skew) String() string {
	var uses []string
	for _, u := range s.Uses {
		var files []string
		for _, d := range u.Dirs {
			files = append(files, filepath.ToSlash(filepath.Join(d, "go.mod")))
		}
		uses = append(uses, fmt.Sprintf("%s in %s", u.Version, strings.Join(files, ", ")))
	}
	return fmt.Sprintf("%s at %d versions: %s", s.Path, len(s.Uses), strings.Join(uses, "; "))
}

// Skews lists the third-party modules (those not in mods) that the go.mod files, keyed
// by folder, require at different versions, sorted by module path.
func Skews(files map[string]*modfile.File, mods []Module) []Skew {
	sibling := map[string]bool{}
	for _, m := range mods {
		sibling[m.Path] = true
	}
	dirs := map[string]map[string][]string{} // module path -> version -> folders
	for dir, mf := range files {
		for _, r := range mf.Require {
			if sibling[r.Mod.Path] {
				continue
			}
			if dirs[r.Mod.Path] == nil {
				dirs[r.Mod.Path] = map[string][]string{}
			}
			dirs[r.Mod.Path][r.Mod.Version] = append(dirs[r.Mod.Path][r.Mod.Version], dir)
		}
	}
	var out []Skew
	for path, byVersion := range dirs {
		if len(byVersion) < 2 {
			continue
		}
		s := Skew{Path: path}
		for v, ds := range byVersion {
			sort.Strings(ds)
			s.Uses = append(s.Uses, Use{Version: v, Dirs: ds})
		}
		sort.Slice(s.Uses, func(i, j int) bool { return semver.Compare(s.Uses[i].Version, s.Uses[j].Version) > 0 })
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Report is what Sync found out of date.
type Report struct {
	// Stale are the folders whose go.mod differs from what Sync writes.
	Stale []string
	// Skews are the third-party modules required at more than one version.
	Skews []Skew
}

// Sync rewrites every go.mod after the plan: the sibling requires at the workspace's
// Version, the replace lines, and every third-party module at the newest version a go.mod
// of the workspace requires. With check it changes nothing and only reports.
func Sync(root string, check bool) (Report, error) {
	mods, err := Load(root)
	if err != nil {
		return Report{}, err
	}
	plan, err := MakePlan(root, mods)
	if err != nil {
		return Report{}, err
	}
	version, err := Version(root)
	if err != nil {
		return Report{}, err
	}
	dirOf := map[string]string{}
	for _, m := range mods {
		dirOf[m.Path] = m.Dir
	}
	files := map[string]*modfile.File{}
	original := map[string][]byte{}
	for _, m := range mods {
		file := filepath.Join(root, m.Dir, "go.mod")
		b, err := os.ReadFile(file)
		if err != nil {
			return Report{}, err
		}
		mf, err := modfile.Parse(file, b, nil)
		if err != nil {
			return Report{}, err
		}
		files[m.Dir], original[m.Dir] = mf, b
	}
	report := Report{Skews: Skews(files, mods)}
	for _, m := range mods {
		mf := files[m.Dir]
		if err := syncSiblings(mf, m, plan, dirOf, version); err != nil {
			return Report{}, fmt.Errorf("sync %s/go.mod: %w", m.Dir, err)
		}
		for _, s := range report.Skews {
			if err := raise(mf, s.Path, s.Newest()); err != nil {
				return Report{}, fmt.Errorf("sync %s/go.mod: %w", m.Dir, err)
			}
		}
		mf.Cleanup()
		out, err := mf.Format()
		if err != nil {
			return Report{}, err
		}
		if string(out) == string(original[m.Dir]) {
			continue
		}
		report.Stale = append(report.Stale, m.Dir)
		if !check {
			if err := os.WriteFile(filepath.Join(root, m.Dir, "go.mod"), out, 0o644); err != nil {
				return Report{}, err
			}
		}
	}
	return report, nil
}

// syncSiblings writes the replace lines of the siblings in m's build and requires the
// ones m imports, and every sibling it already requires, at version.
func syncSiblings(mf *modfile.File, m Module, plan Plan, dirOf map[string]string, version string) error {
	for _, r := range slices.Clone(mf.Replace) {
		if dirOf[r.Old.Path] != "" && !slices.Contains(plan.Replace[m.Path], r.Old.Path) {
			if err := mf.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return err
			}
		}
	}
	for _, s := range plan.Replace[m.Path] {
		rel, err := filepath.Rel(m.Dir, dirOf[s])
		if err != nil {
			return err
		}
		if !strings.HasPrefix(rel, ".") {
			rel = "./" + rel
		}
		if err := mf.AddReplace(s, "", filepath.ToSlash(rel), ""); err != nil {
			return err
		}
	}
	need := map[string]bool{}
	for _, s := range plan.Require[m.Path] {
		need[s] = true
	}
	for _, r := range mf.Require {
		if dirOf[r.Mod.Path] != "" {
			need[r.Mod.Path] = true
		}
	}
	for _, s := range slices.Sorted(maps.Keys(need)) {
		if err := mf.AddRequire(s, version); err != nil {
			return err
		}
	}
	return nil
}

// raise sets the version of path in mf, where mf requires it, to version.
func raise(mf *modfile.File, path, version string) error {
	for _, r := range mf.Require {
		if r.Mod.Path == path && r.Mod.Version != version {
			return mf.AddRequire(path, version)
		}
	}
	return nil
}

// Required is the version the workspace's go.mod files require the third-party module
// path at: the newest, which is the only one when the check passes.
func Required(root, path string) (string, error) {
	mods, err := Load(root)
	if err != nil {
		return "", err
	}
	newest := ""
	for _, m := range mods {
		b, err := os.ReadFile(filepath.Join(root, m.Dir, "go.mod"))
		if err != nil {
			return "", err
		}
		mf, err := modfile.ParseLax(filepath.Join(m.Dir, "go.mod"), b, nil)
		if err != nil {
			return "", err
		}
		for _, r := range mf.Require {
			if r.Mod.Path == path && semver.Compare(r.Mod.Version, newest) > 0 {
				newest = r.Mod.Version
			}
		}
	}
	if newest == "" {
		return "", fmt.Errorf("no go.mod of the workspace requires %s", path)
	}
	return newest, nil
}
