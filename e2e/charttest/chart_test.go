// Package charttest renders the Helm chart with helm itself for each combination of
// toggles a user can set, and asserts what comes out: which objects exist, what the
// webhook configuration looks like in each certificate mode, and that every ClusterRole is
// the minimum the code asks for (no wildcard, no Secret access where the design says none).
package charttest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// kubeVersion is the Kubernetes version the chart is rendered for (the local
// Kubernetes'; helm's own default, 1.20, is below the chart's kubeVersion).
const kubeVersion = "1.37.2"

var components = map[string]string{
	"clusterController": "cluster-controller",
	"nodeController":    "node-controller",
	"aclController":     "acl-controller",
	"tlsController":     "tls-controller",
	"backupController":  "backup-controller",
	"webhooks":          "webhooks",
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := framework.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := repoRoot(t)
	bin := filepath.Join(root, "hack", "tools", "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("helm is not installed at %s: run `make tools`", bin)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = root
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// render runs helm template with --set pairs and returns the objects by "Kind/name".
func render(t *testing.T, sets ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	return renderWith(t, nil, sets...)
}

// renderWith is render on a cluster that also serves apiVersions (e.g. the Prometheus
// Operator's monitoring.coreos.com/v1/PodMonitor).
func renderWith(t *testing.T, apiVersions []string, sets ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", "vko", "charts/valkey-operator", "--namespace", "vko", "--kube-version", kubeVersion}
	for _, v := range apiVersions {
		args = append(args, "--api-versions", v)
	}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]*unstructured.Unstructured{}
	for _, doc := range strings.Split(out, "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("parse rendered YAML: %v\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		objs[u.GetKind()+"/"+u.GetName()] = u
	}
	return objs
}

func TestLint(t *testing.T) {
	if out, err := helm(t, "lint", "--strict", "--kube-version", kubeVersion, "charts/valkey-operator"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestDefaultsRenderEveryComponent(t *testing.T) {
	objs := render(t)
	for _, name := range components {
		for _, kind := range []string{"Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"} {
			if objs[kind+"/vko-"+name] == nil {
				t.Errorf("missing %s/vko-%s", kind, name)
			}
		}
		if objs["Service/vko-"+name+"-metrics"] == nil {
			t.Errorf("missing metrics Service of %s", name)
		}
	}
	for _, crd := range []string{"valkeyclusters.valkey.io", "valkeynodes.valkey.io"} {
		c := objs["CustomResourceDefinition/"+crd]
		if c == nil {
			t.Fatalf("missing CRD %s", crd)
		}
		if c.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s is not kept on uninstall by default", crd)
		}
	}
}

// optional are the components that can be turned off alone; the cluster-, node- and
// acl-controllers form a cluster together and are turned off together (with the others),
// as TestRefusesTogglesThatCannotWork shows.
var optional = []string{"tlsController", "backupController", "webhooks"}

func TestEachComponentCanBeTurnedOff(t *testing.T) {
	for _, key := range optional {
		name := components[key]
		t.Run(key, func(t *testing.T) {
			objs := render(t, key+".enabled=false")
			for id := range objs {
				if strings.HasSuffix(id, "/vko-"+name) || strings.HasSuffix(id, "/vko-"+name+"-metrics") {
					t.Errorf("%s rendered with %s.enabled=false", id, key)
				}
			}
			for other, otherName := range components {
				if other != key && objs["Deployment/vko-"+otherName] == nil {
					t.Errorf("turning off %s removed %s", key, otherName)
				}
			}
			if key == "webhooks" && objs["ValidatingWebhookConfiguration/vko-webhooks"] != nil {
				t.Error("a webhook configuration without webhooks would block every write")
			}
		})
	}
}

// TestRefusesTogglesThatCannotWork: a cluster forms only with the cluster-, node- and
// acl-controllers, so the chart refuses to turn one of them off alone, or to run the
// tls- or backup-controller without them, naming the values; with every controller off
// (the CRDs and the webhooks alone) it renders.
func TestRefusesTogglesThatCannotWork(t *testing.T) {
	core := []string{"clusterController.enabled=false", "nodeController.enabled=false", "aclController.enabled=false"}
	allOff := append(slices.Clone(core), "tlsController.enabled=false", "backupController.enabled=false")
	for _, tc := range []struct {
		name string
		sets []string
		want string // "" when it renders
	}{
		{name: "the acl-controller off", sets: []string{"aclController.enabled=false"},
			want: "aclController.enabled=false while clusterController.enabled=true, nodeController.enabled=true: " +
				"clusterController, nodeController and aclController must be all enabled or all disabled"},
		{name: "the node-controller off", sets: []string{"nodeController.enabled=false"},
			want: "nodeController.enabled=false while clusterController.enabled=true, aclController.enabled=true"},
		{name: "the cluster-controller off, combined", sets: []string{"controllers.combined=true", "clusterController.enabled=false"},
			want: "clusterController.enabled=false while nodeController.enabled=true, aclController.enabled=true"},
		{name: "the tls-controller without the three", sets: append(slices.Clone(core), "backupController.enabled=false"),
			want: "tlsController.enabled=true while clusterController, nodeController and aclController are disabled"},
		{name: "the backup-controller without the three", sets: append(slices.Clone(core), "tlsController.enabled=false"),
			want: "backupController.enabled=true while clusterController, nodeController and aclController are disabled"},
		{name: "every controller off: the CRDs and the webhooks", sets: allOff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "vko", "charts/valkey-operator", "--namespace", "vko", "--kube-version", kubeVersion}
			for _, s := range tc.sets {
				args = append(args, "--set", s)
			}
			out, err := helm(t, args...)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "":
				if !strings.Contains(out, "kind: ValidatingWebhookConfiguration") {
					t.Errorf("the CRDs and webhooks release does not render the webhooks:\n%s", out)
				}
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Errorf("rendered, or failed without naming the values: %v; want %q", err, tc.want)
			}
		})
	}
	objs := render(t, allOff...)
	for id := range objs {
		if strings.HasPrefix(id, "Deployment/") && id != "Deployment/vko-webhooks" {
			t.Errorf("%s rendered with every controller off", id)
		}
	}
}

