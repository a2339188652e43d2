package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

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
		{name: "server: resources and envFrom", mutate: containers(corev1.Container{Name: "server",
			EnvFrom:   []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}})},
		{name: "server: another image", mutate: containers(corev1.Container{Name: "server", Image: "redis:7"}),
			want: []string{`spec.containers[0].image: Forbidden: the "server" container may be patched only in env, envFrom, resources: it changes what runs`}},
		{name: "server: another command", mutate: containers(corev1.Container{Name: "server", Command: []string{"valkey-server"}, Args: []string{"--port", "6379"}}),
			want: []string{"spec.containers[0].command: Forbidden", "spec.containers[0].args: Forbidden", "keeps the default user off"}},
		{name: "server: privileges, hooks, probes, mounts, ports", mutate: containers(corev1.Container{Name: "server",
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			Lifecycle:       &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}},
			LivenessProbe:   &corev1.Probe{}, ReadinessProbe: &corev1.Probe{InitialDelaySeconds: 1},
			VolumeMounts: []corev1.VolumeMount{{Name: "etc", MountPath: "/x"}},
			Ports:        []corev1.ContainerPort{{ContainerPort: 1}}}),
			want: []string{"spec.containers[0].securityContext: Forbidden", "spec.containers[0].lifecycle: Forbidden",
				"spec.containers[0].readinessProbe: Forbidden", "spec.containers[0].volumeMounts: Forbidden", "spec.containers[0].ports: Forbidden"}},
		{name: "exporter: another image", mutate: containers(corev1.Container{Name: "metrics-exporter", Image: "x:1", WorkingDir: "/"}),
			want: []string{"spec.containers[0].image: Forbidden", "spec.containers[0].workingDir: Forbidden"}},
		{name: "sidecar: the reference's", mutate: containers(corev1.Container{Name: "my-sidecar", Image: "busybox:latest",
			Command: []string{"sh", "-c", "sleep infinity"}})},
		{name: "sidecar: mounts the server's configuration", mutate: containers(corev1.Container{Name: "side", Image: "busybox",
			VolumeMounts: []corev1.VolumeMount{{Name: "etc", MountPath: "/etc/valkey"}}}),
			want: []string{`spec.containers[0].volumeMounts[0]: Forbidden: sidecars may not mount "etc"`}},
		{name: "sidecar: a block device", mutate: containers(corev1.Container{Name: "side", Image: "busybox",
			VolumeDevices: []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}}),
			want: []string{"spec.containers[0].volumeDevices[0]: Forbidden: the pod's volumes are the operator's"}},
		{name: "sidecar: a restart policy of its own", mutate: containers(corev1.Container{Name: "side", Image: "busybox",
			RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}),
			want: []string{"spec.containers[0].restartPolicy: Forbidden: sidecars are regular containers of the pod"}},
		{name: "sidecar: the operator's Secrets in its environment", mutate: containers(corev1.Container{Name: "side", Image: "busybox",
			Env: []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "demo-system-users"}, Key: "_operator"}}}},
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "other-tls-accepted"}}}}}),
			want: []string{"spec.containers[0].env[0].valueFrom.secretKeyRef.name: Forbidden", "spec.containers[0].envFrom[0].secretRef.name: Forbidden"}},
		{name: "sidecar: a user's Secret in its environment", mutate: containers(corev1.Container{Name: "side", Image: "busybox",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-credentials"}}}}})},
	})
}

func TestRefuseSidecarsPolicy(t *testing.T) {
	SetPolicy(Policy{RefuseSidecars: true})
	defer SetPolicy(Policy{})
	runClusterCases(t, []clusterCase{
		{name: "server patch still allowed", mutate: containers(corev1.Container{Name: "server", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}})},
		{name: "sidecar refused", mutate: containers(corev1.Container{Name: "side", Image: "busybox"}),
			want: []string{"spec.containers[0]: Forbidden: sidecars are refused by the operator's administrator"}},
	})
}

func TestValidateImages(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "registry image", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "registry.example.com/valkey/valkey:9.0.0" }},
		{name: "unset image", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "" }},
		{name: "image with a space", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "valkey/valkey: 8.0.1" },
			want: []string{"spec.image: Invalid value"}},
		{name: "Valkey 8.0", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "valkey/valkey:8.0" }},
		{name: "Valkey 8 by major", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "valkey/valkey:8-alpine" }},
		{name: "a tag that names no version", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "valkey/valkey:latest" }},
		{name: "a digest", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "valkey/valkey@sha256:" + strings.Repeat("a", 64) }},
		{name: "a registry with a port", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "localhost:5000/valkey" }},
		{name: "a repository that only contains redis", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "example.com/redis/valkey:9.0" }},
		{name: "Valkey 7.2", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "valkey/valkey:7.2" },
			want: []string{`spec.image: Invalid value: "valkey/valkey:7.2": its tag names Valkey 7.2; the operator runs Valkey 8.0 or later`}},
		{name: "Valkey 7 by major", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "registry.example.com:5000/valkey/valkey:7-bookworm" },
			want: []string{"its tag names Valkey 7; the operator runs Valkey 8.0 or later"}},
		{name: "Valkey 7.2.4", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "valkey/valkey:v7.2.4" },
			want: []string{"its tag names Valkey 7.2.4;"}},
		{name: "redis", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "redis:7.2" },
			want: []string{`spec.image: Invalid value: "redis:7.2": the repository redis runs Redis, not Valkey: the operator runs Valkey 8.0 or later`}},
		{name: "redis by digest, tag hidden", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Image = "docker.io/library/redis@sha256:" + strings.Repeat("b", 64)
		},
			want: []string{"the repository docker.io/library/redis runs Redis"}},
		{name: "bitnami/redis", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "bitnami/redis:8.0.1" },
			want: []string{"the repository bitnami/redis runs Redis"}},
		{name: "redis-stack-server", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "redis/redis-stack-server:latest" },
			want: []string{"the repository redis/redis-stack-server runs Redis"}},
		{name: "Redis in capitals", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "example.com/Redis-Cluster:9" },
			want: []string{"runs Redis"}},
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
