package importrules

import (
	"strings"
	"testing"
)

// TestRepoKeepsTheRules runs the check on this checkout.
func TestRepoKeepsTheRules(t *testing.T) {
	vs, err := CheckRepo("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}

// TestCheckRefusesAnImportOfAnotherController runs the check on a fixture whose
// cluster-controller imports the node-controller.
func TestCheckRefusesAnImportOfAnotherController(t *testing.T) {
	vs, err := CheckRepo("testdata/fixture")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 {
		t.Fatalf("want one violation, got %v", vs)
	}
	v := vs[0]
	if v.Module != "cluster-controller" || !strings.HasSuffix(v.Import, "/node-controller/node") ||
		!strings.Contains(v.Reason, "may import only api, valkey, valkeyconf, internal") {
		t.Errorf("violation %v", v)
	}
}

func TestCheck(t *testing.T) {
	mods := []string{"api", "valkey", "valkeyconf", "webhooks", "internal", "backup-controller"}
	std := func(p string) bool { return !strings.Contains(p, ".") }
	for _, tc := range []struct {
		name string
		rule string
		pkg  Package
		want string // substring of the one violation, "" for none
	}{
		{"webhooks may import the API", "webhooks", Package{ImportPath: Repo + "/webhooks/x", Imports: []string{Repo + "/api/v1alpha1"}}, ""},
		{"webhooks may not import the Valkey library", "webhooks", Package{ImportPath: Repo + "/webhooks/x", Imports: []string{Repo + "/valkey"}}, "webhooks may import only api, valkeyconf, internal"},
		{"a module may import itself", "valkey", Package{ImportPath: Repo + "/valkey", Imports: []string{Repo + "/valkey/valkeytest"}}, ""},
		{"the library must not reach Kubernetes through a dependency", "valkey", Package{ImportPath: Repo + "/valkey", Deps: []string{"example.com/lib", "k8s.io/apimachinery/pkg/types"}}, "must never depend on k8s.io/"},
		{"the config tables take only the standard library", "valkeyconf", Package{ImportPath: Repo + "/valkeyconf", Imports: []string{"strings", "example.com/x"}}, "std-only"},
		{"the API without controller-runtime", "api", Package{ImportPath: Repo + "/api/v1alpha1", Deps: []string{"sigs.k8s.io/controller-runtime/pkg/scheme"}}, "controller-runtime"},
		{"the backup controller never reaches a store, even through a package of its own", "backup-controller",
			Package{ImportPath: Repo + "/backup-controller/internal/backup", Imports: []string{Repo + "/backup-controller/internal/job"},
				Deps: []string{Repo + "/backup-controller/internal/job", "github.com/aws/aws-sdk-go-v2/service/s3"}},
			"backup-controller/internal/backup must never depend on github.com/aws/"},
		{"the backup controller's packages below it neither", "backup-controller",
			Package{ImportPath: Repo + "/backup-controller/internal/backup/sub", Deps: []string{"gocloud.dev/blob"}}, "must never depend on gocloud.dev/"},
		{"the Jobs' program reaches the store", "backup-controller",
			Package{ImportPath: Repo + "/backup-controller/internal/job", Deps: []string{Repo + "/backup-controller/internal/objstore", "github.com/aws/aws-sdk-go-v2/service/s3", "gocloud.dev/blob"}}, ""},
		{"a package whose name starts like it is another", "backup-controller",
			Package{ImportPath: Repo + "/backup-controller/internal/backupx", Deps: []string{"gocloud.dev/blob"}}, ""},
		{"the planners import no Kubernetes client", "cluster-controller",
			Package{ImportPath: Repo + "/cluster-controller/internal/plan", Imports: []string{"sigs.k8s.io/controller-runtime/pkg/client"}},
			"cluster-controller/internal/plan must not import sigs.k8s.io/controller-runtime"},
		{"nor do their test fixtures", "cluster-controller",
			Package{ImportPath: Repo + "/cluster-controller/internal/plan/plantest", Imports: []string{Repo + "/internal/valkeyconn"}},
			"must not import " + Repo + "/internal/valkeyconn"},
		{"the planners may reach a client through a library they import", "cluster-controller",
			Package{ImportPath: Repo + "/cluster-controller/internal/plan", Imports: []string{Repo + "/valkey"}, Deps: []string{"github.com/redis/rueidis"}}, ""},
		{"the reconciler imports the clients", "cluster-controller",
			Package{ImportPath: Repo + "/cluster-controller/internal/cluster", Imports: []string{"sigs.k8s.io/controller-runtime/pkg/client"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := RuleOf(tc.rule)
			if !ok {
				t.Fatalf("no rule %s", tc.rule)
			}
			vs := Check(r, []Package{tc.pkg}, mods, std)
			switch {
			case tc.want == "" && len(vs) > 0:
				t.Errorf("unexpected violations %v", vs)
			case tc.want != "" && (len(vs) != 1 || !strings.Contains(vs[0].Reason, tc.want)):
				t.Errorf("violations %v, want one with %q", vs, tc.want)
			}
		})
	}
}

func TestSplice(t *testing.T) {
	doc := "intro\n<!-- begin t -->\nold\n<!-- end t -->\nrest\n"
	got, err := Splice(doc, "t", "new\n")
	if err != nil || got != "intro\n<!-- begin t -->\nnew\n<!-- end t -->\nrest\n" {
		t.Errorf("Splice = %q, %v", got, err)
	}
	if _, err := Splice("no markers", "t", "x"); err == nil {
		t.Error("Splice without markers: no error")
	}
}

func TestMarkdownListsEveryRule(t *testing.T) {
	md := Markdown()
	for _, r := range Rules {
		if !strings.Contains(md, "| `"+r.Module+"` |") {
			t.Errorf("the table has no row for %s", r.Module)
		}
	}
}

// TestCheckRefusesTheLabOutsideTheFramework runs the check on a fixture whose webhooks
// import the local Kubernetes, and whose suites import it past the e2e framework.
func TestCheckRefusesTheLabOutsideTheFramework(t *testing.T) {
	vs, err := CheckRepo("testdata/lab")
	if err != nil {
		t.Fatal(err)
	}
	var product, suite bool
	for _, v := range vs {
		switch {
		case v.Module == "webhooks" && v.Package == Repo+"/webhooks/admit" && v.Import == Repo+"/localkube" &&
			strings.Contains(v.Reason, "webhooks must never depend on "+Repo+"/localkube (the operator ships no part of the lab"):
			product = true
		case v.Module == "webhooks" && strings.Contains(v.Reason, "webhooks may import only"):
		case v.Module == "e2e" && v.Package == Repo+"/e2e/tests/suite" &&
			strings.Contains(v.Reason, "only e2e/framework may import localkube"):
			suite = true
		default:
			t.Errorf("unexpected violation %v", v)
		}
	}
	if !product {
		t.Errorf("no violation for the webhooks' import of localkube in %v", vs)
	}
	if !suite {
		t.Errorf("no violation for the suite's import of localkube in %v", vs)
	}
}
