package memberpod

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

var containersPath = field.NewPath("spec", "containers")

// defaultInput is a member of a cluster with every default: exporter, system users, a
// StatefulSet without persistence.
func defaultInput(cs ...corev1.Container) Input {
	return Input{Containers: cs, Exporter: true, SystemUsers: true, WorkloadType: v1alpha1.WorkloadStatefulSet}
}

func mustSkeleton(t *testing.T, in Input) corev1.PodSpec {
	t.Helper()
	spec, err := Skeleton(in)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// render writes the violations as "path: message" lines (path "-" for the operator's).
func render(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		path := "-"
		if v.Field != nil {
			path = v.Field.String()
		}
		b.WriteString(path + ": " + v.Check + ": " + v.Message() + "\n")
	}
	return b.String()
}

// TestOperatorPodsPassRestricted: every shape of member pod the operator renders, with
// no sidecar, passes restricted as it is.
func TestOperatorPodsPassRestricted(t *testing.T) {
	for name, in := range map[string]Input{
		"defaults":              defaultInput(),
		"tls":                   {Exporter: true, SystemUsers: true, WorkloadType: v1alpha1.WorkloadStatefulSet},
		"persistence":           {Exporter: true, SystemUsers: true, Claim: true, WorkloadType: v1alpha1.WorkloadStatefulSet},
		"bare pod, no exporter": {WorkloadType: v1alpha1.WorkloadPod},
		"deployment":            {Exporter: true, SystemUsers: true, WorkloadType: v1alpha1.WorkloadDeployment},
	} {
		t.Run(name, func(t *testing.T) {
			spec := mustSkeleton(t, in)
			if vs := Check(nil, &spec, nil, containersPath); len(vs) > 0 {
				t.Errorf("the operator's pod breaks restricted:\n%s", render(vs))
			}
		})
	}
}

// TestCheckPodFields: what only the pod's own fields can break (a sidecar cannot set
// them) is the library's refusal with no field of the user's named.
func TestCheckPodFields(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.PodSpec)
		want   string
	}{
		{"host network", func(s *corev1.PodSpec) { s.HostNetwork = true }, "hostNamespaces: " + `violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true)`},
		{"host PID", func(s *corev1.PodSpec) { s.HostPID = true }, "hostNamespaces"},
		{"host IPC", func(s *corev1.PodSpec) { s.HostIPC = true }, "hostNamespaces"},
		{"hostPath volume", func(s *corev1.PodSpec) {
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}, `restrictedVolumes: violates PodSecurity "restricted:latest": restricted volume types (volume "root" uses restricted volume type "hostPath")`},
		{"unsafe sysctl", func(s *corev1.PodSpec) {
			s.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}
		}, "sysctls: "},
		{"pod runs as root", func(s *corev1.PodSpec) { s.SecurityContext.RunAsNonRoot = ptr.To(false) }, "runAsNonRoot: "},
		{"pod seccomp unconfined", func(s *corev1.PodSpec) {
			s.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}, "seccompProfile_restricted: "},
		{"pod spc_t", func(s *corev1.PodSpec) { s.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"} }, "seLinuxOptions: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := mustSkeleton(t, defaultInput())
			tc.mutate(&spec)
			got := render(Check(nil, &spec, nil, containersPath))
			if !strings.HasPrefix(got, "-: "+tc.want) || strings.Count(got, "\n") != 1 {
				t.Errorf("got\n%swant one violation of the operator's: %s", got, tc.want)
			}
		})
	}
}

