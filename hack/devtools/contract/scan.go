// Package contract checks the status contract (docs/status-contract.md) against the
// code, as `make lint` runs it (hack/devtools/cmd/contractcheck):
//
//   - names: a Secret one controller makes for the others is found through the status
//     field its producer writes, never by the convention of its name, so no package
//     outside the producer calls the name's builder or spells its suffix (Names);
//   - readers: the "read by" column of the contract's table names exactly the components
//     whose code reads the row's condition types or status fields (Readers).
//
// Both read Go sources with go/parser only (no type checking): a reference is an
// identifier of the API package, a selector `.Status.Field`, or a call of a function of
// the shared packages (api, internal) that makes one, followed through those packages.
package contract

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Repo is the import path prefix of the workspace's modules: Repo + "/" + folder.
const Repo = "github.com/valkey-operator/valkey-operator"

// APIPackage is the package of the API types and of the name builders.
const APIPackage = Repo + "/api/v1alpha1"

// Violation is one broken rule, at a place of a file or of the doc.
type Violation struct {
	Pos    string
	Reason string
}

func (v Violation) String() string { return v.Pos + ": " + v.Reason }

// file is one parsed Go source file with the import paths of its names.
type file struct {
	path    string // relative to the root, slash-separated
	fset    *token.FileSet
	ast     *ast.File
	imports map[string]string // local name -> import path
}

// importPath is what a package folder of the workspace is imported as.
func importPath(dir string) string { return Repo + "/" + filepath.ToSlash(dir) }

// parseDir parses the Go files (tests left out) of every package under root/dir, keyed by
// the folder relative to root. testdata and hidden folders are skipped.
func parseDir(root, dir string) (map[string][]*file, error) {
	out := map[string][]*file{}
	base := filepath.Join(root, dir)
	if _, err := os.Stat(base); err != nil {
		return nil, err
	}
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != base && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		f, err := parseFile(root, filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		out[pkg] = append(out[pkg], f)
		return nil
	})
	return out, err
}

func parseFile(root, rel string) (*file, error) {
	fset := token.NewFileSet()
	a, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", rel, err)
	}
	f := &file{path: rel, fset: fset, ast: a, imports: map[string]string{}}
	for _, im := range a.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		f.imports[name] = p
	}
	return f, nil
}

// pos is "file:line" of a node.
func (f *file) pos(n ast.Node) string {
	return fmt.Sprintf("%s:%d", f.path, f.fset.Position(n.Pos()).Line)
}

// qualified returns the import path and name of a selector pkg.Name of an imported
// package, or "" when x is not one.
func (f *file) qualified(x *ast.SelectorExpr) (string, string) {
	id, ok := x.X.(*ast.Ident)
	if !ok {
		return "", ""
	}
	p, ok := f.imports[id.Name]
	if !ok {
		return "", ""
	}
	return p, x.Sel.Name
}
