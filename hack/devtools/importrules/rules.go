// Package importrules holds the project's import rules and checks a checkout against
// them: which of the workspace's modules each module's packages may import, and which
// outside packages a module must never depend on, even through a library. `make lint`
// runs the check (hack/devtools/cmd/importcheck); adding a module means adding its line
// to Rules (a test fails for a module of go.work without one).
package importrules

import (
	"fmt"
	"slices"
	"strings"
)

// Repo is the import path prefix of the workspace's modules: Repo + "/" + folder.
const Repo = "github.com/valkey-operator/valkey-operator"

// Rule is what one module (its folder in the workspace) may import.
type Rule struct {
	Module string
	// May lists the other modules whose packages this module's packages may import
	// directly ("*": any). A module may always import its own packages.
	May []string
	// Never lists import path prefixes no package of the module may depend on, directly
	// or through any library ("std-only": nothing outside the standard library).
	Never []string
	// Why says what the rule keeps.
	Why string
	// Packages are stricter rules for some of the module's packages.
	Packages []PackageRule
	// Confine lists modules of ours that only some packages of this module may import.
	Confine []Confinement
}

// Confinement keeps the imports of one module of ours to some packages of the module
// that may import it: the others reach it only through those.
type Confinement struct {
	// Module is the confined module's folder.
	Module string
	// Packages are the folders whose packages (and those under them) may import it.
	Packages []string
	// Why says what the confinement keeps.
	Why string
}

// PackageRule is what some packages of a module must never depend on, directly or
// through any library or package of their own module, or never import themselves.
type PackageRule struct {
	// Package is a folder of the module ("internal/backup"): that package and those
	// under it.
	Package string
	// Never lists import path prefixes, as Rule.Never.
	Never []string
	// NoImport lists import path prefixes the packages (and their tests) must not import
	// directly; what they reach through their other imports is not checked.
	NoImport []string
	// Why says what the rule keeps.
	Why string
}

// controllers may use the API, the Valkey library, the config rules and the shared code,
// never another controller or the webhooks: they talk only through status.
var controllers = []string{"api", "valkey", "valkeyconf", "internal"}

// heavy is what no operator process links: k8s.io/apiserver's packages (and the gRPC,
// CEL and OpenTelemetry they bring) run start-up code that keeps about 17 MiB of each
// process resident, for nothing the operator uses (docs/scale.md).
var heavy = []string{"k8s.io/apiserver/"}

// lean is the reason heavy is refused, appended to a rule's own.
const lean = "; no k8s.io/apiserver: it costs each process about 17 MiB at rest"

// lab is the project's test and build machinery: the local Kubernetes and the image
// builder. No product module depends on it, even through a library.
var lab = []string{Repo + "/localkube", Repo + "/images"}

// labWhy is the reason the lab is refused, in place of the rule's own.
const labWhy = "the operator ships no part of the lab: the local Kubernetes and the image builder are for the suites and the release"

// product is what every module the operator ships must never depend on: the lab, and
// more.
func product(more ...string) []string { return append(slices.Clone(lab), more...) }

