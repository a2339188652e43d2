package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// clusterCase is one table row: a change to a valid cluster and the substrings the
// errors must contain (none: the cluster must stay valid).
type clusterCase struct {
	name   string
	mutate func(c *v1alpha1.ValkeyCluster)
	want   []string
	// policy, when set, is the operator's policy during the case.
	policy *Policy
}

// updateCase changes the stored cluster (old) and the new one separately.
type updateCase struct {
	name      string
	mutateOld func(c *v1alpha1.ValkeyCluster)
	mutateNew func(c *v1alpha1.ValkeyCluster)
	want      []string
}

// validCluster is a minimal valid cluster as the API server stores it (defaults set).
func validCluster() *v1alpha1.ValkeyCluster {
	return &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default"},
		Spec: v1alpha1.ValkeyClusterSpec{
			Shards:           3,
			ReplicasPerShard: ptr.To[int32](1),
			Image:            v1alpha1.DefaultImage,
			WorkloadType:     v1alpha1.WorkloadStatefulSet,
		},
	}
}

// seedSample is the cluster the reference documentation shows, every feature on.
func seedSample() *v1alpha1.ValkeyCluster {
	c := validCluster()
	s := &c.Spec
	s.Config = map[string]string{"io-threads": "4", "maxmemory-policy": "noeviction"}
	s.Containers = []corev1.Container{
		{Name: "server", Env: []corev1.EnvVar{{Name: "MY_VAR", Value: "example"}}},
		{Name: "my-sidecar", Image: "busybox:latest", Command: []string{"sh", "-c", "sleep infinity"}},
	}
	s.Exporter = v1alpha1.ExporterSpec{Enabled: ptr.To(true), Image: "oliver006/redis_exporter:v1.80.0",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("50m")}}}
	s.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("10Gi"),
		StorageClassName: ptr.To("gp3"), ReclaimPolicy: v1alpha1.ReclaimRetain}
	s.PodDisruptionBudget = &v1alpha1.PodDisruptionBudgetSpec{Mode: v1alpha1.PDBCluster}
	s.TerminationGracePeriodSeconds = ptr.To[int64](60)
	s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registrycredential"}}
	s.Scheduling = &v1alpha1.SchedulingSpec{
		Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: "Equal", Value: "valkey", Effect: "NoSchedule"}},
		NodeSelector: map[string]string{"kubernetes.io/arch": "amd64"},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "valkey"}},
				TopologyKey:   "kubernetes.io/hostname"}}}},
		PriorityClassName: "high-priority",
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule}},
	}
	s.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "valkey-tls"}}
	s.Users = []v1alpha1.UserSpec{
		{
			Name:           "alice",
			PasswordSecret: &v1alpha1.PasswordSecretRef{Name: "my-users-secret", Keys: []string{"alicepw"}},
			Commands: &v1alpha1.CommandsSpec{Allow: []string{"@read", "@write", "@connection"},
				Deny: []string{"@admin", "@dangerous"}},
			Keys:     &v1alpha1.KeysSpec{ReadWrite: []string{"app:*"}, ReadOnly: []string{"shared:*"}},
			Channels: &v1alpha1.ChannelsSpec{Patterns: []string{"notifications:*"}},
		},
		{Name: "bob", NoPass: true, Permissions: "+@all ~* &*"},
	}
	return c
}

// withUser appends a user that is valid unless mutate breaks it.
func withUser(mutate func(u *v1alpha1.UserSpec)) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) {
		u := v1alpha1.UserSpec{Name: "carol",
			PasswordSecret: &v1alpha1.PasswordSecretRef{Name: "carol-secret", Keys: []string{"password"}}}
		mutate(&u)
		c.Spec.Users = append(c.Spec.Users, u)
	}
}

// runClusterCases runs ValidateCluster over each case.
func runClusterCases(t *testing.T, cases []clusterCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.policy != nil {
				withPolicy(t, *tc.policy)
			}
			c := validCluster()
			if tc.mutate != nil {
				tc.mutate(c)
			}
			expectErrors(t, ValidateCluster(c), tc.want)
		})
	}
}

// runUpdateCases runs ValidateClusterUpdate over each case.
func runUpdateCases(t *testing.T, cases []updateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, c := validCluster(), validCluster()
			if tc.mutateOld != nil {
				tc.mutateOld(old)
			}
			if tc.mutateNew != nil {
				tc.mutateNew(c)
			}
			expectErrors(t, ValidateClusterUpdate(old, c), tc.want)
		})
	}
}

// withPolicy sets the operator's policy for the rest of the test.
func withPolicy(t *testing.T, p Policy) {
	t.Helper()
	prev := CurrentPolicy()
	SetPolicy(p)
	t.Cleanup(func() { SetPolicy(prev) })
}

// expectErrors asserts that errs is empty when want is, and otherwise that every
// wanted substring appears in some error.
func expectErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	if len(want) == 0 {
		if len(errs) != 0 {
			t.Fatalf("want no error, got %v", errs)
		}
		return
	}
	if len(errs) == 0 {
		t.Fatalf("want errors containing %q, got none", want)
	}
	text := errs.ToAggregate().Error()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("want an error containing %q, got %s", w, text)
		}
	}
}