// TestCheckNamesTheUsersField: a violation in a sidecar names the field of the user's
// entry that causes it, with the library's reason.
func TestCheckNamesTheUsersField(t *testing.T) {
	side := func(mutate func(*corev1.Container)) corev1.Container {
		c := corev1.Container{Name: "side", Image: "busybox"}
		mutate(&c)
		return c
	}
	sc := func(f func(*corev1.SecurityContext)) func(*corev1.Container) {
		return func(c *corev1.Container) {
			c.SecurityContext = &corev1.SecurityContext{}
			f(c.SecurityContext)
		}
	}
	httpHost := func(host string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: host, Port: intstr.FromInt32(80)}}}
	}
	cases := []struct {
		name  string
		entry corev1.Container
		want  []string // each a line: "path: check: message"
	}{
		{"allowed sidecar", side(func(*corev1.Container) {}), nil},
		{"allowed sidecar with restricted settings of its own", side(sc(func(s *corev1.SecurityContext) {
			s.RunAsNonRoot, s.RunAsUser, s.AllowPrivilegeEscalation = ptr.To(true), ptr.To[int64](1000), ptr.To(false)
			s.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}
			s.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")}
			s.SELinuxOptions = &corev1.SELinuxOptions{Type: "container_t", Level: "s0:c1,c2"}
		})), nil},
		{"privileged", side(sc(func(s *corev1.SecurityContext) { s.Privileged = ptr.To(true) })),
			[]string{`spec.containers[0].securityContext.privileged: privileged: violates PodSecurity "restricted:latest": privileged (container "side" must not set securityContext.privileged=true)`}},
		{"privileged, among much else", side(func(c *corev1.Container) {
			for i := range 200 {
				c.Env = append(c.Env, corev1.EnvVar{Name: "V" + strconv.Itoa(i), Value: "x"})
			}
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 81}}
			c.SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000), Privileged: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true)}
		}), []string{"spec.containers[0].securityContext.privileged: privileged: "}},
		{"privilege escalation", side(sc(func(s *corev1.SecurityContext) { s.AllowPrivilegeEscalation = ptr.To(true) })),
			[]string{"spec.containers[0].securityContext.allowPrivilegeEscalation: allowPrivilegeEscalation: "}},
		{"added capability", side(sc(func(s *corev1.SecurityContext) {
			s.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE", "NET_ADMIN"}}
		})), []string{`spec.containers[0].securityContext.capabilities.add[1]: capabilities_restricted: violates PodSecurity "restricted:latest": unrestricted capabilities (container "side" must not include "NET_ADMIN" in securityContext.capabilities.add)`}},
		{"hostPort", side(func(c *corev1.Container) {
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 6379, HostPort: 6379}}
		}), []string{`spec.containers[0].ports[1].hostPort: hostPorts: violates PodSecurity "restricted:latest": hostPort (container "side" uses hostPort 6379)`}},
		{"seLinux spc_t", side(sc(func(s *corev1.SecurityContext) { s.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"} })),
			[]string{`spec.containers[0].securityContext.seLinuxOptions.type: seLinuxOptions: violates PodSecurity "restricted:latest": seLinuxOptions (container "side" set forbidden securityContext.seLinuxOptions: type "spc_t")`}},
		{"seLinux user and role, allowed type", side(sc(func(s *corev1.SecurityContext) {
			s.SELinuxOptions = &corev1.SELinuxOptions{Type: "container_t", User: "system_u", Role: "system_r"}
		})), []string{"spec.containers[0].securityContext.seLinuxOptions.role: seLinuxOptions: ", "spec.containers[0].securityContext.seLinuxOptions.user: seLinuxOptions: "}},
		{"seccomp unconfined", side(sc(func(s *corev1.SecurityContext) {
			s.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		})), []string{"spec.containers[0].securityContext.seccompProfile.type: seccompProfile_restricted: "}},
		{"runAsNonRoot false", side(sc(func(s *corev1.SecurityContext) { s.RunAsNonRoot = ptr.To(false) })),
			[]string{`spec.containers[0].securityContext.runAsNonRoot: runAsNonRoot: violates PodSecurity "restricted:latest": runAsNonRoot != true (container "side" must not set securityContext.runAsNonRoot=false)`}},
		{"runAsUser 0", side(sc(func(s *corev1.SecurityContext) { s.RunAsUser = ptr.To[int64](0) })),
			[]string{"spec.containers[0].securityContext.runAsUser: runAsUser: "}},
		{"unmasked /proc", side(sc(func(s *corev1.SecurityContext) { s.ProcMount = ptr.To(corev1.UnmaskedProcMount) })),
			[]string{"spec.containers[0].securityContext.procMount: procMount_restricted: "}},
		{"AppArmor unconfined", side(sc(func(s *corev1.SecurityContext) {
			s.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		})), []string{"spec.containers[0].securityContext.appArmorProfile.type: appArmorProfile: "}},
		{"Windows host process", side(sc(func(s *corev1.SecurityContext) {
			s.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		})), []string{"spec.containers[0].securityContext.windowsOptions.hostProcess: windowsHostProcess: "}},
		{"readiness probe host", side(func(c *corev1.Container) { c.ReadinessProbe = httpHost("169.254.169.254") }),
			[]string{`spec.containers[0].readinessProbe.httpGet.host: hostProbesAndHostLifecycle: violates PodSecurity "restricted:latest": probe or lifecycle host (container "side" uses probe or lifecycle host "169.254.169.254")`}},
		{"liveness and startup probe hosts", side(func(c *corev1.Container) {
			c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "10.0.0.1", Port: intstr.FromInt32(22)}}}
			c.StartupProbe = httpHost("metadata.google.internal")
		}), []string{"spec.containers[0].livenessProbe.tcpSocket.host: hostProbesAndHostLifecycle: ", "spec.containers[0].startupProbe.httpGet.host: hostProbesAndHostLifecycle: "}},
		{"lifecycle hook hosts", side(func(c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{
				PostStart: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: "kubernetes.default", Port: intstr.FromInt32(443)}},
				PreStop:   &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Host: "127.0.0.1", Port: intstr.FromInt32(6379)}},
			}
		}), []string{"spec.containers[0].lifecycle.postStart.httpGet.host: hostProbesAndHostLifecycle: ", "spec.containers[0].lifecycle.preStop.tcpSocket.host: hostProbesAndHostLifecycle: "}},
		{"probe without host", side(func(c *corev1.Container) { c.ReadinessProbe = httpHost("") }), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := defaultInput(corev1.Container{Name: "server", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}, tc.entry)
			in.Containers[1].Name = "side"
			spec := mustSkeleton(t, in)
			got := render(Check(nil, &spec, in.Containers, containersPath))
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			if got == "" {
				lines = nil
			}
			if len(lines) != len(tc.want) {
				t.Fatalf("got\n%swant %d violations: %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], strings.ReplaceAll(w, "[0]", "[1]")) {
					t.Errorf("violation %d = %s\nwant %s", i, lines[i], w)
				}
			}
		})
	}
}

