package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/memberpod"
	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// restricted is the start of every refusal the Pod Security library gives.
const restricted = `Forbidden: violates PodSecurity "restricted:latest": `

// sidecar is the reference's sidecar with mutate applied.
func sidecar(mutate func(c *corev1.Container)) func(c *v1alpha1.ValkeyCluster) {
	return func(vc *v1alpha1.ValkeyCluster) {
		c := corev1.Container{Name: "my-sidecar", Image: "busybox:latest", Command: []string{"sh", "-c", "sleep infinity"}}
		mutate(&c)
		vc.Spec.Containers = append(vc.Spec.Containers, c)
	}
}

// securityContext sets the sidecar's security context.
func securityContext(f func(sc *corev1.SecurityContext)) func(c *corev1.Container) {
	return func(c *corev1.Container) {
		c.SecurityContext = &corev1.SecurityContext{}
		f(c.SecurityContext)
	}
}

func httpGet(host string) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: host, Path: "/healthz", Port: intstr.FromInt32(8080)}}
}

// TestSidecarPodSecurity: a member's whole pod with the user's sidecar meets the
// restricted Pod Security Standard, as the upstream library checks it; each refusal
// names the field the user wrote and the library's reason, once.
func TestSidecarPodSecurity(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(c *v1alpha1.ValkeyCluster)
		// want: each error, in order (none: admitted).
		want   []string
		policy *Policy
	}{
		// Allowed sidecars.
		{name: "allowed: the reference's sidecar", mutate: sidecar(func(*corev1.Container) {})},
		{name: "allowed: restricted settings of its own", mutate: sidecar(securityContext(func(sc *corev1.SecurityContext) {
			sc.RunAsNonRoot, sc.RunAsUser, sc.RunAsGroup = ptr.To(true), ptr.To[int64](1000), ptr.To[int64](1000)
			sc.AllowPrivilegeEscalation, sc.ReadOnlyRootFilesystem = ptr.To(false), ptr.To(true)
			sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
			sc.SELinuxOptions = &corev1.SELinuxOptions{Type: "container_t", Level: "s0:c123,c456"}
		}))},
		{name: "allowed: probes and hooks on the pod's own address", mutate: sidecar(func(c *corev1.Container) {
			c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: httpGet("")}
			c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}}
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		})},
		{name: "allowed: TLS, persistence, no exporter, with the sidecar", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.TLS = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: "tls"}}
			c.Spec.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("1Gi")}
			c.Spec.Exporter.Enabled = ptr.To(false)
			sidecar(func(*corev1.Container) {})(c)
		}},
		{name: "allowed: bare pods", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.WorkloadType = v1alpha1.WorkloadPod
			sidecar(func(*corev1.Container) {})(c)
		}},

		// One row per rule family of the library.
		{name: "privileged", mutate: sidecar(securityContext(func(sc *corev1.SecurityContext) { sc.Privileged = ptr.To(true) })),
			want: []string{"spec.containers[0].securityContext.privileged: " + restricted + `privileged (container "my-sidecar" must not set securityContext.privileged=true)`}},
		{name: "privilege escalation", mutate: sidecar(securityContext(func(sc *corev1.SecurityContext) { sc.AllowPrivilegeEscalation = ptr.To(true) })),
			want: []string{"spec.containers[0].securityContext.allowPrivilegeEscalation: " + restricted + "allowPrivilegeEscalation != false"}},
		{name: "capabilities", mutate: sidecar(securityContext(func(sc *corev1.SecurityContext) {
			sc.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE", "SYS_ADMIN"}}
		})), want: []string{"spec.containers[0].securityContext.capabilities.add[1]: " + restricted +
			`unrestricted capabilities (container "my-sidecar" must not include "SYS_ADMIN" in securityContext.capabilities.add)`}},
		{name: "hostPort", mutate: sidecar(func(c *corev1.Container) {
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 8080, HostPort: 8080}}
		}), want: []string{"spec.containers[0].ports[1].hostPort: " + restricted + `hostPort (container "my-sidecar" uses hostPort 8080)`}},
		{name: "seLinux spc_t", mutate: sidecar(securityContext(func(sc *corev1.SecurityContext) {
			sc.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"}
		})), want: []string{"spec.containers[0].securityContext.seLinuxOptions.type: " + restricted +
			`seLinuxOptions (container "my-sidecar" set forbidden securityContext.seLinuxOptions: type "spc_t")`}},
		{name: "seLinux user", mutate: sidecar(securityContext(func(sc *corev1.SecurityContext) {
			sc.SELinuxOptions = &corev1.SELinuxOptions{User: "system_u"}
		})), want: []string{"spec.containers[0].securityContext.seLinuxOptions.user: " + restricted + "seLinuxOptions"}},
		{name: "seccomp", mutate: sidecar(securityContext(func(sc *corev1.SecurityContext) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		})), want: []string{"spec.containers[0].securityContext.seccompProfile.type: " + restricted +
			`seccompProfile (container "my-sidecar" must not set securityContext.seccompProfile.type to "Unconfined")`}},
		{name: "runAsNonRoot", mutate: sidecar(securityContext(func(sc *corev1.SecurityContext) { sc.RunAsNonRoot = ptr.To(false) })),
			want: []string{"spec.containers[0].securityContext.runAsNonRoot: " + restricted + "runAsNonRoot != true"}},
		{name: "runAsUser 0", mutate: sidecar(securityContext(func(sc *corev1.SecurityContext) { sc.RunAsUser = ptr.To[int64](0) })),
			want: []string{"spec.containers[0].securityContext.runAsUser: " + restricted + "runAsUser=0"}},
		{name: "procMount", mutate: sidecar(securityContext(func(sc *corev1.SecurityContext) { sc.ProcMount = ptr.To(corev1.UnmaskedProcMount) })),
			want: []string{"spec.containers[0].securityContext.procMount: " + restricted + "procMount"}},
		{name: "AppArmor", mutate: sidecar(securityContext(func(sc *corev1.SecurityContext) {
			sc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		})), want: []string{"spec.containers[0].securityContext.appArmorProfile.type: " + restricted}},
		{name: "Windows host process", mutate: sidecar(securityContext(func(sc *corev1.SecurityContext) {
			sc.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		})), want: []string{"spec.containers[0].securityContext.windowsOptions.hostProcess: " + restricted}},
		{name: "probe host: the cloud's metadata service", mutate: sidecar(func(c *corev1.Container) {
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: httpGet("169.254.169.254")}
		}), want: []string{"spec.containers[0].readinessProbe.httpGet.host: " + restricted +
			`probe or lifecycle host (container "my-sidecar" uses probe or lifecycle host "169.254.169.254")`}},
		{name: "probe host: TCP to another address", mutate: sidecar(func(c *corev1.Container) {
			c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "10.96.0.1", Port: intstr.FromInt32(443)}}}
			c.StartupProbe = &corev1.Probe{ProbeHandler: httpGet("localhost")}
		}), want: []string{"spec.containers[0].livenessProbe.tcpSocket.host: " + restricted + `probe or lifecycle host (container "my-sidecar" uses probe or lifecycle host "10.96.0.1")`,
			"spec.containers[0].startupProbe.httpGet.host: " + restricted + `probe or lifecycle host (container "my-sidecar" uses probe or lifecycle host "localhost")`}},
		{name: "lifecycle host", mutate: sidecar(func(c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{
				PostStart: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: "kubernetes.default.svc", Port: intstr.FromInt32(443)}},
				PreStop:   &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Host: "169.254.169.254", Port: intstr.FromInt32(80)}},
			}
		}), want: []string{"spec.containers[0].lifecycle.postStart.httpGet.host: " + restricted + "probe or lifecycle host",
			"spec.containers[0].lifecycle.preStop.tcpSocket.host: " + restricted + "probe or lifecycle host"}},
		{name: "second sidecar named, first one fine", mutate: func(c *v1alpha1.ValkeyCluster) {
			sidecar(func(*corev1.Container) {})(c)
			sidecar(func(c *corev1.Container) {
				c.Name = "debug"
				c.SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			})(c)
		}, want: []string{"spec.containers[1].securityContext.privileged: " + restricted + `privileged (container "debug"`}},

		// The project's rules and the library's do not repeat each other.
		{name: "server patch: refused by the patch rule only", mutate: containers(corev1.Container{Name: "server",
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			ReadinessProbe:  &corev1.Probe{ProbeHandler: httpGet("169.254.169.254")}}),
			want: []string{`spec.containers[0].readinessProbe: Forbidden: the "server" container may be patched only in env, envFrom, resources`,
				`spec.containers[0].securityContext: Forbidden: the "server" container may be patched only in env, envFrom, resources`}},
		{name: "exporter patch: refused by the patch rule only", mutate: containers(corev1.Container{Name: "metrics-exporter",
			Ports: []corev1.ContainerPort{{ContainerPort: 9121, HostPort: 9121}}}),
			want: []string{`spec.containers[0].ports: Forbidden: the "metrics-exporter" container may be patched only in env, envFrom, resources`}},
		{name: "sidecars refused by the policy: no more said", policy: &Policy{RefuseSidecars: true},
			mutate: sidecar(securityContext(func(sc *corev1.SecurityContext) { sc.Privileged = ptr.To(true) })),
			want:   []string{"spec.containers[0]: Forbidden: sidecars are refused by the operator's administrator"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.policy != nil {
				withPolicy(t, *tc.policy)
			}
			c := validCluster()
			tc.mutate(c)
			expectExactly(t, ValidateCluster(c), tc.want)
		})
	}
}

