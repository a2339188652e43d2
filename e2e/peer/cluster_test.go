package peer

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestClusterReady(t *testing.T) {
	cond := func(typ, status string, gen int64) any {
		return map[string]any{"type": typ, "status": status, "reason": "R", "message": "m", "observedGeneration": gen}
	}
	cases := []struct {
		name  string
		gen   int64
		conds []any
		want  bool
	}{
		{"ready for this generation", 2, []any{cond("Ready", "True", 2), cond("Progressing", "False", 2)}, true},
		{"ready for the last generation: a spec change not seen yet", 3, []any{cond("Ready", "True", 2), cond("Progressing", "False", 2)}, false},
		{"still progressing", 2, []any{cond("Ready", "True", 2), cond("Progressing", "True", 2)}, false},
		{"not ready", 2, []any{cond("Ready", "False", 2), cond("Progressing", "True", 2)}, false},
		{"no Progressing condition", 2, []any{cond("Ready", "True", 2)}, false},
		{"no status", 1, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := NewCluster("ns", "c", ClusterSpec{Shards: 3, Replicas: 1, Image: "v", ExporterImage: "e", User: "e2e"})
			u.SetGeneration(c.gen)
			if c.conds != nil {
				if err := unstructured.SetNestedSlice(u.Object, c.conds, "status", "conditions"); err != nil {
					t.Fatal(err)
				}
			}
			if got, detail := ClusterReady(u); got != c.want {
				t.Errorf("ClusterReady = %t (%s), want %t", got, detail, c.want)
			}
		})
	}
}

func TestNewClusterSpec(t *testing.T) {
	u := NewCluster("ns", "c", ClusterSpec{Shards: 3, Replicas: 1, Image: "docker.io/valkey/valkey:9.1", ExporterImage: "exp", User: "e2e"})
	if err := SetShards(u, 4); err != nil {
		t.Fatal(err)
	}
	if err := SetImage(u, "docker.io/valkey/valkey:9.1.2"); err != nil {
		t.Fatal(err)
	}
	shards, _, _ := unstructured.NestedInt64(u.Object, "spec", "shards")
	replicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	image, _, _ := unstructured.NestedString(u.Object, "spec", "image")
	users, _, _ := unstructured.NestedSlice(u.Object, "spec", "users")
	if shards != 4 || replicas != 1 || image != "docker.io/valkey/valkey:9.1.2" || len(users) != 1 || u.GroupVersionKind() != ClusterGVK {
		t.Errorf("spec %v", u.Object)
	}
}
