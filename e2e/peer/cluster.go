package peer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ClusterGVK is the peer's ValkeyCluster: the same group, version and kind as ours, with
// another schema (spec.replicas where ours has replicasPerShard).
var ClusterGVK = schema.GroupVersionKind{Group: "valkey.io", Version: "v1alpha1", Kind: "ValkeyCluster"}

// NodeGVK is the peer's ValkeyNode, one per server.
var NodeGVK = schema.GroupVersionKind{Group: "valkey.io", Version: "v1alpha1", Kind: "ValkeyNode"}

// LabelCluster names the cluster on the peer's pods (internal/controller/utils.go).
const LabelCluster = "valkey.io/cluster"

// ClusterSpec is the part of the peer's ValkeyCluster spec the bench sets.
type ClusterSpec struct {
	Shards, Replicas int32
	// Image is the Valkey image; the peer's default, valkey/valkey:9.0.0, is on no
	// registry here.
	Image string
	// ExporterImage is the metrics exporter's image (the exporter is on by default, as
	// ours, and its default image, oliver006/redis_exporter, is on no registry here).
	ExporterImage string
	// User is an ACL user with every permission and no password, for the bench's
	// clients (as ours get framework.TestUser).
	User string
}

// NewCluster returns the peer's ValkeyCluster of spec, for Create.
func NewCluster(ns, name string, spec ClusterSpec) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"shards":   int64(spec.Shards),
			"replicas": int64(spec.Replicas),
			"image":    spec.Image,
			"exporter": map[string]any{"enabled": true, "image": spec.ExporterImage},
			"users": []any{map[string]any{
				"name": spec.User, "enabled": true, "nopass": true, "permissions": "+@all ~* &*",
			}},
		},
	}}
	u.SetGroupVersionKind(ClusterGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// SetImage changes the cluster's Valkey image.
func SetImage(u *unstructured.Unstructured, image string) error {
	return unstructured.SetNestedField(u.Object, image, "spec", "image")
}

// SetShards changes the cluster's number of shards.
func SetShards(u *unstructured.Unstructured, shards int32) error {
	return unstructured.SetNestedField(u.Object, int64(shards), "spec", "shards")
}

// Pods selects the cluster's pods.
func Pods(name string) client.MatchingLabels { return client.MatchingLabels{LabelCluster: name} }

// ClusterReady is the peer's own word that the cluster serves its current spec: Ready
// True and Progressing False, both set for the current generation (the peer records
// the generation on each condition, and keeps no status.observedGeneration).
func ClusterReady(u *unstructured.Unstructured) (bool, string) {
	state, _, _ := unstructured.NestedString(u.Object, "status", "state")
	ready, readyGen, readyDesc := condition(u, "Ready")
	progressing, progGen, progDesc := condition(u, "Progressing")
	gen := u.GetGeneration()
	ok := ready == "True" && progressing == "False" && readyGen == gen && progGen == gen
	return ok, fmt.Sprintf("state %s; %s; %s (generation %d)", state, readyDesc, progDesc, gen)
}

// condition returns a status condition's status, observed generation and a description.
func condition(u *unstructured.Unstructured, typ string) (string, int64, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] != typ {
			continue
		}
		status := fmt.Sprint(cm["status"])
		gen, _ := cm["observedGeneration"].(int64)
		return status, gen, fmt.Sprintf("%s=%s/%v (generation %d): %v", typ, status, cm["reason"], gen, cm["message"])
	}
	return "", 0, typ + "=?"
}