// TestCheckAgreesWithTheLibrary: the checks run one by one are the ones the library's
// evaluator runs at restricted, latest: the same pods are refused for the same reasons.
func TestCheckAgreesWithTheLibrary(t *testing.T) {
	lib, err := library()
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]func(*corev1.PodSpec){
		"defaults":                func(*corev1.PodSpec) {},
		"host network":            func(s *corev1.PodSpec) { s.HostNetwork = true },
		"no pod security context": func(s *corev1.PodSpec) { s.SecurityContext = nil },
		"privileged exporter with NET_ADMIN and a host port": func(s *corev1.PodSpec) {
			s.InitContainers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true),
				Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
			s.InitContainers[0].Ports[0].HostPort = 9121
		},
		"server unconfined": func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined
			s.Containers[0].SecurityContext.ProcMount = ptr.To(corev1.UnmaskedProcMount)
		},
	}
	for name, mutate := range pods {
		t.Run(name, func(t *testing.T) {
			spec := mustSkeleton(t, defaultInput())
			mutate(&spec)
			meta := &metav1.ObjectMeta{}
			want := policy.AggregateCheckResults(lib.evaluator.EvaluatePod(Level, meta, &spec))
			var one []policy.CheckResult
			for _, c := range lib.checks {
				one = append(one, c.fn(meta, &spec))
			}
			got := policy.AggregateCheckResults(one)
			if got.ForbiddenDetail() != want.ForbiddenDetail() {
				t.Errorf("one by one: %s\nthe library: %s", got.ForbiddenDetail(), want.ForbiddenDetail())
			}
			if vs := Check(nil, &spec, nil, containersPath); len(vs) > 0 == want.Allowed {
				t.Errorf("Check found %d violations, the library allows: %v", len(vs), want.Allowed)
			}
		})
	}
}
