package contract

import (
	"fmt"
	"go/ast"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/valkey-operator/valkey-operator/hack/devtools/importrules"
)

// Published is a Secret one controller makes for the others: the others find it through
// Field, never by its name.
type Published struct {
	// Builder is the function of the API package that builds the name.
	Builder string
	// Suffix ends every such name ({cluster} + Suffix).
	Suffix string
	// Producer is the module of the controller that makes it: the only one that may
	// build the name.
	Producer string
	// Field is the status field that names it, and Reader the API function that reads it.
	Field, Reader string
}

// PublishedNames are the Secrets the controllers publish for each other.
var PublishedNames = []Published{
	{Builder: "ACLSecretName", Suffix: "-acl", Producer: "acl-controller",
		Field: "status.acl.secretName", Reader: "v1alpha1.ACLSecretOf"},
	{Builder: "SystemUsersSecretName", Suffix: "-system-users", Producer: "acl-controller",
		Field: "status.acl.systemUsersSecretName", Reader: "v1alpha1.SystemUsersSecretOf"},
	{Builder: "TLSSecretName", Suffix: "-tls-accepted", Producer: "tls-controller",
		Field: "status.tls.acceptedSecretName", Reader: "v1alpha1.AcceptedTLSSecretOf"},
}

// nameExempt are the packages besides the producers that may spell the names, and why.
var nameExempt = map[string]string{
	"api/v1alpha1":   "defines the builders",
	"api/validation": "refuses a user's Secret named like the operator's own, of any cluster",
	// Test support: stands in for the producers in the controllers' integration suites.
	"internal/testsuite": "creates members as the cluster-controller would, for the integration suites",
}

// nameUnchecked are the workspace modules that are not the operator: tests and tools
// may look a Secret up by name to check what the operator did.
var nameUnchecked = []string{"e2e", "hack/devtools", "localkube"}

// Names returns every place of the operator's code (tests left out) outside a producer
// that builds the name of a published Secret by convention: a use of its builder or a
// string literal ending in its suffix.
func Names(root string) ([]Violation, error) {
	mods, err := importrules.WorkspaceModules(root)
	if err != nil {
		return nil, err
	}
	var out []Violation
	for _, m := range mods {
		if slices.Contains(nameUnchecked, m) {
			continue
		}
		pkgs, err := parseDir(root, m)
		if err != nil {
			return nil, err
		}
		for dir, files := range pkgs {
			if _, ok := nameExempt[filepath.ToSlash(dir)]; ok {
				continue
			}
			for _, f := range files {
				out = append(out, namesIn(f, m)...)
			}
		}
	}
	slices.SortFunc(out, func(a, b Violation) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

// namesIn checks one file of module mod.
func namesIn(f *file, mod string) []Violation {
	var out []Violation
	report := func(n ast.Node, p Published, how string) {
		out = append(out, Violation{Pos: f.pos(n), Reason: fmt.Sprintf(
			"%s builds the name of the %s's Secret {cluster}%s by convention: read %s (%s) and wait on the %s while it is empty",
			how, p.Producer, p.Suffix, p.Field, p.Reader, p.Producer)})
	}
	ast.Inspect(f.ast, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if path, name := f.qualified(x); path == APIPackage {
				for _, p := range PublishedNames {
					if name == p.Builder && mod != p.Producer {
						report(x, p, "v1alpha1."+name)
					}
				}
			}
		case *ast.BasicLit:
			if x.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(x.Value)
			if err != nil {
				return true
			}
			for _, p := range PublishedNames {
				if mod != p.Producer && endsName(s, p.Suffix) {
					report(x, p, "the literal "+x.Value)
				}
			}
		}
		return true
	})
	return out
}

// endsName reports whether suffix ends a name in s: it is followed by the end of s or by
// a character no Kubernetes name holds.
func endsName(s, suffix string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], suffix)
		if j < 0 {
			return false
		}
		end := i + j + len(suffix)
		if end == len(s) || !nameChar(s[end]) {
			return true
		}
		i = end
	}
}

func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.'
}
