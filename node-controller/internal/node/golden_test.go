package node

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// update rewrites the golden files: go test ./internal/node -run Golden -update
var update = flag.Bool("update", false, "rewrite the golden files")

// TestGolden pins the ConfigMap and workload the controller builds for reference
// nodes, so that any change of rendering (an operator upgrade) shows in review. The
// revision gate keeps such a change from rolling running pods by itself.
func TestGolden(t *testing.T) {
	cases := map[string]*v1alpha1.ValkeyNode{
		"statefulset-persistence": testNode(withPersistence("10Gi", v1alpha1.ReclaimRetain), func(vn *v1alpha1.ValkeyNode) {
			vn.Spec.Config = map[string]string{"maxmemory": "100mb", "maxmemory-policy": "noeviction", "io-threads": "4", "save": "900 1"}
		}),
		"pod-tls-containers": testNode(withWorkload(v1alpha1.WorkloadPod), withTLS, withScheduling, func(vn *v1alpha1.ValkeyNode) {
			vn.Spec.Image = "valkey/valkey:9.0.0"
			vn.Spec.TerminationGracePeriodSeconds = ptr.To[int64](45)
			vn.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registrycredential"}}
			vn.Spec.Containers = []corev1.Container{
				{Name: "server", Env: []corev1.EnvVar{{Name: "MY_VAR", Value: "example"}}},
				{Name: "my-sidecar", Image: "busybox:latest", Command: []string{"sh", "-c", "sleep infinity"}},
			}
		}),
		"deployment-no-exporter": testNode(withWorkload(v1alpha1.WorkloadDeployment), func(vn *v1alpha1.ValkeyNode) {
			vn.Spec.Exporter.Enabled = ptr.To(false)
			vn.Spec.Config = nil
		}),
	}
	for name, vn := range cases {
		t.Run(name, func(t *testing.T) {
			checkGolden(t, filepath.Join("testdata", name+".golden.yaml"), renderObjects(t, vn))
		})
	}
}

// renderObjects renders the ConfigMap and the workload of a node as YAML documents.
func renderObjects(t *testing.T, vn *v1alpha1.ValkeyNode) []byte {
	t.Helper()
	cm, err := buildConfigMap(vn, normaliseConfig(vn.Spec.Config))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := mustTemplate(t, vn)
	var workload any
	switch vn.Spec.WorkloadType {
	case v1alpha1.WorkloadPod:
		workload = buildPod(vn, tmpl)
	case v1alpha1.WorkloadDeployment:
		workload = buildDeployment(vn, tmpl)
	default:
		workload = buildStatefulSet(vn, tmpl)
	}
	var out bytes.Buffer
	for _, obj := range []any{cm, workload} {
		b, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	if usesClaim(vn) {
		b, err := yaml.Marshal(buildClaim(vn))
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	return out.Bytes()
}

// checkGolden compares got with the golden file, or rewrites it with -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the controller builds; if the change is intended, run go test -run Golden -update and review the diff\n--- got:\n%s", path, got)
	}
}
