//go:build e2e

package rbacaudit

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// allowance excuses one unused permission of a component, for its reason. suites, when
// set, are the suites that use it: the entry excuses the permission only in a run that
// included none of them (make test runs only CI's suites).
type allowance struct {
	component, key string
	suites         []string
	reason         string
}

// Reasons shared by several entries.
const (
	eventSeries = "the event recorder patches an event that repeats within its window (a series) instead of creating another: only when the same event recurs"
)

var allowed = append([]allowance{
	{component: "acl-controller", key: "core/events patch (Role)", reason: eventSeries},
	{component: "backup-controller", key: "core/events patch (Role)", reason: eventSeries},
	{component: "cluster-controller", key: "core/events patch (Role)", reason: eventSeries},
	{component: "node-controller", key: "core/events patch (Role)", reason: eventSeries},
	{component: "tls-controller", key: "core/events patch (Role)", reason: eventSeries},
	{component: "webhooks", key: "core/events patch (Role)", reason: eventSeries},
	{component: "acl-controller", key: "events.k8s.io/events patch", reason: eventSeries},
	{component: "backup-controller", key: "events.k8s.io/events patch", reason: eventSeries},
	{component: "cluster-controller", key: "events.k8s.io/events patch", reason: eventSeries},
	{component: "node-controller", key: "events.k8s.io/events patch", reason: eventSeries},
	{component: "tls-controller", key: "events.k8s.io/events patch", reason: eventSeries},
}, append(secureMetrics(), reviewed...)...)

// secureMetrics excuses the token and access reviews of the metrics endpoint in runs
// without the security suite: the others install with metrics.secure=false.
func secureMetrics() []allowance {
	var out []allowance
	for _, c := range []string{"acl-controller", "backup-controller", "cluster-controller", "node-controller", "tls-controller", "webhooks"} {
		for _, k := range []string{"authentication.k8s.io/tokenreviews create", "authorization.k8s.io/subjectaccessreviews create"} {
			out = append(out, allowance{component: c, key: k, suites: []string{"security"},
				reason: "metrics over HTTPS (metrics.secure, the default) review each scrape's token; the suites but security install with metrics.secure=false"})
		}
	}
	return out
}

