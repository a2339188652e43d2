// Package depscheck finds every external program the project runs on the machine, from
// its Go code (os/exec calls and the wrappers around them), its shell scripts and its
// Makefile, so a test can hold that list against the setup table (hack/deps.txt): a
// program added to the code without a setup step fails `make test`, not a user's
// first `make demo`.
//
// The Go scan is syntactic (go/ast, no type checking), so it follows what the code
// spells out: a string literal passed as the program of exec.Command, exec.CommandContext
// or exec.LookPath; a parameter that reaches that position makes its function a wrapper,
// whose callers are scanned the same way (by function name, to a fixed point); a struct
// field that reaches it makes composite literals of that type name sources; the first
// element of a [][]string table ranged over; the last literal of a filepath.Join. Any
// other expression in the program position is reported as unresolved, with its source
// text, for the test's allow-list to explain.
package depscheck

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Site is where a program is run.
type Site struct {
	File string // relative to the repository root
	Line int
	// Expr is the source text of an unresolved program expression.
	Expr string
}

func (s Site) String() string { return s.File + ":" + strconv.Itoa(s.Line) }

// Result is what a scan found.
type Result struct {
	// Programs maps a program (a name, or an absolute path) to where it is run.
	Programs map[string][]Site
	// Unresolved are program positions whose value the scan cannot read.
	Unresolved []Site
}

func (r *Result) add(prog string, s Site) {
	if r.Programs == nil {
		r.Programs = map[string][]Site{}
	}
	r.Programs[prog] = append(r.Programs[prog], s)
}

// Names returns the programs found, sorted.
func (r *Result) Names() []string {
	out := make([]string, 0, len(r.Programs))
	for p := range r.Programs {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// wrapper is a function one of whose parameters is a program.
type wrapper struct {
	name string
	arg  int
	// first: the parameter is variadic and its first element is the program.
	first bool
	// method: called as x.name(...) from any package; otherwise a function of the
	// package in dir (package name pkg), called as name(...) there or pkg.name(...).
	method   bool
	dir, pkg string
}

// fieldSink is a struct field whose value (or first element) is a program.
type fieldSink struct {
	typ, field string
	first      bool
}

type goFile struct {
	rel  string
	dir  string
	fset *token.FileSet
	f    *ast.File
	exec string // local name of os/exec, "" if not imported
}

type goScan struct {
	files    []*goFile
	wrappers map[wrapper]bool
	fields   map[fieldSink]bool
	res      *Result
	seen     map[string]bool
}

// ScanGo scans every .go file under the given module directories (relative to root),
// tests included, testdata excluded.
func ScanGo(root string, dirs []string, res *Result) error {
	s := &goScan{wrappers: map[wrapper]bool{}, fields: map[fieldSink]bool{}, res: res, seen: map[string]bool{}}
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() && (e.Name() == "testdata" || strings.HasPrefix(e.Name(), ".")) {
				return filepath.SkipDir
			}
			if e.IsDir() || !strings.HasSuffix(p, ".go") {
				return nil
			}
			return s.parse(root, p)
		})
		if err != nil {
			return err
		}
	}
	// Each round may find new wrappers and fields; stop when a round adds none.
	for {
		before := len(s.wrappers) + len(s.fields)
		for _, f := range s.files {
			s.scanFile(f)
		}
		if len(s.wrappers)+len(s.fields) == before {
			return nil
		}
	}
}

func (s *goScan) parse(root, p string) error {
	src, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	rel, _ := filepath.Rel(root, p)
	gf := &goFile{rel: filepath.ToSlash(rel), dir: filepath.ToSlash(filepath.Dir(rel)), fset: fset, f: f}
	for _, imp := range f.Imports {
		if v, _ := strconv.Unquote(imp.Path.Value); v == "os/exec" {
			gf.exec = "exec"
			if imp.Name != nil {
				gf.exec = imp.Name.Name
			}
		}
	}
	s.files = append(s.files, gf)
	return nil
}

func (s *goScan) scanFile(f *goFile) {
	for _, decl := range f.f.Decls {
		for _, fn := range funcsOf(decl) {
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					s.call(f, fn, n)
				case *ast.CompositeLit:
					s.composite(f, fn, n)
				}
				return true
			})
		}
	}
}

