package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// createCluster stores a cluster built by mutate and deletes it when the test ends.
func createCluster(t *testing.T, name string, mutate func(c *v1alpha1.ValkeyCluster)) *v1alpha1.ValkeyCluster {
	t.Helper()
	c := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	if mutate != nil {
		mutate(c)
	}
	if err := admin.Create(context.Background(), c); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), c) })
	return c
}

func withPersistence(size string, class *string) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) {
		c.Spec.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse(size), StorageClassName: class}
	}
}

func withTLS(secret string) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) {
		c.Spec.TLS = &v1alpha1.TLSSpec{Certificate: v1alpha1.CertificateSpec{SecretName: secret}}
	}
}

// TestUpdateRules changes stored clusters through the API server and expects the
// rules that compare old and new to hold.
func TestUpdateRules(t *testing.T) {
	for i, tc := range []struct {
		name    string
		initial func(c *v1alpha1.ValkeyCluster)
		change  func(c *v1alpha1.ValkeyCluster)
		want    string
	}{
		{name: "scale shards out", change: func(c *v1alpha1.ValkeyCluster) { c.Spec.Shards = 6 }},
		{name: "scale shards in", change: func(c *v1alpha1.ValkeyCluster) { c.Spec.Shards = 1 }},
		{name: "scale replicas", change: func(c *v1alpha1.ValkeyCluster) { c.Spec.ReplicasPerShard = ptr.To[int32](0) }},
		{name: "rename the TLS secret", initial: withTLS("a"), change: withTLS("b")},
		{name: "grow the volumes", initial: withPersistence("1Gi", nil), change: withPersistence("2Gi", nil)},
		{name: "label only", change: func(c *v1alpha1.ValkeyCluster) { c.Labels = map[string]string{"team": "cache"} }},
		{name: "change the workload type",
			change: func(c *v1alpha1.ValkeyCluster) { c.Spec.WorkloadType = v1alpha1.WorkloadPod },
			want:   `spec.workloadType: Forbidden: workloadType cannot change after creation`},
		{name: "add persistence", change: withPersistence("1Gi", nil),
			want: "spec.persistence: Forbidden: persistence cannot be added after creation"},
		{name: "remove persistence", initial: withPersistence("1Gi", nil),
			change: func(c *v1alpha1.ValkeyCluster) { c.Spec.Persistence = nil },
			want:   "spec.persistence: Forbidden: persistence cannot be removed after creation"},
		{name: "shrink the volumes", initial: withPersistence("2Gi", nil), change: withPersistence("1Gi", nil),
			want: `spec.persistence.size: Invalid value: "1Gi": can only grow (was 2Gi)`},
		{name: "change the storage class", initial: withPersistence("1Gi", ptr.To("slow")), change: withPersistence("1Gi", ptr.To("fast")),
			want: `spec.persistence.storageClassName: Forbidden: storageClassName cannot change after creation`},
		{name: "turn TLS on", change: withTLS("a"), want: "spec.tls: Forbidden: TLS cannot be turned on after creation"},
		{name: "turn TLS off", initial: withTLS("a"), change: func(c *v1alpha1.ValkeyCluster) { c.Spec.TLS = nil },
			want: "spec.tls: Forbidden: TLS cannot be turned off after creation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := createCluster(t, fmt.Sprintf("update-%d", i), tc.initial)
			tc.change(c)
			err := admin.Update(context.Background(), c)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want refused with %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("want %q in %v", tc.want, err)
			}
		})
	}
}

// TestMetadataUpdateOfAStoredClusterIsAdmitted makes sure finalizers and labels can
// always change, so a cluster can be deleted even when its spec no longer passes.
func TestMetadataUpdateOfAStoredClusterIsAdmitted(t *testing.T) {
	c := createCluster(t, "metadata-only", func(c *v1alpha1.ValkeyCluster) {
		c.Finalizers = []string{"valkey.io/test"}
	})
	c.Finalizers = nil
	if err := admin.Update(context.Background(), c); err != nil {
		t.Fatalf("removing a finalizer was refused: %v", err)
	}
	if err := admin.Delete(context.Background(), c); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
}