// TestRulesUsed fails on any permission of a component that its service account never
// used in the audit logs of the run (E2E_AUDIT_DIR, default .cache/localkube/audit; the
// files written since E2E_AUDIT_SINCE, RFC 3339, when set), and on any request RBAC
// refused. hack/e2e.sh runs it after the suites.
func TestRulesUsed(t *testing.T) {
	root, err := framework.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("E2E_AUDIT_DIR")
	if dir == "" {
		dir = filepath.Join(root, ".cache", "localkube", "audit")
	}
	var since time.Time
	if s := os.Getenv("E2E_AUDIT_SINCE"); s != "" {
		var err error
		if since, err = time.Parse(time.RFC3339, s); err != nil {
			t.Fatalf("E2E_AUDIT_SINCE: %v", err)
		}
	}
	var suites []string
	if s := os.Getenv("E2E_AUDIT_SUITES"); s != "" {
		suites = strings.Fields(s)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var reqs []Request
	read := 0
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil || fi.ModTime().Before(since) {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := ReadRequests(fh, framework.OperatorNamespace)
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		reqs = append(reqs, rs...)
		read++
	}
	if len(reqs) == 0 {
		t.Skipf("no request of the operator's service accounts in %d audit logs of %s (since %v): run the e2e suites on the local Kubernetes first", read, dir, since)
	}
	t.Logf("%d requests of the operator's service accounts in %d audit logs; suites %v", len(reqs), read, suites)

	grants := chartGrants(t, root)
	if len(grants) == 0 {
		t.Fatal("the chart rendered no rule")
	}
	stopping := Stopping(reqs)
	for i, r := range reqs {
		if !r.Forbidden {
			continue
		}
		if stopping[i] {
			t.Logf("%s was refused %s %s/%s %s/%s at %s after its pod's last allowed request: its rules were deleted while it stopped (an uninstall, or the component turned off)",
				r.ServiceAccount, r.Verb, r.APIGroup, r.Resource, r.Namespace, r.Name, r.At.Format(time.RFC3339Nano))
			continue
		}
		t.Errorf("%s was refused %s %s/%s %s/%s: the code needs a rule the chart lacks", r.ServiceAccount, r.Verb, r.APIGroup, r.Resource, r.Namespace, r.Name)
	}
	perms := Permissions(grants)
	unused := Unused(perms, reqs)
	for _, p := range unused {
		comp := strings.TrimPrefix(strings.TrimPrefix(p.ServiceAccount, framework.OperatorNamespace+"/"), framework.OperatorRelease+"-")
		excused := ""
		if p.Verb == "list" && usedWatch(p, perms, unused) {
			excused = "informers list through their watch (WatchList: client-go streams the initial list on this API server) and fall back to list on API servers without it (the chart supports Kubernetes 1.30 and later)"
		}
		for _, a := range allowed {
			if a.component != comp || a.key != p.Key() {
				continue
			}
			ran := false
			for _, s := range a.suites {
				ran = ran || slices.Contains(suites, s)
			}
			if len(a.suites) == 0 || !ran {
				excused = a.reason
			}
		}
		if excused != "" {
			t.Logf("%s: %s unused, allowed: %s", comp, p.Key(), excused)
			continue
		}
		t.Errorf("%s: %s is granted and was never used", comp, p.Key())
	}
}

// usedWatch says whether the watch that goes with a list permission (same component,
// group, resource and Role) was used: it is not among the unused.
func usedWatch(list Permission, perms, unused []Permission) bool {
	w := list
	w.Verb = "watch"
	granted := false
	for _, p := range perms {
		granted = granted || (p.ServiceAccount == w.ServiceAccount && p.Key() == w.Key())
	}
	if !granted {
		return false
	}
	for _, u := range unused {
		if u.ServiceAccount == w.ServiceAccount && u.Key() == w.Key() {
			return false
		}
	}
	return true
}

// chartGrants renders the chart as the suites install it and returns every rule bound
// to a service account of the operator's namespace.
func chartGrants(t *testing.T, root string) []Grant {
	t.Helper()
	out, err := exec.Command(filepath.Join(root, "hack", "tools", "bin", "helm"), "template", framework.OperatorRelease,
		filepath.Join(root, "charts", "valkey-operator"), "--namespace", framework.OperatorNamespace,
		"--kube-version", framework.KubernetesVersion, "--set", "metrics.secure=false").CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	type object struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Rules    []rbacv1.PolicyRule `json:"rules"`
		RoleRef  rbacv1.RoleRef      `json:"roleRef"`
		Subjects []rbacv1.Subject    `json:"subjects"`
	}
	roles := map[string]object{}
	var bindings []object
	for _, doc := range strings.Split(string(out), "\n---") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("rendered YAML: %v", err)
		}
		switch o.Kind {
		case "ClusterRole", "Role":
			roles[o.Kind+"/"+o.Metadata.Namespace+"/"+o.Metadata.Name] = o
		case "ClusterRoleBinding", "RoleBinding":
			bindings = append(bindings, o)
		}
	}
	var grants []Grant
	for _, b := range bindings {
		ns := ""
		if b.Kind == "RoleBinding" {
			ns = b.Metadata.Namespace
		}
		roleNS := ns
		if b.RoleRef.Kind == "ClusterRole" {
			roleNS = ""
		}
		role, ok := roles[b.RoleRef.Kind+"/"+roleNS+"/"+b.RoleRef.Name]
		if !ok {
			continue // a ClusterRole of Kubernetes (none today) or of another chart
		}
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != framework.OperatorNamespace {
				continue
			}
			for _, r := range role.Rules {
				grants = append(grants, Grant{ServiceAccount: s.Namespace + "/" + s.Name, Namespace: ns, Rule: r})
			}
		}
	}
	return grants
}
