package contract

import (
	"fmt"
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// ContractDoc is the document whose table Readers checks.
const ContractDoc = "docs/status-contract.md"

// Components are the programs the "read by" column may name, by the words the table
// uses, with their module folders.
var Components = map[string]string{
	"cluster-controller": "cluster-controller",
	"node-controller":    "node-controller",
	"acl-controller":     "acl-controller",
	"tls-controller":     "tls-controller",
	"backup-controller":  "backup-controller",
	"webhooks":           "webhooks",
	"`kubectl valkey`":   "kubectl-valkey",
}

// OutsideReaders are the readers of the column that are no code of ours.
var OutsideReaders = []string{"users", "disruption controller"}

// shared are the module folders whose functions every component calls: a reference made
// in one of their functions counts for the caller.
var shared = []string{"api", "internal"}

// statusTypes are the status structs of the kinds the "on" column names.
var statusTypes = map[string]string{
	"ValkeyCluster":        "ValkeyClusterStatus",
	"ValkeyNode":           "ValkeyNodeStatus",
	"ValkeyBackup":         "ValkeyBackupStatus",
	"ValkeyBackupSchedule": "ValkeyBackupScheduleStatus",
}

// kubeStatusFields are fields of the status of the Kubernetes kinds the controllers read
// (Pod, Job, StatefulSet, Deployment, PersistentVolumeClaim, Service, Node): a selector
// `.Status.Phase` may be one of theirs, so such a field of ours does not make a reader
// that must be listed.
var kubeStatusFields = []string{"Phase", "Conditions", "PodIP", "PodIPs", "HostIP", "StartTime", "CompletionTime",
	"Replicas", "ReadyReplicas", "ObservedGeneration", "Reason", "Message", "Active", "Succeeded", "Failed",
	"Capacity", "LoadBalancer", "Addresses", "ContainerStatuses", "NominatedNodeName"}

// Row is one row of the contract's table.
type Row struct {
	Line    int
	Cell    string   // the "field or condition" cell
	Kinds   []string // of the "on" cell ("both": ValkeyCluster and ValkeyNode)
	Owner   string   // a component, or "" when every controller writes the row
	Readers []string // the components of the "read by" cell
	// Outside are the readers that are no code of ours.
	Outside []string
}

// key is what a row names and code references: a condition type ("cond:Ready") or a
// status field by its Go name ("field:PodIP").
type key string

// api is what the checks know of the API package.
type api struct {
	conditions map[string]bool              // condition types (the values of the Condition* constants)
	consts     map[string]string            // Condition* constant -> its value
	fields     map[string]map[string]string // status struct -> json name -> Go field name
	fieldUses  map[string]int               // Go field name -> how many status structs have it
}

// Readers checks the "read by" column of the contract's table against the code: a
// component it names must reference a condition type or a status field of the row, and
// a component other than the owner that references one it knows for that row alone
// (a condition type, a status field of one kind only) must be named.
func Readers(root string) ([]Violation, error) {
	a, err := readAPI(root)
	if err != nil {
		return nil, err
	}
	rows, err := ParseTable(root)
	if err != nil {
		return nil, err
	}
	refs, err := componentRefs(root, a)
	if err != nil {
		return nil, err
	}
	var out []Violation
	for _, r := range rows {
		out = append(out, checkRow(r, a, refs)...)
	}
	return out, nil
}

// checkRow compares one row with what each component references.
func checkRow(r Row, a *api, refs map[string]map[key]bool) []Violation {
	var out []Violation
	at := fmt.Sprintf("%s:%d", ContractDoc, r.Line)
	keys, own, bad := a.rowKeys(r)
	for _, b := range bad {
		out = append(out, Violation{at, b})
	}
	names := make([]string, 0, len(Components))
	for n := range Components {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		comp := Components[name]
		listed := slices.Contains(r.Readers, name)
		var reads, readsOwn []string
		for k := range refs[comp] {
			if keys[k] {
				reads = append(reads, k.String())
			}
			if own[k] {
				readsOwn = append(readsOwn, k.String())
			}
		}
		slices.Sort(reads)
		slices.Sort(readsOwn)
		switch {
		case listed && len(reads) == 0:
			out = append(out, Violation{at, fmt.Sprintf("%q says %s reads it, but %s/ references none of %s",
				short(r.Cell), name, comp, strings.Join(keyNames(keys), ", "))})
		case !listed && name != r.Owner && r.Owner != "" && len(readsOwn) > 0:
			out = append(out, Violation{at, fmt.Sprintf("%q does not list %s, whose code in %s/ reads %s",
				short(r.Cell), name, comp, strings.Join(readsOwn, ", "))})
		}
	}
	return out
}

func (k key) String() string {
	kind, name, _ := strings.Cut(string(k), ":")
	if kind == "field" {
		return ".Status." + name
	}
	return name
}

func keyNames(keys map[key]bool) []string {
	var out []string
	for k := range keys {
		out = append(out, k.String())
	}
	slices.Sort(out)
	return out
}

func short(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// rowKeys are the keys a row names (outside parentheses, which describe), those of
// them that name it alone (conditions, fields of one status struct), and the names that
// are neither a condition type nor a status field of the row's kinds.
func (a *api) rowKeys(r Row) (all, own map[key]bool, bad []string) {
	all, own = map[key]bool{}, map[key]bool{}
	for _, tok := range backticked(stripParens(r.Cell)) {
		if a.conditions[tok] {
			all[key("cond:"+tok)], own[key("cond:"+tok)] = true, true
			continue
		}
		json := strings.TrimPrefix(tok, "status.")
		found := false
		for _, kind := range r.Kinds {
			if goName, ok := a.fields[statusTypes[kind]][json]; ok {
				found = true
				all[key("field:"+goName)] = true
				if a.fieldUses[goName] == 1 && !slices.Contains(kubeStatusFields, goName) {
					own[key("field:"+goName)] = true
				}
			}
		}
		if !found {
			bad = append(bad, fmt.Sprintf("`%s` is neither a condition type nor a status field of %s", tok, strings.Join(r.Kinds, ", ")))
		}
	}
	return all, own, bad
}

// ParseTable reads the rows of the table under "## Who writes what".
func ParseTable(root string) ([]Row, error) {
	b, err := os.ReadFile(filepath.Join(root, ContractDoc))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	start := slices.Index(lines, "## Who writes what")
	if start < 0 {
		return nil, fmt.Errorf("%s: no section \"## Who writes what\"", ContractDoc)
	}
	var rows []Row
	header := true
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "## ") {
			break
		}
		if !strings.HasPrefix(l, "|") {
			if len(rows) > 0 || !header {
				break
			}
			continue
		}
		cells := splitRow(l)
		if header || strings.HasPrefix(cells[0], "---") {
			header = cells[0] == "field or condition" || strings.HasPrefix(cells[0], "---")
			if strings.HasPrefix(cells[0], "---") {
				header = false
			}
			continue
		}
		if len(cells) != 4 {
			return nil, fmt.Errorf("%s:%d: %d cells, want 4 (field or condition, on, owner, read by)", ContractDoc, i+1, len(cells))
		}
		r, err := parseRow(cells, i+1)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no table under \"## Who writes what\"", ContractDoc)
	}
	return rows, nil
}

