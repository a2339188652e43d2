package node

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/valkey-operator/valkey-operator/api/memberpod"
	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// withContainers sets the node's container entries.
func withContainers(cs ...corev1.Container) func(*v1alpha1.ValkeyNode) {
	return func(vn *v1alpha1.ValkeyNode) { vn.Spec.Containers = cs }
}

// referenceSidecar is the seed reference's sidecar.
var referenceSidecar = corev1.Container{Name: "my-sidecar", Image: "busybox:latest", Command: []string{"sh", "-c", "sleep infinity"}}

// skeletonCases are nodes of every shape the controller renders, with and without the
// user's entries, allowed or not.
func skeletonCases() map[string]*v1alpha1.ValkeyNode {
	spc := referenceSidecar
	spc.SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}
	probe := referenceSidecar
	probe.Name = "prober"
	probe.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "169.254.169.254", Port: intstr.FromInt32(80)}}}
	probe.Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
	return map[string]*v1alpha1.ValkeyNode{
		"defaults":                testNode(),
		"tls":                     testNode(withTLS),
		"persistence":             testNode(withPersistence("1Gi", v1alpha1.ReclaimDelete)),
		"bare pod":                testNode(withWorkload(v1alpha1.WorkloadPod), withTLS),
		"deployment, no exporter": testNode(withWorkload(v1alpha1.WorkloadDeployment), func(vn *v1alpha1.ValkeyNode) { vn.Spec.Exporter.Enabled = ptr.To(false) }),
		"no system users":         testNode(func(vn *v1alpha1.ValkeyNode) { vn.Spec.SystemUsersSecretName = "" }),
		"patches and the reference's sidecar": testNode(withContainers(
			corev1.Container{Name: ServerContainer, Env: []corev1.EnvVar{{Name: "MY_VAR", Value: "example"}}},
			corev1.Container{Name: ExporterContainer, Resources: corev1.ResourceRequirements{}},
			referenceSidecar)),
		"sidecar with spc_t":                 testNode(withContainers(spc)),
		"sidecar with a probe and host port": testNode(withTLS, withContainers(referenceSidecar, probe)),
	}
}

// TestSkeletonMatchesRenderedPod: the pod admission checks (memberpod.Skeleton) and the
// pod the controller renders agree on every field the Pod Security library reads, and
// so the library says the same of both.
func TestSkeletonMatchesRenderedPod(t *testing.T) {
	for name, vn := range skeletonCases() {
		t.Run(name, func(t *testing.T) {
			rendered := mustTemplate(t, vn)
			skeleton, err := memberpod.Skeleton(memberpod.NodeInput(&vn.Spec))
			if err != nil {
				t.Fatal(err)
			}
			got, want := securityView(rendered.Spec), securityView(skeleton)
			if !reflect.DeepEqual(got, want) {
				gy, _ := yaml.Marshal(got)
				wy, _ := yaml.Marshal(want)
				t.Fatalf("what the Pod Security library reads differs:\n--- rendered:\n%s--- skeleton:\n%s", gy, wy)
			}
			onRendered := messages(memberpod.Check(&rendered.ObjectMeta, &rendered.Spec, vn.Spec.Containers, containersPath))
			onSkeleton := messages(memberpod.Check(nil, &skeleton, vn.Spec.Containers, containersPath))
			if onRendered != onSkeleton {
				t.Errorf("the library on the rendered pod:\n%s\non the skeleton:\n%s", onRendered, onSkeleton)
			}
		})
	}
}

// TestRenderedPodSecurity: the pods the controller renders pass restricted unless a
// sidecar breaks it, and then the error names the sidecar's field.
func TestRenderedPodSecurity(t *testing.T) {
	want := map[string][]string{
		"sidecar with spc_t": {`spec.containers[0].securityContext.seLinuxOptions.type: Forbidden: violates PodSecurity "restricted:latest": seLinuxOptions (container "my-sidecar" set forbidden securityContext.seLinuxOptions: type "spc_t")`},
		"sidecar with a probe and host port": {
			`spec.containers[1].ports[0].hostPort: Forbidden: violates PodSecurity "restricted:latest": hostPort (container "prober" uses hostPort 8080)`,
			`spec.containers[1].readinessProbe.httpGet.host: Forbidden: violates PodSecurity "restricted:latest": probe or lifecycle host (container "prober" uses probe or lifecycle host "169.254.169.254")`,
		},
	}
	for name, vn := range skeletonCases() {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, e := range renderedPodErrors(vn) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, want[name]) {
				t.Errorf("got  %q\nwant %q", got, want[name])
			}
		})
	}
}

