package importrules

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Package is what `go list` says of one package of a module.
type Package struct {
	ImportPath string
	Standard   bool
	// Imports are the package's direct imports, its tests' included.
	Imports []string
	// Deps are every package it depends on, its tests' included.
	Deps []string
}

// Violation is one broken rule.
type Violation struct {
	Module, Package, Import, Reason string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s imports %s: %s", v.Module, v.Package, v.Import, v.Reason)
}

// ListModule runs go list in the module folder dir (GOWORK=off, as the Makefile builds
// each module) and returns its packages: direct imports with their tests', and the
// dependencies of the package itself.
func ListModule(dir string) ([]Package, error) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Standard,Imports,TestImports,XTestImports,Deps", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list in %s: %w: %s", dir, err, errb.String())
	}
	var pkgs []Package
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p struct {
			ImportPath                         string
			Standard                           bool
			Imports, TestImports, XTestImports []string
			Deps                               []string
		}
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list in %s: %w", dir, err)
		}
		imports := append(append(slices.Clone(p.Imports), p.TestImports...), p.XTestImports...)
		pkgs = append(pkgs, Package{ImportPath: p.ImportPath, Standard: p.Standard, Imports: imports, Deps: p.Deps})
	}
	return pkgs, nil
}

// moduleOf returns the workspace module folder of an import path, among mods (longest
// match first), or "".
func moduleOf(path string, mods []string) string {
	best := ""
	for _, m := range mods {
		prefix := Repo + "/" + m
		if (path == prefix || strings.HasPrefix(path, prefix+"/")) && len(m) > len(best) {
			best = m
		}
	}
	return best
}

// Check returns the violations of rule r by the packages of its module; mods are every
// module folder of the workspace.
func Check(r Rule, pkgs []Package, mods []string, isStd func(string) bool) []Violation {
	var out []Violation
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			m := moduleOf(imp, mods)
			if m == "" || m == r.Module || slices.Contains(r.May, "*") || slices.Contains(r.May, m) {
				continue
			}
			out = append(out, Violation{r.Module, p.ImportPath, imp,
				fmt.Sprintf("%s may import only %s (%s)", r.Module, mayList(r), r.Why)})
		}
		for _, never := range r.Never {
			for _, dep := range append(slices.Clone(p.Imports), p.Deps...) {
				bad := false
				if never == "std-only" {
					bad = !isStd(dep) && moduleOf(dep, mods) != r.Module
				} else {
					bad = strings.HasPrefix(dep, never)
				}
				if bad {
					why := r.Why
					if slices.Contains(lab, never) {
						why = labWhy
					}
					out = append(out, Violation{r.Module, p.ImportPath, dep,
						fmt.Sprintf("%s must never depend on %s (%s)", r.Module, never, why)})
					break
				}
			}
		}
		out = append(out, checkConfine(r, p, mods)...)
		for _, pr := range r.Packages {
			if !underAny(p.ImportPath, r.Module, []string{pr.Package}) {
				continue
			}
			for _, never := range pr.Never {
				for _, dep := range append(slices.Clone(p.Imports), p.Deps...) {
					if strings.HasPrefix(dep, never) {
						out = append(out, Violation{r.Module, p.ImportPath, dep,
							fmt.Sprintf("%s/%s must never depend on %s (%s)", r.Module, pr.Package, never, pr.Why)})
						break
					}
				}
			}
			for _, no := range pr.NoImport {
				for _, imp := range p.Imports {
					if strings.HasPrefix(imp, no) {
						out = append(out, Violation{r.Module, p.ImportPath, imp,
							fmt.Sprintf("%s/%s must not import %s (%s)", r.Module, pr.Package, no, pr.Why)})
						break
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return slices.CompactFunc(out, func(a, b Violation) bool { return a.String() == b.String() })
}

// checkConfine returns the imports of p that r's confinements keep to other packages.
func checkConfine(r Rule, p Package, mods []string) []Violation {
	var out []Violation
	for _, c := range r.Confine {
		if underAny(p.ImportPath, r.Module, c.Packages) {
			continue
		}
		for _, imp := range p.Imports {
			if moduleOf(imp, mods) == c.Module {
				out = append(out, Violation{r.Module, p.ImportPath, imp,
					fmt.Sprintf("only %s/%s may import %s (%s)", r.Module, strings.Join(c.Packages, ", "), c.Module, c.Why)})
				break
			}
		}
	}
	return out
}

// underAny reports whether the package at path is one of module's folders or under one.
func underAny(path, module string, folders []string) bool {
	for _, f := range folders {
		pkg := Repo + "/" + module + "/" + f
		if path == pkg || strings.HasPrefix(path, pkg+"/") {
			return true
		}
	}
	return false
}

func mayList(r Rule) string {
	if len(r.May) == 0 {
		return "its own packages"
	}
	return strings.Join(r.May, ", ")
}

// WorkspaceModules reads the module folders of root/go.work.
func WorkspaceModules(root string) ([]string, error) {
	f, err := os.Open(filepath.Join(root, "go.work"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mods []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "./") {
			mods = append(mods, strings.TrimPrefix(l, "./"))
		}
	}
	return mods, sc.Err()
}

// CheckRepo checks every module of the workspace at root.
func CheckRepo(root string) ([]Violation, error) {
	mods, err := WorkspaceModules(root)
	if err != nil {
		return nil, err
	}
	std, err := stdPackages()
	if err != nil {
		return nil, err
	}
	var out []Violation
	for _, m := range mods {
		r, ok := RuleOf(m)
		if !ok {
			out = append(out, Violation{Module: m, Reason: "has no import rule: add one to hack/devtools/importrules"})
			continue
		}
		pkgs, err := ListModule(filepath.Join(root, m))
		if err != nil {
			return nil, err
		}
		out = append(out, Check(r, pkgs, mods, func(p string) bool { return std[p] })...)
	}
	return out, nil
}

// stdPackages lists the standard library.
func stdPackages() (map[string]bool, error) {
	out, err := exec.Command("go", "list", "std").Output()
	if err != nil {
		return nil, fmt.Errorf("go list std: %w", err)
	}
	m := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		m[l] = true
	}
	return m, nil
}