// splitRow splits a table line into its trimmed cells.
func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimSuffix(strings.TrimPrefix(l, "|"), "|")
	cells := strings.Split(l, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

func parseRow(cells []string, line int) (Row, error) {
	r := Row{Line: line, Cell: cells[0]}
	switch on := cells[1]; on {
	case "both":
		r.Kinds = []string{"ValkeyCluster", "ValkeyNode"}
	default:
		if _, ok := statusTypes[on]; !ok {
			return r, fmt.Errorf("%s:%d: unknown kind %q", ContractDoc, line, on)
		}
		r.Kinds = []string{on}
	}
	owner := stripParens(cells[2])
	switch {
	case strings.HasPrefix(owner, "every controller"):
	case Components[owner] != "":
		r.Owner = owner
	default:
		return r, fmt.Errorf("%s:%d: unknown owner %q", ContractDoc, line, cells[2])
	}
	for _, part := range splitTop(cells[3]) {
		name := strings.TrimSpace(stripParens(part))
		if strings.HasSuffix(name, "-") {
			name += "controller" // "cluster-, node-controller"
		}
		switch {
		case Components[name] != "":
			r.Readers = append(r.Readers, name)
		case slices.Contains(OutsideReaders, name):
			r.Outside = append(r.Outside, name)
		default:
			return r, fmt.Errorf("%s:%d: unknown reader %q: name a component (%s) or one of %s",
				ContractDoc, line, name, strings.Join(componentNames(), ", "), strings.Join(OutsideReaders, ", "))
		}
	}
	return r, nil
}

func componentNames() []string {
	var out []string
	for n := range Components {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// splitTop splits s at the commas outside parentheses.
func splitTop(s string) []string {
	var out []string
	depth, from := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[from:i])
				from = i + 1
			}
		}
	}
	return append(out, s[from:])
}