// messages are the violations as text, one a line.
func messages(vs []memberpod.Violation) string {
	var b strings.Builder
	for _, v := range vs {
		if v.Field != nil {
			b.WriteString(v.Field.String() + ": ")
		}
		b.WriteString(v.Message() + "\n")
	}
	return b.String()
}

// securityView keeps of a pod spec what the Pod Security library reads: the pod's
// security context and host namespaces, the volumes' kinds, and each container's name,
// security context, host ports, restart policy and the kinds and hosts of its probes
// and hooks.
func securityView(s corev1.PodSpec) corev1.PodSpec {
	out := corev1.PodSpec{
		SecurityContext: s.SecurityContext, HostNetwork: s.HostNetwork, HostPID: s.HostPID, HostIPC: s.HostIPC,
		HostUsers: s.HostUsers, OS: s.OS, RestartPolicy: s.RestartPolicy,
	}
	for _, v := range s.Volumes {
		out.Volumes = append(out.Volumes, corev1.Volume{Name: v.Name, VolumeSource: sourceKind(v.VolumeSource)})
	}
	for _, c := range s.InitContainers {
		out.InitContainers = append(out.InitContainers, containerView(c))
	}
	for _, c := range s.Containers {
		out.Containers = append(out.Containers, containerView(c))
	}
	return out
}

func containerView(c corev1.Container) corev1.Container {
	v := corev1.Container{Name: c.Name, SecurityContext: c.SecurityContext, RestartPolicy: c.RestartPolicy,
		LivenessProbe: probeView(c.LivenessProbe), ReadinessProbe: probeView(c.ReadinessProbe), StartupProbe: probeView(c.StartupProbe)}
	for _, p := range c.Ports {
		v.Ports = append(v.Ports, corev1.ContainerPort{HostPort: p.HostPort, HostIP: p.HostIP})
	}
	if l := c.Lifecycle; l != nil {
		v.Lifecycle = &corev1.Lifecycle{PostStart: hookView(l.PostStart), PreStop: hookView(l.PreStop)}
	}
	return v
}

func probeView(p *corev1.Probe) *corev1.Probe {
	if p == nil {
		return nil
	}
	h := p.ProbeHandler
	out := &corev1.Probe{}
	if h.Exec != nil {
		out.Exec = &corev1.ExecAction{}
	}
	if h.HTTPGet != nil {
		out.HTTPGet = &corev1.HTTPGetAction{Host: h.HTTPGet.Host}
	}
	if h.TCPSocket != nil {
		out.TCPSocket = &corev1.TCPSocketAction{Host: h.TCPSocket.Host}
	}
	if h.GRPC != nil {
		out.GRPC = &corev1.GRPCAction{}
	}
	return out
}

func hookView(h *corev1.LifecycleHandler) *corev1.LifecycleHandler {
	if h == nil {
		return nil
	}
	out := &corev1.LifecycleHandler{}
	if h.Exec != nil {
		out.Exec = &corev1.ExecAction{}
	}
	if h.HTTPGet != nil {
		out.HTTPGet = &corev1.HTTPGetAction{Host: h.HTTPGet.Host}
	}
	if h.TCPSocket != nil {
		out.TCPSocket = &corev1.TCPSocketAction{Host: h.TCPSocket.Host}
	}
	if h.Sleep != nil {
		out.Sleep = &corev1.SleepAction{}
	}
	return out
}

// sourceKind is a volume source of the same kind, empty.
func sourceKind(src corev1.VolumeSource) corev1.VolumeSource {
	b, err := json.Marshal(src)
	if err != nil {
		return src
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return src
	}
	kinds := map[string]struct{}{}
	for k := range m {
		kinds[k] = struct{}{}
	}
	b, _ = json.Marshal(kinds)
	var out corev1.VolumeSource
	_ = json.Unmarshal(b, &out)
	return out
}
