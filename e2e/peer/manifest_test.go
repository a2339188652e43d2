package peer

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestRenderTheImportedInstall renders the imported source's install and checks what the
// default install's composition promises: the namespace on every namespaced object, the
// prefix on the names and on every reference between them, the CRDs of ValkeyCluster and
// ValkeyNode, and the manager with the bench's image, metrics flags and label.
func TestRenderTheImportedInstall(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Render(root)
	if err != nil {
		t.Fatal(err)
	}
	if m.Namespace != "valkey-operator-system" || m.Deployment != "valkey-operator-controller-manager" {
		t.Errorf("namespace %q, deployment %q", m.Namespace, m.Deployment)
	}
	if want := "docker.io/local/valkey-io-operator:" + m.Commit[:12]; m.Image != want {
		t.Errorf("image %q, want %q", m.Image, want)
	}
	byKind := map[string][]*unstructured.Unstructured{}
	var order []string
	for _, o := range m.Objects {
		byKind[o.GetKind()] = append(byKind[o.GetKind()], o)
		if len(order) == 0 || order[len(order)-1] != o.GetKind() {
			order = append(order, o.GetKind())
		}
		if !clusterScoped[o.GetKind()] && o.GetNamespace() != m.Namespace {
			t.Errorf("%s %s is in namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
		}
		if clusterScoped[o.GetKind()] && o.GetNamespace() != "" {
			t.Errorf("%s %s has a namespace", o.GetKind(), o.GetName())
		}
	}
	if order[0] != "CustomResourceDefinition" || order[1] != "Namespace" || order[len(order)-1] != "Deployment" {
		t.Errorf("apply order %v: want the CRDs, the namespace, ..., the Deployment", order)
	}
	var crds []string
	for _, o := range byKind["CustomResourceDefinition"] {
		crds = append(crds, o.GetName())
	}
	if !slices.Equal(crds, []string{"valkeyclusters.valkey.io", "valkeynodes.valkey.io"}) {
		t.Errorf("CRDs %v", crds)
	}
	if ns := byKind["Namespace"]; len(ns) != 1 || ns[0].GetName() != m.Namespace {
		t.Errorf("namespaces %v", ns)
	}
	names := map[string]bool{}
	for _, o := range m.Objects {
		names[o.GetKind()+"/"+o.GetName()] = true
		if o.GetKind() != "CustomResourceDefinition" && o.GetKind() != "Namespace" && !strings.HasPrefix(o.GetName(), "valkey-operator-") {
			t.Errorf("%s %s lacks the prefix", o.GetKind(), o.GetName())
		}
	}
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		if len(byKind[kind]) != 1 {
			t.Fatalf("%d %ss", len(byKind[kind]), kind)
		}
		b := byKind[kind][0]
		roleKind, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
		role, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
		if !names[roleKind+"/"+role] {
			t.Errorf("%s %s grants %s %s, which the install lacks", kind, b.GetName(), roleKind, role)
		}
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		for _, s := range subjects {
			sm := s.(map[string]any)
			if !names["ServiceAccount/"+sm["name"].(string)] || sm["namespace"] != m.Namespace {
				t.Errorf("%s %s binds %v, not the install's ServiceAccount", kind, b.GetName(), sm)
			}
		}
	}
	d := byKind["Deployment"][0]
	sa, _, _ := unstructured.NestedString(d.Object, "spec", "template", "spec", "serviceAccountName")
	if !names["ServiceAccount/"+sa] || sa != m.ServiceAccount {
		t.Errorf("the manager runs as %q, which the install lacks", sa)
	}
	label, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "labels", "app.kubernetes.io/component")
	if label != Component {
		t.Errorf("the manager's pods are labelled component %q", label)
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	if c["image"] != m.Image {
		t.Errorf("manager image %v", c["image"])
	}
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	if want := []string{"--leader-elect", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8080", "--metrics-secure=false"}; !slices.Equal(args, want) {
		t.Errorf("manager args %v, want %v", args, want)
	}
}

func TestComposeBindingNeedsARole(t *testing.T) {
	b := &unstructured.Unstructured{Object: map[string]any{"kind": "RoleBinding", "metadata": map[string]any{"name": "x"}}}
	if err := compose(b, kustomization{Namespace: "ns", NamePrefix: "p-"}, "img"); err == nil {
		t.Error("a binding without roleRef was composed")
	}
}