// stripParens removes the parenthesised text of s.
func stripParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, c := range s {
		switch {
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0:
			b.WriteRune(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// backticked returns the `quoted` tokens of s.
func backticked(s string) []string {
	var out []string
	parts := strings.Split(s, "`")
	for i := 1; i < len(parts); i += 2 {
		out = append(out, parts[i])
	}
	return out
}

// readAPI reads the condition types and the status structs' fields of the API package.
func readAPI(root string) (*api, error) {
	pkgs, err := parseDir(root, "api/v1alpha1")
	if err != nil {
		return nil, err
	}
	a := &api{conditions: map[string]bool{}, consts: map[string]string{}, fields: map[string]map[string]string{}, fieldUses: map[string]int{}}
	for _, f := range pkgs["api/v1alpha1"] {
		for _, d := range f.ast.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for i, n := range s.Names {
						if strings.HasPrefix(n.Name, "Condition") && i < len(s.Values) {
							if lit, ok := s.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								v, _ := strconv.Unquote(lit.Value)
								a.conditions[v] = true
								a.consts[n.Name] = v
							}
						}
					}
				case *ast.TypeSpec:
					st, ok := s.Type.(*ast.StructType)
					if !ok || !slices.Contains(mapValues(statusTypes), s.Name.Name) {
						continue
					}
					fields := map[string]string{}
					for _, fl := range st.Fields.List {
						if fl.Tag == nil || len(fl.Names) == 0 {
							continue
						}
						tag, _ := strconv.Unquote(fl.Tag.Value)
						json, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
						if json != "" && json != "-" {
							fields[json] = fl.Names[0].Name
							a.fieldUses[fl.Names[0].Name]++
						}
					}
					a.fields[s.Name.Name] = fields
				}
			}
		}
	}
	for _, t := range mapValues(statusTypes) {
		if a.fields[t] == nil {
			return nil, fmt.Errorf("api/v1alpha1: no struct %s", t)
		}
	}
	return a, nil
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// componentRefs returns, per component module, the keys its code references: directly,
// or through the functions of the shared modules it uses.
func componentRefs(root string, a *api) (map[string]map[key]bool, error) {
	idx := funcIndex{funcs: map[string]*funcInfo{}}
	for _, m := range shared {
		pkgs, err := parseDir(root, m)
		if err != nil {
			return nil, err
		}
		for dir, files := range pkgs {
			for _, f := range files {
				idx.add(importPath(dir), f)
			}
		}
	}
	out := map[string]map[key]bool{}
	for _, comp := range Components {
		if _, err := os.Stat(filepath.Join(root, comp)); os.IsNotExist(err) {
			continue // a row naming it fails: it reads nothing
		}
		pkgs, err := parseDir(root, comp)
		if err != nil {
			return nil, err
		}
		refs := map[key]bool{}
		add := func(k key) {
			if c, ok := strings.CutPrefix(string(k), "const:"); ok {
				if v, ok := a.consts[c]; ok {
					refs[key("cond:"+v)] = true
				}
				return
			}
			refs[k] = true
		}
		for _, files := range pkgs {
			for _, f := range files {
				keys, calls := references(f, "", nil)
				for k := range keys {
					add(k)
				}
				for c := range calls {
					for k := range idx.keys(c, map[string]bool{}) {
						add(k)
					}
				}
			}
		}
		out[comp] = refs
	}
	return out, nil
}

// funcInfo is what one function of a shared package references.
type funcInfo struct {
	keys  map[key]bool
	calls map[string]bool // "importpath.Name"
}

// funcIndex holds the top-level functions of the shared packages (methods are not
// followed: without types a call of one cannot be told from another).
type funcIndex struct{ funcs map[string]*funcInfo }

func (x *funcIndex) add(pkg string, f *file) {
	local := map[string]bool{}
	for _, d := range f.ast.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
			local[fd.Name.Name] = true
		}
	}
	for _, d := range f.ast.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || fd.Body == nil {
			continue
		}
		keys, calls := references(f, pkg, fd.Body)
		x.funcs[pkg+"."+fd.Name.Name] = &funcInfo{keys: keys, calls: calls}
	}
}

// keys are the keys a shared function references, through the shared functions it uses.
func (x *funcIndex) keys(name string, seen map[string]bool) map[key]bool {
	out := map[key]bool{}
	fi, ok := x.funcs[name]
	if !ok || seen[name] {
		return out
	}
	seen[name] = true
	for k := range fi.keys {
		out[k] = true
	}
	for c := range fi.calls {
		for k := range x.keys(c, seen) {
			out[k] = true
		}
	}
	return out
}

// references returns the keys node (the whole file when nil) references and the
// functions of the shared packages it names; pkg is the file's own import path when
// its bare identifiers may name functions of a shared package.
func references(f *file, pkg string, node ast.Node) (map[key]bool, map[string]bool) {
	keys, calls := map[key]bool{}, map[string]bool{}
	if node == nil {
		node = f.ast
	}
	ast.Inspect(node, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if inner, ok := x.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "Status" {
				keys[key("field:"+x.Sel.Name)] = true
			}
			p, name := f.qualified(x)
			switch {
			case p == APIPackage && strings.HasPrefix(name, "Condition"):
				keys[key("const:"+name)] = true
			case isShared(p):
				calls[p+"."+name] = true
			}
		case *ast.Ident:
			if pkg == APIPackage && strings.HasPrefix(x.Name, "Condition") {
				keys[key("const:"+x.Name)] = true
			}
			if pkg != "" {
				calls[pkg+"."+x.Name] = true
			}
		}
		return true
	})
	return keys, calls
}

func isShared(p string) bool {
	for _, m := range shared {
		if strings.HasPrefix(p, Repo+"/"+m+"/") || p == Repo+"/"+m {
			return true
		}
	}
	return false
}