// funcsOf returns the functions of a declaration: a function, or the function literals
// of a package-level var, each as a function of its own (Ginkgo specs live there: var _ =
// It("...", func() { ... })).
func funcsOf(decl ast.Decl) []*ast.FuncDecl {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Body != nil {
			return []*ast.FuncDecl{d}
		}
	case *ast.GenDecl:
		var out []*ast.FuncDecl
		ast.Inspect(d, func(n ast.Node) bool {
			lit, ok := n.(*ast.FuncLit)
			if !ok {
				return true
			}
			out = append(out, &ast.FuncDecl{Name: ast.NewIdent("_"), Type: lit.Type, Body: lit.Body})
			return false // its body, nested literals included, is walked as one function
		})
		return out
	}
	return nil
}

// call handles exec calls and calls of known wrappers.
func (s *goScan) call(f *goFile, fn *ast.FuncDecl, c *ast.CallExpr) {
	if sel, ok := c.Fun.(*ast.SelectorExpr); ok && f.exec != "" {
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == f.exec {
			idx := map[string]int{"Command": 0, "CommandContext": 1, "LookPath": 0}
			if i, ok := idx[sel.Sel.Name]; ok && len(c.Args) > i {
				s.program(f, fn, c.Args[i], c.Ellipsis.IsValid() && i == len(c.Args)-1)
			}
			return
		}
	}
	for w := range s.wrappers {
		if !w.calledBy(f, c.Fun) || len(c.Args) <= w.arg {
			continue
		}
		arg := c.Args[w.arg]
		if w.first {
			// f(ctx, "prog", args...) or f(ctx, list...)
			s.program(f, fn, arg, c.Ellipsis.IsValid() && w.arg == len(c.Args)-1)
		} else {
			s.program(f, fn, arg, false)
		}
	}
}

// calledBy reports whether fun, in file f, names the wrapper.
func (w wrapper) calledBy(f *goFile, fun ast.Expr) bool {
	switch fun := fun.(type) {
	case *ast.Ident:
		return !w.method && fun.Name == w.name && f.dir == w.dir
	case *ast.SelectorExpr:
		if fun.Sel.Name != w.name {
			return false
		}
		if w.method {
			return true
		}
		x, ok := fun.X.(*ast.Ident)
		return ok && x.Name == w.pkg
	}
	return false
}

// newWrapper records that parameter i of fn (in f) is a program.
func (s *goScan) newWrapper(f *goFile, fn *ast.FuncDecl, i int, first bool) {
	s.wrappers[wrapper{name: fn.Name.Name, arg: i, first: first, method: fn.Recv != nil, dir: f.dir, pkg: f.f.Name.Name}] = true
}

// composite handles T{Field: "prog"} for known field sinks.
func (s *goScan) composite(f *goFile, fn *ast.FuncDecl, cl *ast.CompositeLit) {
	typ := calleeName(cl.Type)
	if typ == "" {
		return
	}
	for _, el := range cl.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, ok := kv.Key.(*ast.Ident)
		if !ok {
			continue
		}
		for _, first := range []bool{false, true} {
			if !s.fields[fieldSink{typ, key.Name, first}] {
				continue
			}
			v := kv.Value
			if first {
				list, ok := v.(*ast.CompositeLit)
				if !ok || len(list.Elts) == 0 {
					continue
				}
				v = list.Elts[0]
			}
			s.program(f, fn, v, false)
		}
	}
}

// program resolves the expression in a program position; spread says it is `x...`
// (a list whose first element is the program).
func (s *goScan) program(f *goFile, fn *ast.FuncDecl, e ast.Expr, spread bool) {
	site := Site{File: f.rel, Line: f.fset.Position(e.Pos()).Line}
	switch e := e.(type) {
	case *ast.BasicLit:
		if v, err := strconv.Unquote(e.Value); err == nil && e.Kind == token.STRING {
			s.found(v, site)
			return
		}
	case *ast.Ident:
		if i, variadic, ok := paramIndex(fn, e.Name); ok {
			s.newWrapper(f, fn, i, variadic || spread)
			return
		}
		if v := assigned(fn, e.Name); v != nil {
			if p, ok := literalProgram(v); ok {
				s.found(p, site)
				return
			}
			if isLookPath(f, v) {
				return // the LookPath call itself names the program
			}
		}
	case *ast.IndexExpr:
		if lit, ok := e.Index.(*ast.BasicLit); ok && lit.Value == "0" {
			switch x := e.X.(type) {
			case *ast.Ident:
				if i, variadic, ok := paramIndex(fn, x.Name); ok && variadic {
					s.newWrapper(f, fn, i, true)
					return
				}
				if progs, ok := rangedFirsts(fn, x.Name); ok {
					for _, p := range progs {
						s.found(p, site)
					}
					return
				}
			case *ast.SelectorExpr:
				if t := paramType(fn, x.X); t != "" {
					s.fields[fieldSink{t, x.Sel.Name, true}] = true
					return
				}
			}
		}
	case *ast.SelectorExpr:
		if t := paramType(fn, e.X); t != "" {
			s.fields[fieldSink{t, e.Sel.Name, spread}] = true
			return
		}
	case *ast.CallExpr:
		if p, ok := literalProgram(e); ok {
			s.found(p, site)
			return
		}
	}
	site.Expr = exprText(f.fset, e)
	key := site.File + "|" + site.Expr
	if !s.seen[key] {
		s.seen[key] = true
		s.res.Unresolved = append(s.res.Unresolved, site)
	}
}