func TestCRDsToggles(t *testing.T) {
	if objs := render(t, "crds.enabled=false"); objs["CustomResourceDefinition/valkeyclusters.valkey.io"] != nil {
		t.Error("crds.enabled=false still renders the CRDs")
	}
	objs := render(t, "crds.keep=false")
	if c := objs["CustomResourceDefinition/valkeyclusters.valkey.io"]; c == nil || c.GetAnnotations()["helm.sh/resource-policy"] != "" {
		t.Error("crds.keep=false must drop the keep policy")
	}
}

func webhookPolicies(t *testing.T, objs map[string]*unstructured.Unstructured) []string {
	t.Helper()
	cfg := objs["ValidatingWebhookConfiguration/vko-webhooks"]
	if cfg == nil {
		t.Fatal("no webhook configuration")
	}
	hooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
	var out []string
	for _, h := range hooks {
		p, _, _ := unstructured.NestedString(h.(map[string]any), "failurePolicy")
		out = append(out, p)
	}
	return out
}

func deploymentArgs(objs map[string]*unstructured.Unstructured, name string) string {
	d := objs["Deployment/vko-"+name]
	if d == nil {
		return ""
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "args")
	return strings.Join(args, " ")
}

func TestCertificateModes(t *testing.T) {
	t.Run("selfSigned", func(t *testing.T) {
		objs := render(t)
		if got := webhookPolicies(t, objs); strings.Join(got, ",") != "Fail,Fail,Fail,Fail" {
			t.Errorf("self-signed policies = %v: the chart owns them and fails closed (the rotator only injects the CA)", got)
		}
		if a := deploymentArgs(objs, "webhooks"); !strings.Contains(a, "--cert-mode=self-signed") || !strings.Contains(a, "--cert-secret=vko/vko-webhooks-cert") {
			t.Errorf("args = %s", a)
		}
		if objs["Certificate/vko-webhooks"] != nil {
			t.Error("self-signed mode needs no cert-manager Certificate")
		}
	})
	t.Run("certManager", func(t *testing.T) {
		objs := render(t, "webhooks.certificates.mode=certManager")
		if objs["Certificate/vko-webhooks"] == nil || objs["Issuer/vko-webhooks"] == nil {
			t.Fatal("certManager mode needs a Certificate and an Issuer")
		}
		cfg := objs["ValidatingWebhookConfiguration/vko-webhooks"]
		if cfg.GetAnnotations()["cert-manager.io/inject-ca-from"] != "vko/vko-webhooks" {
			t.Error("the CA must be injected by cert-manager")
		}
		if got := webhookPolicies(t, objs); strings.Join(got, ",") != "Fail,Fail,Fail,Fail" {
			t.Errorf("policies = %v", got)
		}
		withIssuer := render(t, "webhooks.certificates.mode=certManager", "webhooks.certificates.issuerRef.name=corp", "webhooks.certificates.issuerRef.kind=ClusterIssuer")
		if withIssuer["Issuer/vko-webhooks"] != nil {
			t.Error("an issuerRef replaces the self-signed Issuer")
		}
	})
	t.Run("external", func(t *testing.T) {
		objs := render(t, "webhooks.certificates.mode=external", "webhooks.certificates.secretName=mine", "webhooks.certificates.caBundle=Q0E=")
		if a := deploymentArgs(objs, "webhooks"); !strings.Contains(a, "--cert-mode=external") || !strings.Contains(a, "--cert-dir=/certs") {
			t.Errorf("args = %s", a)
		}
		d := objs["Deployment/vko-webhooks"]
		vols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
		found := false
		for _, v := range vols {
			if name, _, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName"); name == "mine" {
				found = true
			}
		}
		if !found {
			t.Error("the external Secret is not mounted")
		}
	})
}

