package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func containers(cs ...corev1.Container) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) { c.Spec.Containers = cs }
}

func TestValidateContainers(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "server patch without image", mutate: containers(corev1.Container{Name: "server",
			Env: []corev1.EnvVar{{Name: "A", Value: "b"}}})},
		{name: "exporter patch without image", mutate: containers(corev1.Container{Name: "metrics-exporter"})},
		{name: "sidecar with image", mutate: containers(corev1.Container{Name: "sidecar", Image: "busybox:1.36"})},
		{name: "unnamed", mutate: containers(corev1.Container{Image: "busybox"}),
			want: []string{"spec.containers[0].name: Required value: every container patch needs a name"}},
		{name: "duplicate names", mutate: containers(corev1.Container{Name: "server"}, corev1.Container{Name: "server"}),
			want: []string{`spec.containers[1].name: Duplicate value: "server"`}},
		{name: "sidecar without image", mutate: containers(corev1.Container{Name: "sidecar"}),
			want: []string{"spec.containers[0].image: Required value"}},
		{name: "invalid name", mutate: containers(corev1.Container{Name: "My_Sidecar", Image: "busybox"}),
			want: []string{"spec.containers[0].name: Invalid value"}},
		{name: "image with a space", mutate: containers(corev1.Container{Name: "server", Image: "valkey 8"}),
			want: []string{"spec.containers[0].image: Invalid value"}},
	})
}

func TestValidateImages(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "registry image", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "registry.example.com/valkey/valkey:9.0.0" }},
		{name: "unset image", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "" }},
		{name: "image with a space", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "valkey/valkey: 8.0.1" },
			want: []string{"spec.image: Invalid value"}},
		{name: "exporter image with a newline",
			mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Exporter.Image = "exporter\n" },
			want:   []string{"spec.exporter.image: Invalid value"}},
		{name: "pull secret", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registrycredential"}}
		}},
		{name: "pull secret without name", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "a"}, {}}
		}, want: []string{"spec.imagePullSecrets[1].name: Required value"}},
		{name: "pull secret with invalid name", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "Registry_Cred"}}
		}, want: []string{"spec.imagePullSecrets[0].name: Invalid value"}},
	})
}

func TestValidateResources(t *testing.T) {
	res := func(req, limit string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(req)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)},
		}
	}
	runClusterCases(t, []clusterCase{
		{name: "request equals limit", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Resources = res("1Gi", "1Gi") }},
		{name: "request below limit", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Resources = res("512Mi", "1Gi") }},
		{name: "request only", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
		}},
		{name: "request above limit", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Resources = res("2Gi", "1Gi") },
			want: []string{`spec.resources.requests[memory]: Invalid value: "2Gi": must be less than or equal to the memory limit (1Gi)`}},
		{name: "exporter request above limit", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Exporter.Resources = res("128Mi", "64Mi") },
			want: []string{"spec.exporter.resources.requests[memory]"}},
	})
}

func TestValidateScheduling(t *testing.T) {
	spread := func(tsc corev1.TopologySpreadConstraint) func(c *v1alpha1.ValkeyCluster) {
		return func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Scheduling = &v1alpha1.SchedulingSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{tsc}}
		}
	}
	runClusterCases(t, []clusterCase{
		{name: "seed scheduling", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Scheduling = seedSample().Spec.Scheduling }},
		{name: "ScheduleAnyway", mutate: spread(corev1.TopologySpreadConstraint{MaxSkew: 2,
			TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway})},
		{name: "zero skew", mutate: spread(corev1.TopologySpreadConstraint{MaxSkew: 0,
			TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule}),
			want: []string{"spec.scheduling.topologySpreadConstraints[0].maxSkew: Invalid value: 0"}},
		{name: "no topology key", mutate: spread(corev1.TopologySpreadConstraint{MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule}),
			want: []string{"spec.scheduling.topologySpreadConstraints[0].topologyKey: Required value"}},
		{name: "unknown action", mutate: spread(corev1.TopologySpreadConstraint{MaxSkew: 1,
			TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: "Maybe"}),
			want: []string{`spec.scheduling.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe"`}},
		{name: "bad node selector", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Scheduling = &v1alpha1.SchedulingSpec{NodeSelector: map[string]string{"bad key!": "x"}}
		}, want: []string{"spec.scheduling.nodeSelector"}},
		{name: "bad priority class", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Scheduling = &v1alpha1.SchedulingSpec{PriorityClassName: "High Priority"}
		}, want: []string{"spec.scheduling.priorityClassName: Invalid value"}},
	})
}
