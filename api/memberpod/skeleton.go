package memberpod

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// Input is what of a member's spec shapes its pod as the Pod Security Standards read it.
type Input struct {
	// Containers are the spec.containers entries, as the user wrote them.
	Containers []corev1.Container
	// Exporter: the metrics exporter runs (a native sidecar among the init containers).
	Exporter bool
	// Claim: the data directory is a PersistentVolumeClaim rather than an emptyDir.
	Claim bool
	// SystemUsers: the exporter mounts its password file.
	SystemUsers bool
	// WorkloadType decides the pod's restart policy.
	WorkloadType v1alpha1.WorkloadType
}

// ClusterInput is the Input of every member of a ValkeyCluster, as the cluster-controller
// derives a member's spec from the cluster's.
func ClusterInput(s *v1alpha1.ValkeyClusterSpec) Input {
	return Input{
		Containers:   s.Containers,
		Exporter:     s.Exporter.IsEnabled(),
		Claim:        s.Persistence != nil && s.Workload() == v1alpha1.WorkloadStatefulSet,
		SystemUsers:  true,
		WorkloadType: s.Workload(),
	}
}

// NodeInput is the Input of a ValkeyNode.
func NodeInput(s *v1alpha1.ValkeyNodeSpec) Input {
	return Input{
		Containers:   s.Containers,
		Exporter:     s.Exporter.IsEnabled(),
		Claim:        s.Persistence != nil && s.WorkloadType == v1alpha1.WorkloadStatefulSet,
		SystemUsers:  s.SystemUsersSecretName != "",
		WorkloadType: s.WorkloadType,
	}
}

// Ports and volume names of a member's pod (the node-controller's, which a test
// compares with Skeleton).
const (
	clientPort  = 6379
	busPort     = 16379
	metricsPort = 9121

	volumeEtc      = "etc"
	volumeExporter = "exporter"
	volumeData     = "data"
	volumeTmp      = "tmp"
)

// Skeleton is the pod the node-controller renders for a member with this input, as far
// as the Pod Security Standards read it: the pod's and every container's security
// settings, ports, probes and hooks (their kinds and hosts), restart policies and the
// kinds of the volumes, with the user's entries merged in by PatchContainers. Commands,
// environment and the volumes' contents are left out.
func Skeleton(in Input) (corev1.PodSpec, error) {
	restart := corev1.RestartPolicyAlways
	if in.WorkloadType == v1alpha1.WorkloadPod {
		restart = corev1.RestartPolicyNever
	}
	spec := corev1.PodSpec{
		Containers:                   []corev1.Container{skeletonServer(in)},
		Volumes:                      skeletonVolumes(in),
		RestartPolicy:                restart,
		SecurityContext:              PodSecurityContext(),
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
	}
	if in.Exporter {
		spec.InitContainers = []corev1.Container{skeletonExporter(in)}
	}
	return PatchContainers(spec, in.Containers, in.Exporter)
}

// skeletonServer is the server container: its ports, mounts, liveness probe (a TCP
// check of the pod's own port) and pre-stop command.
func skeletonServer(in Input) corev1.Container {
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(clientPort)}}}
	return corev1.Container{
		Name: v1alpha1.ServerContainerName,
		Ports: []corev1.ContainerPort{
			{Name: "client", ContainerPort: clientPort, Protocol: corev1.ProtocolTCP},
			{Name: "bus", ContainerPort: busPort, Protocol: corev1.ProtocolTCP},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: volumeEtc, MountPath: "/etc/valkey", ReadOnly: true},
			{Name: volumeData, MountPath: "/data"},
			{Name: volumeTmp, MountPath: "/tmp"},
		},
		LivenessProbe:   probe,
		Lifecycle:       &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh"}}}},
		SecurityContext: ContainerSecurityContext(),
	}
}

// skeletonExporter is the exporter, a native sidecar.
func skeletonExporter(in Input) corev1.Container {
	c := corev1.Container{
		Name:            v1alpha1.ExporterContainerName,
		Ports:           []corev1.ContainerPort{{Name: "metrics", ContainerPort: metricsPort, Protocol: corev1.ProtocolTCP}},
		RestartPolicy:   ptr.To(corev1.ContainerRestartPolicyAlways),
		SecurityContext: ContainerSecurityContext(),
	}
	if in.SystemUsers {
		c.VolumeMounts = []corev1.VolumeMount{{Name: volumeExporter, MountPath: "/etc/valkey-exporter", ReadOnly: true}}
	}
	return c
}

// skeletonVolumes are the pod's volumes by kind: the projected configuration, the
// exporter's projected password file, the data directory and /tmp.
func skeletonVolumes(in Input) []corev1.Volume {
	data := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	if in.Claim {
		data = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{}}
	}
	out := []corev1.Volume{{Name: volumeEtc, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}}
	if in.Exporter && in.SystemUsers {
		out = append(out, corev1.Volume{Name: volumeExporter, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}})
	}
	return append(out,
		corev1.Volume{Name: volumeData, VolumeSource: data},
		corev1.Volume{Name: volumeTmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
}