func TestWatchNamespacesAndImages(t *testing.T) {
	objs := render(t, "watchNamespaces={a,b}", "image.tag=v1", "nodeController.image.repository=other/node")
	if a := deploymentArgs(objs, "cluster-controller"); !strings.Contains(a, "--watch-namespaces=a,b") || !strings.Contains(a, "--fast-failover=true") {
		t.Errorf("args = %s", a)
	}
	if a := deploymentArgs(render(t, "clusterController.fastFailover=false"), "cluster-controller"); !strings.Contains(a, "--fast-failover=false") {
		t.Errorf("fastFailover off: args = %s", a)
	}
	image := func(name string) string {
		d := objs["Deployment/vko-"+name]
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		img, _, _ := unstructured.NestedString(cs[0].(map[string]any), "image")
		return img
	}
	if got := image("cluster-controller"); got != "valkey-operator:v1" {
		t.Errorf("shared image = %s", got)
	}
	if got := image("node-controller"); got != "other/node:v1" {
		t.Errorf("overridden image = %s", got)
	}
	objs = render(t, "image.registry=registry.example.com:5000", "image.repository=team/valkey-operator")
	if got := image("acl-controller"); got != "registry.example.com:5000/team/valkey-operator:"+chartAppVersion(t) {
		t.Errorf("image with a registry and the default tag = %s", got)
	}
}

