package peer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/valkey-operator/valkey-operator/localkube"
	"github.com/valkey-operator/valkey-operator/localkube/images"
)

// Component is the app.kubernetes.io/component label Render puts on the manager's pod and
// Deployment: the bench's operator samplers (perf.SnapshotOperator, perf.OperatorSampler)
// and write counter select an operator's pods by it, as they select ours.
const Component = "valkey-io-operator"

// Name is how tables name the peer.
const Name = "valkey-io/valkey-operator"

// metricsArgs replace the default install's metrics patch (HTTPS on :8443 behind the API
// server's authentication, config/default/manager_metrics_patch.yaml): the samplers read
// /metrics in plain HTTP on :8080 from the host, as the bench installs ours
// (metrics.secure=false). The peer's own flags serve it so (cmd/main.go).
var metricsArgs = []string{"--metrics-bind-address=:8080", "--metrics-secure=false"}

// rbacFiles are the files of config/rbac the manager runs with, in order: its
// ServiceAccount, its ClusterRole and binding, and leader election's Role and binding.
// The default install also adds the metrics endpoint's authorization roles, unused with
// plain HTTP metrics, and the ValkeyCluster admin, editor and viewer roles, which the
// operator does not use.
var rbacFiles = []string{"service_account.yaml", "role.yaml", "role_binding.yaml", "leader_election_role.yaml", "leader_election_role_binding.yaml"}