// Rules are the import rules of the project.
var Rules = []Rule{
	{Module: "valkeyconf", Never: []string{"std-only"},
		Why: "the config key tables are read by everything, so they depend on nothing"},
	{Module: "api", May: []string{"valkeyconf"}, Never: product("sigs.k8s.io/controller-runtime", "github.com/redis/rueidis"),
		Why: "consumers of the API types get apimachinery and nothing of the operator's machinery"},
	{Module: "valkey", May: []string{"valkeyconf"}, Never: product("k8s.io/", "sigs.k8s.io/"),
		Why: "the Valkey admin library knows nothing of Kubernetes"},
	{Module: "internal", May: []string{"api", "valkey", "valkeyconf"}, Never: product(heavy...),
		Why: "what the controllers share depends on no controller" + lean},
	{Module: "cluster-controller", May: controllers, Never: product(heavy...), Why: "controllers talk only through status" + lean,
		Packages: []PackageRule{{Package: "internal/plan",
			NoImport: []string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go", "github.com/redis/rueidis",
				Repo + "/internal/valkeyconn", "github.com/prometheus/"},
			Why: "the planners decide from the observed cluster alone: the reconciler (internal/cluster) reads, writes, talks to the servers and counts"}}},
	{Module: "node-controller", May: controllers, Never: product(heavy...), Why: "controllers talk only through status" + lean},
	{Module: "acl-controller", May: controllers, Never: product(heavy...), Why: "controllers talk only through status" + lean},
	{Module: "tls-controller", May: controllers, Never: product(heavy...), Why: "controllers talk only through status" + lean},
	{Module: "backup-controller", May: controllers, Never: product(heavy...), Why: "controllers talk only through status" + lean,
		Packages: []PackageRule{{Package: "internal/backup",
			Never: []string{"github.com/aws/", "gocloud.dev/", Repo + "/backup-controller/internal/objstore"},
			Why:   "the controller never reaches an object store: every store request runs in a Job in the tenant's namespace"}}},
	{Module: "manager", May: []string{"internal", "cluster-controller", "node-controller", "acl-controller", "tls-controller", "backup-controller"},
		Never: product(heavy...),
		Why:   "one process runs the controllers' components side by side (their exported component packages; Go keeps their internals out); it adds no logic of its own" + lean},
	{Module: "webhooks", May: []string{"api", "valkeyconf", "internal"}, Never: product(heavy...),
		Why: "admission needs the API and its rules, never a controller or a Valkey connection" + lean},
	{Module: "kubectl-valkey", May: []string{"api"}, Never: product("github.com/redis/rueidis", Repo+"/valkey"),
		Why: "the plugin acts through the API (requests the controllers carry out), never on a server itself"},
	{Module: "images", Why: "the image builder serves the local Kubernetes, kind, the suites and the release alike, and knows none of them"},
	{Module: "localkube", May: []string{"images"}, Why: "the local Kubernetes is one provider of the suites, independent of the operator"},
	{Module: "hack/devtools", May: []string{"valkeyconf"}, Why: "the doc generator reads the config tables"},
	{Module: "hack/release", May: []string{"images"}, Why: "the release tool builds the operator's image with the image builder, never with the local Kubernetes"},
	{Module: "e2e", May: []string{"*"}, Why: "the suites may drive and inspect everything",
		Confine: []Confinement{{Module: "localkube", Packages: []string{"framework"},
			Why: "the local Kubernetes is a provider like kind: the suites reach it only through the framework's providers"}}},
}

// RuleOf returns the rule of a module folder.
func RuleOf(module string) (Rule, bool) {
	for _, r := range Rules {
		if r.Module == module {
			return r, true
		}
	}
	return Rule{}, false
}

// Markdown renders Rules as the table docs/architecture.md shows.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| module | may import | never depends on | why |\n|---|---|---|---|\n")
	for _, r := range Rules {
		may := "nothing of ours"
		switch {
		case len(r.May) == 1 && r.May[0] == "*":
			may = "every module"
		case len(r.May) > 0:
			may = "`" + strings.Join(r.May, "`, `") + "`"
		}
		never := "—"
		switch {
		case len(r.Never) == 1 && r.Never[0] == "std-only":
			never = "anything outside the standard library"
		case len(r.Never) > 0:
			never = "`" + strings.Join(r.Never, "`, `") + "`"
		}
		why := r.Why
		for _, p := range r.Packages {
			if never == "—" {
				never = ""
			} else {
				never += "; "
			}
			var parts []string
			if len(p.Never) > 0 {
				parts = append(parts, fmt.Sprintf("in `%s`: `%s`", p.Package, strings.Join(p.Never, "`, `")))
			}
			if len(p.NoImport) > 0 {
				parts = append(parts, fmt.Sprintf("in `%s`, as a direct import: `%s`", p.Package, strings.Join(p.NoImport, "`, `")))
			}
			never += strings.Join(parts, "; ")
			why += "; " + p.Why
		}
		for _, c := range r.Confine {
			may += fmt.Sprintf("; `%s` only from `%s`", c.Module, strings.Join(c.Packages, "`, `"))
			why += "; " + c.Why
		}
		// The workspace's own modules by their folders.
		never = strings.ReplaceAll(never, Repo+"/", "")
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.Module, may, never, why)
	}
	return b.String()
}

// Splice replaces the text between the markers <!-- begin NAME --> and <!-- end NAME -->
// of doc with body: the way generated tables live in hand-written documents.
func Splice(doc, name, body string) (string, error) {
	begin, end := "<!-- begin "+name+" -->\n", "<!-- end "+name+" -->"
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %q ... %q markers", strings.TrimSpace(begin), end)
	}
	return doc[:i+len(begin)] + body + doc[j:], nil
}
