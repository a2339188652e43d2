package framework

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStatusContract(t *testing.T) {
	doc := "# t\n\n## Who writes what\n\n| field or condition | on | owner | read by |\n|---|---|---|---|\n" +
		"| `Ready`, `status.shards`, `readyShards` | ValkeyCluster | cluster-controller | users |\n" +
		"| `PodReady`, `status.podIP` | ValkeyNode | node-controller | cluster-controller |\n" +
		"| `InvalidSpec` | both | every controller, as the guard | users |\n\n## Next\n\n| `Ignored` | x | y | z |\n"
	path := filepath.Join(t.TempDir(), "contract.md")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ReadStatusContract(path)
	if err != nil {
		t.Fatal(err)
	}
	want := StatusContract{
		"ValkeyCluster": {"condition Ready": "cluster-controller", "status.shards": "cluster-controller",
			"status.readyShards": "cluster-controller", "condition InvalidSpec": EveryController},
		"ValkeyNode": {"condition PodReady": "node-controller", "status.podIP": "node-controller", "condition InvalidSpec": EveryController},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("contract = %v\nwant       %v", c, want)
	}

	obj := &metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "cluster-controller", Subresource: "status", FieldsV1: metav1.NewFieldsV1(
			`{"f:status":{"f:readyShards":{},"f:shards":{},"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:type":{}},"k:{\"type\":\"InvalidSpec\"}":{}}}}`)},
		{Manager: "acl-controller", Subresource: "status", FieldsV1: metav1.NewFieldsV1(
			`{"f:status":{"f:conditions":{"k:{\"type\":\"InvalidSpec\"}":{},"k:{\"type\":\"Ready\"}":{}},"f:acl":{}}}`)},
		{Manager: "kubectl", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:shards":{}}}`)},
	}}
	owners, err := StatusOwners(obj)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Check("ValkeyCluster", owners)
	wantErrs := []string{
		"ValkeyCluster condition Ready is written by acl-controller; the table says cluster-controller",
		"ValkeyCluster status.acl (written by acl-controller) is not in the table",
	}
	if !reflect.DeepEqual(got, wantErrs) {
		t.Errorf("check = %q\nwant    %q", got, wantErrs)
	}
}