// clusterScoped are the kinds of the install that have no namespace.
var clusterScoped = map[string]bool{"CustomResourceDefinition": true, "Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true}

// Manifest is the peer's install, rendered from its source.
type Manifest struct {
	// Commit is the imported commit (third_party/valkey-operator/COMMIT).
	Commit string
	// Namespace holds the manager; Deployment is its name and ServiceAccount the account
	// it runs as.
	Namespace, Deployment, ServiceAccount string
	// Image is the manager's image, as make bench-peer-image tags it.
	Image string
	// Objects are in the order they are applied: CRDs, the namespace, RBAC, Deployment.
	Objects []*unstructured.Unstructured
}

// kustomization is what Render reads of config/default/kustomization.yaml.
type kustomization struct {
	Namespace  string `json:"namespace"`
	NamePrefix string `json:"namePrefix"`
}

// Render reads the peer's install from the repository at root: the CRDs of
// config/crd/bases, the manager's namespace and Deployment of config/manager, the RBAC of
// rbacFiles, composed as config/default/kustomization.yaml says (its namespace on every
// namespaced object and the Namespace, its name prefix on every name but the CRDs' and
// the Namespace's, and on the references between them), with the image of make
// bench-peer-image, metricsArgs in place of the metrics patch, and the Component label.
func Render(root string) (Manifest, error) {
	commit, err := localkube.Config{RepoRoot: root}.PeerCommit()
	if err != nil {
		return Manifest{}, err
	}
	src := filepath.Join(root, localkube.PeerSource, "config")
	var k kustomization
	if err := readYAML(filepath.Join(src, "default", "kustomization.yaml"), &k); err != nil {
		return Manifest{}, err
	}
	if k.Namespace == "" {
		return Manifest{}, errors.New("render the peer: config/default/kustomization.yaml names no namespace")
	}
	crds, err := filepath.Glob(filepath.Join(src, "crd", "bases", "*.yaml"))
	if err != nil || len(crds) == 0 {
		return Manifest{}, fmt.Errorf("render the peer: no CRDs in %s (%v)", filepath.Join(src, "crd", "bases"), err)
	}
	files := append(crds, filepath.Join(src, "manager", "manager.yaml"))
	for _, f := range rbacFiles {
		files = append(files, filepath.Join(src, "rbac", f))
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		docs, err := readObjects(f)
		if err != nil {
			return Manifest{}, err
		}
		objs = append(objs, docs...)
	}
	m := Manifest{Commit: commit, Namespace: k.Namespace, Image: images.PeerRepository + ":" + commit[:12]}
	for _, o := range objs {
		if err := compose(o, k, m.Image); err != nil {
			return Manifest{}, fmt.Errorf("render the peer: %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if o.GetKind() == "Deployment" {
			m.Deployment = o.GetName()
			m.ServiceAccount, _, _ = unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName")
		}
	}
	if m.Deployment == "" {
		return Manifest{}, errors.New("render the peer: config/manager has no Deployment")
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return applyOrder(a) - applyOrder(b) })
	m.Objects = objs
	return m, nil
}

// applyOrder puts the CRDs first, then the namespace, the RBAC and the Deployment last.
func applyOrder(o *unstructured.Unstructured) int {
	switch o.GetKind() {
	case "CustomResourceDefinition":
		return 0
	case "Namespace":
		return 1
	case "Deployment":
		return 3
	}
	return 2
}

// compose applies the default install's namespace and name prefix to one object, and
// the bench's image, metrics flags and label to the Deployment.
func compose(o *unstructured.Unstructured, k kustomization, image string) error {
	switch kind := o.GetKind(); {
	case kind == "CustomResourceDefinition":
		return nil
	case kind == "Namespace":
		o.SetName(k.Namespace)
		return nil
	case !clusterScoped[kind]:
		o.SetNamespace(k.Namespace)
	}
	o.SetName(k.NamePrefix + o.GetName())
	switch o.GetKind() {
	case "RoleBinding", "ClusterRoleBinding":
		return composeBinding(o, k)
	case "Deployment":
		return composeDeployment(o, k, image)
	}
	return nil
}

// composeBinding prefixes the role a binding grants and its ServiceAccount subjects,
// which live in the install's namespace.
func composeBinding(o *unstructured.Unstructured, k kustomization) error {
	role, _, err := unstructured.NestedString(o.Object, "roleRef", "name")
	if err != nil || role == "" {
		return fmt.Errorf("no roleRef.name (%v)", err)
	}
	if err := unstructured.SetNestedField(o.Object, k.NamePrefix+role, "roleRef", "name"); err != nil {
		return err
	}
	subjects, _, err := unstructured.NestedSlice(o.Object, "subjects")
	if err != nil {
		return err
	}
	for i, s := range subjects {
		sm, ok := s.(map[string]any)
		if !ok || sm["kind"] != "ServiceAccount" {
			continue
		}
		sm["name"] = k.NamePrefix + fmt.Sprint(sm["name"])
		sm["namespace"] = k.Namespace
		subjects[i] = sm
	}
	return unstructured.SetNestedSlice(o.Object, subjects, "subjects")
}

// composeDeployment sets the manager container's image and metrics flags, prefixes its
// ServiceAccount and labels it and its pods with Component.
func composeDeployment(o *unstructured.Unstructured, k kustomization, image string) error {
	sa, _, err := unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName")
	if err != nil || sa == "" {
		return fmt.Errorf("no serviceAccountName (%v)", err)
	}
	if err := unstructured.SetNestedField(o.Object, k.NamePrefix+sa, "spec", "template", "spec", "serviceAccountName"); err != nil {
		return err
	}
	containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if err != nil {
		return err
	}
	found := false
	for i, c := range containers {
		cm, ok := c.(map[string]any)
		if !ok || cm["name"] != "manager" {
			continue
		}
		found = true
		cm["image"], cm["imagePullPolicy"] = image, "IfNotPresent"
		var args []any
		for _, a := range asSlice(cm["args"]) {
			if s := fmt.Sprint(a); !strings.HasPrefix(s, "--metrics-bind-address") && !strings.HasPrefix(s, "--metrics-secure") {
				args = append(args, s)
			}
		}
		for _, a := range metricsArgs {
			args = append(args, a)
		}
		cm["args"] = args
		containers[i] = cm
	}
	if !found {
		return errors.New("no container named manager")
	}
	if err := unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		return err
	}
	for _, path := range [][]string{{"metadata", "labels"}, {"spec", "template", "metadata", "labels"}} {
		labels, _, err := unstructured.NestedStringMap(o.Object, path...)
		if err != nil {
			return err
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels["app.kubernetes.io/component"] = Component
		if err := unstructured.SetNestedStringMap(o.Object, labels, path...); err != nil {
			return err
		}
	}
	return nil
}

// asSlice returns v as a slice, or nil.
func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// readYAML reads one YAML document into v.
func readYAML(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("render the peer: %w", err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		return fmt.Errorf("render the peer: %s: %w", path, err)
	}
	return nil
}

// readObjects reads every object of a multi-document YAML file.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("render the peer: %w", err)
	}
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("render the peer: %s: %w", path, err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("render the peer: %s: %w", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}