// chartAppVersion reads the chart's appVersion, which is the VERSION file's.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "charts", "valkey-operator", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
		Version    string `json:"version"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	v, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(v)); c.AppVersion != want || c.Version != want {
		t.Fatalf("Chart.yaml version %s, appVersion %s; VERSION says %s (run make generate)", c.Version, c.AppVersion, want)
	}
	return c.AppVersion
}

func TestPodSecurityIsRestricted(t *testing.T) {
	objs := render(t)
	for _, name := range components {
		d := objs["Deployment/vko-"+name]
		spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
		if v, _, _ := unstructured.NestedBool(spec, "securityContext", "runAsNonRoot"); !v {
			t.Errorf("%s: runAsNonRoot", name)
		}
		if v, _, _ := unstructured.NestedString(spec, "securityContext", "seccompProfile", "type"); v != "RuntimeDefault" {
			t.Errorf("%s: seccomp %q", name, v)
		}
		cs, _, _ := unstructured.NestedSlice(spec, "containers")
		c := cs[0].(map[string]any)
		if v, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem"); !v {
			t.Errorf("%s: readOnlyRootFilesystem", name)
		}
		if v, _, _ := unstructured.NestedBool(c, "securityContext", "allowPrivilegeEscalation"); v {
			t.Errorf("%s: allowPrivilegeEscalation", name)
		}
		if v, _, _ := unstructured.NestedStringSlice(c, "securityContext", "capabilities", "drop"); len(v) != 1 || v[0] != "ALL" {
			t.Errorf("%s: capabilities drop %v", name, v)
		}
	}
}

func TestSchemaRefusesUnknownKeys(t *testing.T) {
	if _, err := helm(t, "template", "vko", "charts/valkey-operator", "--kube-version", kubeVersion, "--set", "clusterControler.enabled=false"); err == nil {
		t.Error("a misspelt key must be refused by values.schema.json")
	}
	if _, err := helm(t, "template", "vko", "charts/valkey-operator", "--kube-version", kubeVersion, "--set", "webhooks.certificates.mode=magic"); err == nil {
		t.Error("an unknown certificate mode must be refused")
	}
}

// rules flattens a ClusterRole into "group/resource:verb" strings.
func rules(t *testing.T, role *unstructured.Unstructured) []string {
	t.Helper()
	rs, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var out []string
	for _, r := range rs {
		m := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(m, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
		for _, g := range groups {
			for _, res := range resources {
				for _, v := range verbs {
					out = append(out, g+"/"+res+":"+v)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestClusterRolesAreMinimal(t *testing.T) {
	objs := render(t)
	for _, name := range components {
		role := objs["ClusterRole/vko-"+name]
		if role == nil {
			t.Fatalf("no ClusterRole for %s", name)
		}
		for _, r := range rules(t, role) {
			if strings.Contains(r, "*") {
				t.Errorf("%s: wildcard rule %s", name, r)
			}
			parts := strings.SplitN(r, ":", 2)
			res, verb := parts[0], parts[1]
			// Only the node-controller makes pods, workloads and volumes.
			if name != "node-controller" && (verb == "create" || verb == "delete") &&
				(res == "/pods" || res == "apps/statefulsets" || res == "apps/deployments" || res == "/persistentvolumeclaims") {
				t.Errorf("%s may %s %s: only the node-controller makes pods, workloads and volumes", name, verb, res)
			}
			// Only the acl- and tls-controllers make or change Secrets besides the webhooks' own.
			if res == "/secrets" && (verb == "create" || verb == "update" || verb == "patch" || verb == "delete") &&
				name != "acl-controller" && name != "tls-controller" && name != "webhooks" {
				t.Errorf("%s may %s Secrets", name, verb)
			}
		}
	}
	// The webhooks touch nothing they do not validate or serve with: cluster-wide, only
	// their own webhook configuration, by name (and the reviews of their metrics'
	// clients).
	for _, r := range rules(t, objs["ClusterRole/vko-webhooks"]) {
		switch r {
		case "admissionregistration.k8s.io/validatingwebhookconfigurations:get", "admissionregistration.k8s.io/validatingwebhookconfigurations:list",
			"admissionregistration.k8s.io/validatingwebhookconfigurations:watch", "admissionregistration.k8s.io/validatingwebhookconfigurations:patch",
			"authentication.k8s.io/tokenreviews:create", "authorization.k8s.io/subjectaccessreviews:create":
		default:
			t.Errorf("webhooks: unexpected cluster-wide rule %s", r)
		}
	}
	if names := resourceNames(objs["ClusterRole/vko-webhooks"]); !slices.Equal(names, []string{"vko-webhooks"}) {
		t.Errorf("webhooks may patch webhook configurations %v, want only their own", names)
	}
	// In their namespace: their certificate Secret by name (creating it cannot be
	// limited to a name), leader election, events.
	own := objs["Role/vko-webhooks-own"]
	if own == nil || own.GetNamespace() != "vko" {
		t.Fatalf("no Role of the webhooks in the release's namespace")
	}
	if names := resourceNames(own); !slices.Equal(names, []string{"vko-webhooks-cert"}) {
		t.Errorf("webhooks' Secret rule names %v", names)
	}
	for _, r := range rules(t, own) {
		switch r {
		case "/secrets:create", "/secrets:get", "/secrets:list", "/secrets:watch", "/secrets:update",
			"coordination.k8s.io/leases:create", "coordination.k8s.io/leases:get", "coordination.k8s.io/leases:update",
			"/events:create", "/events:patch":
		default:
			t.Errorf("webhooks' Role: unexpected rule %s", r)
		}
	}
	// Leader election happens in the release's namespace only.
	for _, name := range components {
		for _, r := range rules(t, objs["ClusterRole/vko-"+name]) {
			if strings.HasPrefix(r, "coordination.k8s.io/leases") {
				t.Errorf("%s: cluster-wide %s", name, r)
			}
		}
	}
}

// resourceNames lists the resourceNames of every rule of a role.
func resourceNames(role *unstructured.Unstructured) []string {
	rs, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var out []string
	for _, r := range rs {
		names, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resourceNames")
		out = append(out, names...)
	}
	return out
}

// With watchNamespaces, each component's rules on namespaced resources are Roles in
// those namespaces; ClusterRoles keep only what is cluster-scoped (StorageClasses and
// PriorityClasses for the node-controller, the webhook configuration).
func TestWatchNamespacesUseRoles(t *testing.T) {
	out, err := helm(t, "template", "vko", "charts/valkey-operator", "--namespace", "vko", "--kube-version", kubeVersion,
		"--set", "watchNamespaces={a,b}")
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string][]string{} // "Kind namespace/name" -> rules
	for _, doc := range strings.Split(out, "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		switch u.GetKind() {
		case "ClusterRole", "Role":
			roles[u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName()] = rules(t, u)
		case "ClusterRoleBinding":
			if ref, _, _ := unstructured.NestedString(m, "roleRef", "name"); ref != u.GetName() {
				t.Errorf("%s binds %s", u.GetName(), ref)
			}
		}
	}
	for _, name := range components {
		for _, r := range roles["ClusterRole /vko-"+name] {
			res := strings.SplitN(r, ":", 2)[0]
			switch res {
			case "storage.k8s.io/storageclasses", "scheduling.k8s.io/priorityclasses", "admissionregistration.k8s.io/validatingwebhookconfigurations",
				// The node a NodePort member runs on (spec.externalAccess).
				"/nodes",
				// The metrics endpoint checks its clients' tokens and rights.
				"authentication.k8s.io/tokenreviews", "authorization.k8s.io/subjectaccessreviews":
			default:
				t.Errorf("%s: cluster-wide rule %s with watchNamespaces set", name, r)
			}
		}
		if name == "webhooks" {
			continue
		}
		for _, ns := range []string{"a", "b"} {
			rs := roles["Role "+ns+"/vko-"+name]
			if !slices.Contains(rs, "valkey.io/valkeyclusters:watch") && !slices.Contains(rs, "valkey.io/valkeynodes:watch") {
				t.Errorf("%s: no Role in watched namespace %s (%v)", name, ns, rs)
			}
		}
		if _, ok := roles["Role c/vko-"+name]; ok {
			t.Errorf("%s: a Role outside the watched namespaces", name)
		}
	}
	if rs := roles["Role a/vko-node-controller"]; !slices.Contains(rs, "/pods:create") {
		t.Errorf("node-controller's Role in a: %v", rs)
	}
}

// TestRefusesOldKubernetes: the chart's kubeVersion refuses a cluster without the
// webhooks' matchConditions (GA in 1.30), and takes a vendor build of 1.30.
func TestRefusesOldKubernetes(t *testing.T) {
	_, err := helm(t, "template", "vko", "charts/valkey-operator", "--kube-version", "1.29.9")
	if err == nil || !strings.Contains(err.Error(), "kubeVersion") {
		t.Errorf("rendering for 1.29 = %v, want a kubeVersion error", err)
	}
	if _, err := helm(t, "template", "vko", "charts/valkey-operator", "--kube-version", "v1.30.3-eks-1234"); err != nil {
		t.Errorf("rendering for a 1.30 vendor build: %v", err)
	}
}

// TestWebhooksStayOffTheOperatorsPath: the ValkeyNode webhook skips the operator's own
// service accounts and the built-in controllers (matchConditions), so the operator's
// writes never wait for it; the webhooks run two replicas apart, under a budget.
func TestWebhooksStayOffTheOperatorsPath(t *testing.T) {
	objs := render(t)
	cfg := objs["ValidatingWebhookConfiguration/vko-webhooks"]
	hooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
	var nodeHook map[string]any
	for _, h := range hooks {
		if h.(map[string]any)["name"] == "vvalkeynode.valkey.io" {
			nodeHook = h.(map[string]any)
		}
	}
	if nodeHook == nil {
		t.Fatal("no ValkeyNode webhook")
	}
	conds, _, _ := unstructured.NestedSlice(nodeHook, "matchConditions")
	if len(conds) != 1 {
		t.Fatalf("matchConditions = %v", conds)
	}
	expr := conds[0].(map[string]any)["expression"].(string)
	for _, sa := range []string{"cluster-controller", "node-controller", "acl-controller", "tls-controller"} {
		if !strings.Contains(expr, "'system:serviceaccount:vko:vko-"+sa+"'") {
			t.Errorf("the webhook does not skip the %s: %s", sa, expr)
		}
	}
	if strings.Contains(expr, "vko-webhooks") {
		t.Errorf("the webhooks' own account needs no ValkeyNode writes: %s", expr)
	}
	rules, _, _ := unstructured.NestedSlice(nodeHook, "rules")
	if ops, _, _ := unstructured.NestedStringSlice(rules[0].(map[string]any), "operations"); strings.Join(ops, ",") != "CREATE,UPDATE" {
		t.Errorf("ValkeyNode operations = %v (deleting a member by hand is allowed, needs no webhook)", ops)
	}
	d := objs["Deployment/vko-webhooks"]
	if r, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas"); fmt.Sprint(r) != "2" {
		t.Errorf("webhook replicas = %v, want 2", r)
	}
	if _, ok, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec", "affinity", "podAntiAffinity"); !ok {
		t.Error("two webhook replicas without anti-affinity")
	}
	if objs["PodDisruptionBudget/vko-webhooks"] == nil {
		t.Error("no PodDisruptionBudget for the webhooks")
	}
	if one := render(t, "webhooks.replicas=1"); one["PodDisruptionBudget/vko-webhooks"] != nil {
		t.Error("a budget of minAvailable 1 over one replica would block every drain")
	}
}

// Metrics are served over HTTPS to authorized clients by default; the ServiceMonitor
// scrapes them so, and metrics.secure=false turns it off for local use.
func TestMetricsAreSecure(t *testing.T) {
	objs := render(t, "metrics.serviceMonitor.enabled=true")
	for _, name := range components {
		if a := deploymentArgs(objs, name); !strings.Contains(a, "--metrics-secure=true") {
			t.Errorf("%s: args %s", name, a)
		}
		rs := rules(t, objs["ClusterRole/vko-"+name])
		if !slices.Contains(rs, "authentication.k8s.io/tokenreviews:create") || !slices.Contains(rs, "authorization.k8s.io/subjectaccessreviews:create") {
			t.Errorf("%s cannot check its metrics' clients: %v", name, rs)
		}
	}
	reader := objs["ClusterRole/vko-metrics-reader"]
	if reader == nil {
		t.Fatal("no metrics-reader ClusterRole")
	}
	if rs, _, _ := unstructured.NestedSlice(reader.Object, "rules"); len(rs) != 1 {
		t.Errorf("metrics-reader rules %v", rs)
	}
	objs = render(t, "metrics.secure=false")
	if a := deploymentArgs(objs, "node-controller"); !strings.Contains(a, "--metrics-secure=false") {
		t.Errorf("plain HTTP: args %s", a)
	}
	if objs["ClusterRole/vko-metrics-reader"] != nil {
		t.Error("a metrics-reader without secure metrics")
	}
}

// TestCertManagerRules: only the tls-controller touches cert-manager's objects, and
// only what it keeps for clusters with spec.tls.certManager: Certificates and Issuers
// (no ClusterIssuers, no CertificateRequests), which it creates, updates, deletes and
// watches; with watchNamespaces only in those namespaces.
func TestCertManagerRules(t *testing.T) {
	var want []string
	for _, res := range []string{"certificates", "issuers"} {
		for _, verb := range []string{"create", "delete", "get", "list", "update", "watch"} {
			want = append(want, "cert-manager.io/"+res+":"+verb)
		}
	}
	certManager := func(rs []string) []string {
		var out []string
		for _, r := range rs {
			if strings.HasPrefix(r, "cert-manager.io/") {
				out = append(out, r)
			}
		}
		return out
	}
	objs := render(t)
	for _, name := range components {
		got := certManager(rules(t, objs["ClusterRole/vko-"+name]))
		if name == "tls-controller" {
			if !slices.Equal(got, want) {
				t.Errorf("tls-controller's cert-manager rules %v, want %v", got, want)
			}
			continue
		}
		if len(got) > 0 {
			t.Errorf("%s may touch cert-manager's objects: %v", name, got)
		}
	}
	objs = render(t, "watchNamespaces={a}")
	if got := certManager(rules(t, objs["ClusterRole/vko-tls-controller"])); len(got) > 0 {
		t.Errorf("with watchNamespaces, cluster-wide cert-manager rules %v", got)
	}
	if got := certManager(rules(t, objs["Role/vko-tls-controller"])); !slices.Equal(got, want) {
		t.Errorf("with watchNamespaces, the tls-controller's cert-manager rules in a watched namespace %v, want %v", got, want)
	}
}

// TestBackupControllerRole: the backup-controller reads Secrets (the store's
// credentials) but never lists, watches or changes them, creates Jobs but no pods, and
// its Jobs run its own image.
func TestBackupControllerRole(t *testing.T) {
	objs := render(t, "backupController.image.tag=b1")
	for _, r := range rules(t, objs["ClusterRole/vko-backup-controller"]) {
		switch r {
		case "/secrets:list", "/secrets:watch", "/pods:create", "/pods:delete", "batch/jobs:update", "batch/jobs:patch":
			t.Errorf("backup-controller may %s", r)
		}
	}
	a := deploymentArgs(objs, "backup-controller")
	if !strings.Contains(a, "--job-image=valkey-operator:b1") || !strings.Contains(a, "--job-deadline=1h") {
		t.Errorf("args = %s", a)
	}
	// Every object-store request runs in a Job in the cluster's namespace: the
	// operator's own pods reach no store.
	np := render(t, "networkPolicy.enabled=true")["NetworkPolicy/vko"]
	if np == nil || strings.Contains(fmt.Sprint(np.Object), "9000") {
		t.Error("the operator's network policy lets its pods reach object stores")
	}
	if render(t, "backupController.enabled=false", "networkPolicy.enabled=true")["Deployment/vko-backup-controller"] != nil {
		t.Error("backup-controller rendered while turned off")
	}
}

// TestCombinedControllers: controllers.combined runs every enabled controller in the
// manager Deployment, with each one's own flags prefixed by its name and its
// ClusterRole bound to the manager's ServiceAccount; the webhooks stay apart.
func TestCombinedControllers(t *testing.T) {
	objs := render(t, "controllers.combined=true", "clusterController.fastFailover=false", "backupController.image.tag=ignored")
	for key, name := range components {
		if key == "webhooks" {
			if objs["Deployment/vko-webhooks"] == nil {
				t.Error("the webhooks do not run apart")
			}
			continue
		}
		if objs["Deployment/vko-"+name] != nil || objs["ServiceAccount/vko-"+name] != nil {
			t.Errorf("%s has a Deployment or ServiceAccount of its own while combined", name)
		}
		b := objs["ClusterRoleBinding/vko-"+name]
		if b == nil {
			t.Fatalf("no ClusterRoleBinding of %s", name)
		}
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		if len(subjects) != 1 || subjects[0].(map[string]any)["name"] != "vko-manager" {
			t.Errorf("%s's ClusterRole is bound to %v, want the manager's ServiceAccount", name, subjects)
		}
	}
	a := deploymentArgs(objs, "manager")
	for _, want := range []string{
		"--controllers=acl-controller,backup-controller,cluster-controller,node-controller,tls-controller",
		"--cluster-controller.fast-failover=false", "--backup-controller.job-image=valkey-operator:" + chartAppVersion(t),
		"--backup-controller.job-deadline=1h", "--leader-elect=true",
	} {
		if !strings.Contains(a, want) {
			t.Errorf("manager args %q lack %q", a, want)
		}
	}

	if a := deploymentArgs(objs, "webhooks"); !strings.Contains(a, "--operator-service-accounts=vko:vko-manager ") {
		t.Errorf("the webhooks do not take the manager's ValkeyNode writes as the operator's: %s", a)
	}

	off := render(t, "controllers.combined=true", "tlsController.enabled=false", "backupController.enabled=false")
	if a := deploymentArgs(off, "manager"); !strings.Contains(a, "--controllers=acl-controller,cluster-controller,node-controller") ||
		strings.Contains(a, "backup-controller.") {
		t.Errorf("manager args with two controllers off: %s", a)
	}
	if off["ClusterRoleBinding/vko-tls-controller"] != nil {
		t.Error("a turned-off controller's role is bound")
	}
	if none := render(t, "controllers.combined=true", "clusterController.enabled=false", "nodeController.enabled=false",
		"aclController.enabled=false", "tlsController.enabled=false", "backupController.enabled=false"); none["Deployment/vko-manager"] != nil {
		t.Error("a manager without controllers rendered")
	}
}