func (s *goScan) found(prog string, site Site) {
	key := prog + "|" + site.String()
	if s.seen[key] {
		return
	}
	s.seen[key] = true
	s.res.add(prog, site)
}

// isLookPath: e is exec.LookPath(...), or its first result.
func isLookPath(f *goFile, e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == f.exec && sel.Sel.Name == "LookPath"
}

// calleeName is the last identifier of f, pkg.F, x.Method or a type name.
func calleeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.IndexExpr: // generic instantiation
		return calleeName(e.X)
	}
	return ""
}

// paramIndex returns the position of a parameter of fn named name.
func paramIndex(fn *ast.FuncDecl, name string) (idx int, variadic bool, ok bool) {
	i := 0
	for _, fld := range fn.Type.Params.List {
		_, isVar := fld.Type.(*ast.Ellipsis)
		if len(fld.Names) == 0 {
			i++
			continue
		}
		for _, n := range fld.Names {
			if n.Name == name {
				return i, isVar, true
			}
			i++
		}
	}
	return 0, false, false
}

// paramType returns the type name of x when x is the receiver or a parameter of fn.
func paramType(fn *ast.FuncDecl, x ast.Expr) string {
	id, ok := x.(*ast.Ident)
	if !ok {
		return ""
	}
	lists := []*ast.FieldList{fn.Type.Params}
	if fn.Recv != nil {
		lists = append(lists, fn.Recv)
	}
	for _, l := range lists {
		for _, fld := range l.List {
			for _, n := range fld.Names {
				if n.Name == id.Name {
					t := fld.Type
					if st, ok := t.(*ast.StarExpr); ok {
						t = st.X
					}
					return calleeName(t)
				}
			}
		}
	}
	return ""
}

// assigned returns the value last assigned to name in fn by := or = or var, or nil.
func assigned(fn *ast.FuncDecl, name string) ast.Expr {
	var v ast.Expr
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				id, ok := l.(*ast.Ident)
				if !ok || id.Name != name {
					continue
				}
				if len(n.Lhs) == len(n.Rhs) {
					v = n.Rhs[i]
				} else if i == 0 && len(n.Rhs) == 1 {
					v = n.Rhs[0] // x, err := f(...)
				}
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if id.Name == name && i < len(n.Values) {
					v = n.Values[i]
				}
			}
		}
		return true
	})
	return v
}

// literalProgram reads "prog" or filepath.Join(..., "prog").
func literalProgram(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		v, err := strconv.Unquote(e.Value)
		return v, err == nil
	case *ast.CallExpr:
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Join" && len(e.Args) > 0 {
			if lit, ok := e.Args[len(e.Args)-1].(*ast.BasicLit); ok {
				v, err := strconv.Unquote(lit.Value)
				return path.Base(v), err == nil
			}
		}
	}
	return "", false
}

// rangedFirsts reads `for _, s := range steps` where steps is a [][]string literal
// assigned in fn, and returns each row's first element.
func rangedFirsts(fn *ast.FuncDecl, name string) ([]string, bool) {
	var table ast.Expr
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		r, ok := n.(*ast.RangeStmt)
		if !ok {
			return true
		}
		if id, ok := r.Value.(*ast.Ident); ok && id.Name == name {
			table = r.X
			if tid, ok := r.X.(*ast.Ident); ok {
				table = assigned(fn, tid.Name)
			}
		}
		return true
	})
	cl, ok := table.(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	var out []string
	for _, row := range cl.Elts {
		r, ok := row.(*ast.CompositeLit)
		if !ok || len(r.Elts) == 0 {
			return nil, false
		}
		p, ok := literalProgram(r.Elts[0])
		if !ok {
			return nil, false
		}
		out = append(out, p)
	}
	return out, true
}

func exprText(fset *token.FileSet, e ast.Expr) string {
	var b strings.Builder
	_ = printer.Fprint(&b, fset, e)
	return b.String()
}
