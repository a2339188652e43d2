package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// testNode is a valid ValkeyNode as the cluster-controller would write it, changed by
// the given mutators.
func testNode(mutate ...func(*v1alpha1.ValkeyNode)) *v1alpha1.ValkeyNode {
	vn := &v1alpha1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-x7k2p", Namespace: "ns", UID: "uid-1", Generation: 1},
		Spec: v1alpha1.ValkeyNodeSpec{
			ClusterName:           "demo",
			ShardIndex:            2,
			Revision:              1,
			WorkloadType:          v1alpha1.WorkloadStatefulSet,
			Image:                 "valkey/valkey:8.0.1",
			Config:                map[string]string{"maxmemory": "100mb", "appendonly": "no"},
			ACLSecretName:         v1alpha1.ACLSecretName("demo"),
			SystemUsersSecretName: v1alpha1.SystemUsersSecretName("demo"),
		},
	}
	for _, m := range mutate {
		m(vn)
	}
	return vn
}

func withWorkload(t v1alpha1.WorkloadType) func(*v1alpha1.ValkeyNode) {
	return func(vn *v1alpha1.ValkeyNode) { vn.Spec.WorkloadType = t }
}

func withTLS(vn *v1alpha1.ValkeyNode) { vn.Spec.TLSSecretName = "demo-tls" }

func withPersistence(size string, policy v1alpha1.ReclaimPolicy) func(*v1alpha1.ValkeyNode) {
	return func(vn *v1alpha1.ValkeyNode) {
		vn.Spec.Persistence = &v1alpha1.PersistenceSpec{
			Size: resource.MustParse(size), StorageClassName: ptr.To("standard"), ReclaimPolicy: policy,
		}
	}
}

func withConfig(kv ...string) func(*v1alpha1.ValkeyNode) {
	return func(vn *v1alpha1.ValkeyNode) {
		vn.Spec.Config = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			vn.Spec.Config[kv[i]] = kv[i+1]
		}
	}
}

// mustTemplate builds the node's pod template or fails the test.
func mustTemplate(t testing.TB, vn *v1alpha1.ValkeyNode) corev1.PodTemplateSpec {
	t.Helper()
	tmpl, err := buildPodTemplate(vn, configHash(vn))
	if err != nil {
		t.Fatalf("build pod template: %v", err)
	}
	return tmpl
}

// container finds a container (or init container) of a pod spec by name.
func container(spec corev1.PodSpec, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// env returns the value of an environment variable of a container, and whether it is set.
func env(c *corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

// volume finds a volume of a pod spec by name.
func volume(spec corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}
