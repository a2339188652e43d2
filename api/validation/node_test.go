package validation

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func validNode() *v1alpha1.ValkeyNode {
	return &v1alpha1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-x7k2p", Namespace: "default"},
		Spec: v1alpha1.ValkeyNodeSpec{
			ClusterName:           "demo",
			ShardIndex:            2,
			Revision:              1,
			WorkloadType:          v1alpha1.WorkloadStatefulSet,
			Image:                 v1alpha1.DefaultImage,
			Config:                map[string]string{"maxmemory": "1gb"},
			ACLSecretName:         v1alpha1.ACLSecretName("demo"),
			SystemUsersSecretName: v1alpha1.SystemUsersSecretName("demo"),
		},
	}
}

func TestValidateNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(n *v1alpha1.ValkeyNode)
		want   []string
	}{
		{name: "valid"},
		{name: "with persistence and TLS", mutate: func(n *v1alpha1.ValkeyNode) {
			n.Spec.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("1Gi")}
			n.Spec.TLSSecretName = "valkey-tls"
			n.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
		}},
		{name: "no cluster", mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.ClusterName = "" },
			want: []string{"spec.clusterName: Required value"}},
		{name: "negative shard", mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.ShardIndex = -1 },
			want: []string{"spec.shardIndex: Invalid value: -1"}},
		{name: "zero revision", mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.Revision = 0 },
			want: []string{"spec.revision: Invalid value: 0"}},
		{name: "no workload type", mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.WorkloadType = "" },
			want: []string{"spec.workloadType: Required value"}},
		{name: "no image", mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.Image = "" },
			want: []string{"spec.image: Required value"}},
		{name: "owned config", mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.Config = map[string]string{"dir": "/tmp"} },
			want: []string{"spec.config[dir]: Forbidden"}},
		{name: "a key or value the key table refuses is the cluster's to check", mutate: func(n *v1alpha1.ValkeyNode) {
			n.Spec.Config = map[string]string{"lua-replicate-commands": "yes", "maxmemory": "lots"}
		}},
		{name: "persistence on a Deployment", mutate: func(n *v1alpha1.ValkeyNode) {
			n.Spec.WorkloadType = v1alpha1.WorkloadDeployment
			n.Spec.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("1Gi")}
		}, want: []string{"spec.persistence: Forbidden"}},
		{name: "zero grace period", mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0) },
			want: []string{"spec.terminationGracePeriodSeconds"}},
		{name: "invalid secret name", mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.ACLSecretName = "ACL file" },
			want: []string{"spec.aclSecretName: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := validNode()
			if tc.mutate != nil {
				tc.mutate(n)
			}
			expectErrors(t, ValidateNode(n), tc.want)
		})
	}
	if len(ValidateNode(nil)) != 1 {
		t.Error("want one error for a nil node")
	}
}

func TestValidateNodeUpdate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(n *v1alpha1.ValkeyNode)
		want   []string
	}{
		{name: "revision raised", mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.Revision = 2 }},
		{name: "image changed", mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.Image = "valkey/valkey:8.1.0" }},
		{name: "cluster changed", mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.ClusterName = "other" },
			want: []string{`spec.clusterName: Invalid value: "other": is immutable (was demo)`}},
		{name: "workload changed", mutate: func(n *v1alpha1.ValkeyNode) { n.Spec.WorkloadType = v1alpha1.WorkloadPod },
			want: []string{"spec.workloadType", "is immutable"}},
		{name: "persistence added", mutate: func(n *v1alpha1.ValkeyNode) {
			n.Spec.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("1Gi")}
		}, want: []string{"spec.persistence: Forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := validNode()
			tc.mutate(n)
			expectErrors(t, ValidateNodeUpdate(validNode(), n), tc.want)
		})
	}
	expectErrors(t, ValidateNodeUpdate(nil, validNode()), nil)
}