// expectExactly asserts that errs are as many as want and that each contains its
// wanted text, in order.
func expectExactly(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("want %d errors %q, got %d: %v", len(want), want, len(errs), errs)
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("error %d:\n got %s\nwant %s", i, errs[i].Error(), w)
		}
	}
}

// TestNodePodSecurity: a ValkeyNode is held to the same check as the cluster it comes
// from.
func TestNodePodSecurity(t *testing.T) {
	n := validNode()
	n.Spec.Containers = []corev1.Container{{Name: "side", Image: "busybox",
		SecurityContext: &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}}}
	expectExactly(t, ValidateNode(n), []string{"spec.containers[0].securityContext.seLinuxOptions.type: " + restricted + "seLinuxOptions"})
}

// TestPodSecurityErrorsOfTheOperatorsPod: what the operator renders itself and breaks the
// standard is an internal error, never blamed on a field of the user's.
func TestPodSecurityErrorsOfTheOperatorsPod(t *testing.T) {
	p := field.NewPath("spec", "containers")
	in := memberpod.ClusterInput(&validCluster().Spec)
	for _, tc := range []struct {
		name   string
		mutate func(s *corev1.PodSpec)
		want   string
	}{
		{"host namespaces", func(s *corev1.PodSpec) { s.HostNetwork = true },
			`spec.containers: Internal error: the pod the operator renders for a member violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true)`},
		{"hostPath", func(s *corev1.PodSpec) {
			s.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run"}}
		}, `spec.containers: Internal error: the pod the operator renders for a member violates PodSecurity "restricted:latest": restricted volume types (volume "etc" uses restricted volume type "hostPath")`},
		{"a capability of the server's", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
		}, `spec.containers: Internal error: the "server" container the operator renders violates PodSecurity "restricted:latest": unrestricted capabilities`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := memberpod.Skeleton(in)
			if err != nil {
				t.Fatal(err)
			}
			tc.mutate(&spec)
			expectExactly(t, PodSecurityErrors(memberpod.Check(nil, &spec, in.Containers, p), p), []string{tc.want})
		})
	}
}
