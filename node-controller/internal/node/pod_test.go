package node

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/memberpod"
	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// TestPodTemplate checks each field of the reference API as it reaches the pod.
func TestPodTemplate(t *testing.T) {
	cases := []struct {
		name   string
		mutate []func(*v1alpha1.ValkeyNode)
		check  func(t *testing.T, spec corev1.PodSpec)
	}{
		{
			name: "server runs the rendered config and announces the pod IP",
			check: func(t *testing.T, spec corev1.PodSpec) {
				c := container(spec, ServerContainer)
				if len(c.Command) < 5 || c.Command[0] != "sh" || c.Command[4] != ConfigPath ||
					!strings.HasSuffix(c.Command[2], `exec valkey-server "$config" --cluster-announce-ip "$POD_IP"`) {
					t.Errorf("command = %q, want a shell that ends by exec'ing valkey-server with the config and the pod IP", c.Command)
				}
				if e, ok := env(c, "POD_IP"); !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef.FieldPath != "status.podIP" {
					t.Errorf("POD_IP = %+v, want the downward API status.podIP", e)
				}
				if c.Image != "valkey/valkey:8.0.1" {
					t.Errorf("image = %s", c.Image)
				}
				ports := map[string]int32{}
				for _, p := range c.Ports {
					ports[p.Name] = p.ContainerPort
				}
				if !maps.Equal(ports, map[string]int32{"client": 6379, "bus": 16379}) {
					t.Errorf("ports = %v", ports)
				}
			},
		},
		{
			name: "mounts: projected config, data and tmp",
			check: func(t *testing.T, spec corev1.PodSpec) {
				mounts := map[string]string{}
				for _, m := range container(spec, ServerContainer).VolumeMounts {
					mounts[m.MountPath] = m.Name
				}
				if !maps.Equal(mounts, map[string]string{"/etc/valkey": volumeEtc, "/data": volumeData, "/tmp": volumeTmp}) {
					t.Errorf("mounts = %v", mounts)
				}
				if volume(spec, volumeData).EmptyDir == nil {
					t.Error("data is not an emptyDir without persistence")
				}
				got := projectedPaths(volume(spec, volumeEtc))
				want := []string{"demo-acl:users.acl=acl/users.acl", "demo-system-users:_lifecycle=system/_lifecycle",
					"demo-system-users:primaryauth.conf=system/primaryauth.conf", "demo-x7k2p:valkey.conf=valkey.conf",
					"demo-x7k2p:versioned-defaults=versioned-defaults"}
				if !slices.Equal(got, want) {
					t.Errorf("projected = %q, want %q (never the operator's password)", got, want)
				}
			},
		},
		{
			name:   "the exporter mounts only its password file, also with TLS",
			mutate: []func(*v1alpha1.ValkeyNode){withTLS},
			check: func(t *testing.T, spec corev1.PodSpec) {
				exp := container(spec, ExporterContainer)
				if len(exp.VolumeMounts) != 1 || exp.VolumeMounts[0].Name != volumeExporter || exp.VolumeMounts[0].MountPath != ExporterDir {
					t.Errorf("exporter mounts = %+v, want only %s at %s", exp.VolumeMounts, volumeExporter, ExporterDir)
				}
				got := projectedPaths(volume(spec, volumeExporter))
				if want := []string{"demo-system-users:exporter-passwords.json=exporter-passwords.json"}; !slices.Equal(got, want) {
					t.Errorf("exporter volume = %q, want %q", got, want)
				}
				if e, _ := env(exp, "REDIS_PASSWORD_FILE"); e.Value != ExporterPasswordFilePath {
					t.Errorf("REDIS_PASSWORD_FILE = %q", e.Value)
				}
				if e, _ := env(exp, "REDIS_EXPORTER_CONFIG_COMMAND"); e.Value != "-" {
					t.Errorf("config scraping is on (REDIS_EXPORTER_CONFIG_COMMAND = %q): CONFIG GET would read primaryauth", e.Value)
				}
			},
		},
		{
			name: "liveness is the kubelet's TCP check of the client port, no process in the container; no readiness probe",
			check: func(t *testing.T, spec corev1.PodSpec) {
				c := container(spec, ServerContainer)
				if c.ReadinessProbe != nil || c.StartupProbe != nil {
					t.Error("the server has a readiness or startup probe")
				}
				p := c.LivenessProbe
				if p == nil || p.TCPSocket == nil || p.TCPSocket.Port.IntValue() != 6379 || p.Exec != nil {
					t.Fatalf("liveness = %+v, want a TCP check of 6379", p)
				}
			},
		},
		{
			name: "exporter is a sidecar authenticating as _exporter",
			check: func(t *testing.T, spec corev1.PodSpec) {
				c := container(spec, ExporterContainer)
				if c == nil || len(spec.InitContainers) != 1 || ptr.Deref(c.RestartPolicy, "") != corev1.ContainerRestartPolicyAlways {
					t.Fatalf("exporter = %+v, want a native sidecar", c)
				}
				if c.Image != v1alpha1.DefaultExporterImage {
					t.Errorf("image = %s", c.Image)
				}
				if e, _ := env(c, "REDIS_ADDR"); e.Value != "redis://localhost:6379" {
					t.Errorf("REDIS_ADDR = %q", e.Value)
				}
				if e, _ := env(c, "REDIS_USER"); e.Value != "_exporter" {
					t.Errorf("REDIS_USER = %q", e.Value)
				}
				// The password comes from the projected password file, which follows a
				// rotation (GET /-/reload); an environment variable would not.
				if e, ok := env(c, "REDIS_PASSWORD"); ok {
					t.Errorf("REDIS_PASSWORD = %+v, want none", e)
				}
				if e, _ := env(c, "REDIS_PASSWORD_FILE"); e.Value != "/etc/valkey-exporter/exporter-passwords.json" {
					t.Errorf("REDIS_PASSWORD_FILE = %q", e.Value)
				}
				if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != ExporterDir || !c.VolumeMounts[0].ReadOnly {
					t.Errorf("exporter mounts = %+v, want %s read-only", c.VolumeMounts, ExporterDir)
				}
				if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 9121 || c.Ports[0].Name != "metrics" {
					t.Errorf("ports = %+v", c.Ports)
				}
			},
		},
		{
			name:   "exporter disabled",
			mutate: []func(*v1alpha1.ValkeyNode){func(vn *v1alpha1.ValkeyNode) { vn.Spec.Exporter.Enabled = ptr.To(false) }},
			check: func(t *testing.T, spec corev1.PodSpec) {
				if len(spec.InitContainers) != 0 || container(spec, ExporterContainer) != nil {
					t.Error("the exporter runs although disabled")
				}
			},
		},
		{
			name: "exporter image and resources",
			mutate: []func(*v1alpha1.ValkeyNode){func(vn *v1alpha1.ValkeyNode) {
				vn.Spec.Exporter.Image = "registry.example/exporter:v2"
				vn.Spec.Exporter.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}
			}},
			check: func(t *testing.T, spec corev1.PodSpec) {
				c := container(spec, ExporterContainer)
				if c.Image != "registry.example/exporter:v2" || c.Resources.Requests.Memory().String() != "64Mi" {
					t.Errorf("exporter = %s %v", c.Image, c.Resources)
				}
			},
		},
		{
			name: "server resources",
			mutate: []func(*v1alpha1.ValkeyNode){func(vn *v1alpha1.ValkeyNode) {
				vn.Spec.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
			}},
			check: func(t *testing.T, spec corev1.PodSpec) {
				if got := container(spec, ServerContainer).Resources.Limits.Memory().String(); got != "1Gi" {
					t.Errorf("memory limit = %s", got)
				}
			},
		},
		{
			name: "containers: server env merged, exporter merged, sidecar appended",
			mutate: []func(*v1alpha1.ValkeyNode){func(vn *v1alpha1.ValkeyNode) {
				vn.Spec.Containers = []corev1.Container{
					{Name: "server", Env: []corev1.EnvVar{{Name: "MY_VAR", Value: "example"}}},
					{Name: "metrics-exporter", Env: []corev1.EnvVar{{Name: "REDIS_EXPORTER_INCL_SYSTEM_METRICS", Value: "true"}}},
					{Name: "my-sidecar", Image: "busybox:latest", Command: []string{"sh", "-c", "sleep infinity"}},
				}
			}},
			check: func(t *testing.T, spec corev1.PodSpec) {
				names := []string{}
				for _, c := range spec.Containers {
					names = append(names, c.Name)
				}
				if !slices.Equal(names, []string{"server", "my-sidecar"}) {
					t.Errorf("containers = %v, want server then the sidecar", names)
				}
				server := container(spec, ServerContainer)
				if _, ok := env(server, "MY_VAR"); !ok {
					t.Error("server lacks MY_VAR")
				}
				if _, ok := env(server, "POD_IP"); !ok || server.Image != "valkey/valkey:8.0.1" || server.LivenessProbe == nil {
					t.Error("the patch lost the server's own settings")
				}
				exp := container(spec, ExporterContainer)
				if _, ok := env(exp, "REDIS_EXPORTER_INCL_SYSTEM_METRICS"); !ok || len(spec.InitContainers) != 1 {
					t.Error("the exporter patch was not merged into the exporter")
				}
				if _, ok := env(exp, "REDIS_ADDR"); !ok {
					t.Error("the exporter patch lost REDIS_ADDR")
				}
				side := container(spec, "my-sidecar")
				if side.Image != "busybox:latest" || !slices.Equal(side.Command, []string{"sh", "-c", "sleep infinity"}) {
					t.Errorf("sidecar = %+v, want it as written", side)
				}
				// The restricted profile's container settings, filled in.
				if sc := side.SecurityContext; sc == nil || ptr.Deref(sc.AllowPrivilegeEscalation, true) ||
					sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
					t.Errorf("sidecar security context = %+v, want no escalation and every capability dropped", side.SecurityContext)
				}
			},
		},
		{
			name: "containers: exporter patch dropped when the exporter is disabled",
			mutate: []func(*v1alpha1.ValkeyNode){func(vn *v1alpha1.ValkeyNode) {
				vn.Spec.Exporter.Enabled = ptr.To(false)
				vn.Spec.Containers = []corev1.Container{{Name: "metrics-exporter", Env: []corev1.EnvVar{{Name: "X", Value: "1"}}}}
			}},
			check: func(t *testing.T, spec corev1.PodSpec) {
				if container(spec, ExporterContainer) != nil {
					t.Error("an image-less exporter was added")
				}
			},
		},
		{
			name:   "persistence mounts the claim",
			mutate: []func(*v1alpha1.ValkeyNode){withPersistence("1Gi", "")},
			check: func(t *testing.T, spec corev1.PodSpec) {
				v := volume(spec, volumeData)
				if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "demo-x7k2p-data" {
					t.Errorf("data = %+v", v.VolumeSource)
				}
			},
		},
		{
			name: "grace period default",
			check: func(t *testing.T, spec corev1.PodSpec) {
				if got := ptr.Deref(spec.TerminationGracePeriodSeconds, 0); got != 30 {
					t.Errorf("grace = %d, want 30", got)
				}
			},
		},
		{
			name:   "grace period from spec",
			mutate: []func(*v1alpha1.ValkeyNode){func(vn *v1alpha1.ValkeyNode) { vn.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60) }},
			check: func(t *testing.T, spec corev1.PodSpec) {
				if got := ptr.Deref(spec.TerminationGracePeriodSeconds, 0); got != 60 {
					t.Errorf("grace = %d, want 60", got)
				}
			},
		},
		{
			name: "image pull secrets at pod level",
			mutate: []func(*v1alpha1.ValkeyNode){func(vn *v1alpha1.ValkeyNode) {
				vn.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registrycredential"}}
			}},
			check: func(t *testing.T, spec corev1.PodSpec) {
				if len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != "registrycredential" {
					t.Errorf("imagePullSecrets = %v", spec.ImagePullSecrets)
				}
			},
		},
		{
			name:   "scheduling passed through; user anti-affinity kept",
			mutate: []func(*v1alpha1.ValkeyNode){withScheduling},
			check: func(t *testing.T, spec corev1.PodSpec) {
				if len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != "dedicated" {
					t.Errorf("tolerations = %v", spec.Tolerations)
				}
				if spec.NodeSelector["kubernetes.io/arch"] != "amd64" || spec.PriorityClassName != "high-priority" {
					t.Errorf("nodeSelector %v, priorityClassName %q", spec.NodeSelector, spec.PriorityClassName)
				}
				aa := spec.Affinity.PodAntiAffinity
				if len(aa.RequiredDuringSchedulingIgnoredDuringExecution) != 1 || len(aa.PreferredDuringSchedulingIgnoredDuringExecution) != 0 {
					t.Errorf("anti-affinity = %+v, want the user's only", aa)
				}
			},
		},
		{
			name: "without user anti-affinity, preferred ones keep the shard apart on nodes and zones and spread the cluster",
			mutate: []func(*v1alpha1.ValkeyNode){func(vn *v1alpha1.ValkeyNode) {
				vn.Spec.Scheduling = &v1alpha1.SchedulingSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}}
			}},
			check: func(t *testing.T, spec corev1.PodSpec) {
				if spec.Affinity.NodeAffinity == nil {
					t.Error("the user's node affinity was lost")
				}
				var got []string
				for _, p := range spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
					sel := "cluster"
					if maps.Equal(p.PodAffinityTerm.LabelSelector.MatchLabels, v1alpha1.ShardLabels("demo", 2)) {
						sel = "shard"
					} else if !maps.Equal(p.PodAffinityTerm.LabelSelector.MatchLabels, v1alpha1.ClusterLabels("demo")) {
						sel = fmt.Sprint(p.PodAffinityTerm.LabelSelector.MatchLabels)
					}
					got = append(got, fmt.Sprintf("%d %s %s", p.Weight, sel, p.PodAffinityTerm.TopologyKey))
				}
				want := []string{"100 shard kubernetes.io/hostname", "50 shard topology.kubernetes.io/zone", "10 cluster kubernetes.io/hostname"}
				if !slices.Equal(got, want) {
					t.Errorf("anti-affinity = %q, want %q", got, want)
				}
				if spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
					t.Error("a required term: a pod must be placed even where no preference holds")
				}
			},
		},
		{
			name: "topology spread constraints are shard-aware",
			mutate: []func(*v1alpha1.ValkeyNode){func(vn *v1alpha1.ValkeyNode) {
				vn.Spec.Scheduling = &v1alpha1.SchedulingSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
					{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule},
					{MaxSkew: 2, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway},
				}}
			}},
			check: func(t *testing.T, spec corev1.PodSpec) {
				tsc := spec.TopologySpreadConstraints
				if len(tsc) != 2 || tsc[1].MaxSkew != 2 || tsc[0].WhenUnsatisfiable != corev1.DoNotSchedule {
					t.Fatalf("constraints = %+v", tsc)
				}
				for _, c := range tsc {
					if !maps.Equal(c.LabelSelector.MatchLabels, v1alpha1.ShardLabels("demo", 2)) {
						t.Errorf("selector = %v, want the shard's labels", c.LabelSelector.MatchLabels)
					}
				}
			},
		},
		{
			name:   "TLS: files projected, TCP liveness, exporter over TLS",
			mutate: []func(*v1alpha1.ValkeyNode){withTLS},
			check: func(t *testing.T, spec corev1.PodSpec) {
				got := projectedPaths(volume(spec, volumeEtc))
				for _, want := range []string{"demo-tls:ca.crt=tls/ca.crt", "demo-tls:tls.crt=tls/tls.crt", "demo-tls:tls.key=tls/tls.key"} {
					if !slices.Contains(got, want) {
						t.Errorf("projected %q lacks %q", got, want)
					}
				}
				p := container(spec, ServerContainer).LivenessProbe
				if p.TCPSocket == nil || p.TCPSocket.Port.IntValue() != 6379 || p.Exec != nil {
					t.Errorf("liveness = %+v, want a TCP check of 6379", p)
				}
				exp := container(spec, ExporterContainer)
				if e, _ := env(exp, "REDIS_ADDR"); e.Value != "rediss://localhost:6379" {
					t.Errorf("REDIS_ADDR = %q", e.Value)
				}
				if e, _ := env(exp, "REDIS_EXPORTER_SKIP_TLS_VERIFICATION"); e.Value != "true" {
					t.Errorf("skip verification = %q", e.Value)
				}
			},
		},
		{
			name: "restricted security context on every container built",
			check: func(t *testing.T, spec corev1.PodSpec) {
				ps := spec.SecurityContext
				if !ptr.Deref(ps.RunAsNonRoot, false) || ptr.Deref(ps.RunAsUser, 0) != 999 || ptr.Deref(ps.FSGroup, 0) != 999 ||
					ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("pod security context = %+v", ps)
				}
				for _, name := range []string{ServerContainer, ExporterContainer} {
					sc := container(spec, name).SecurityContext
					if !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) ||
						!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || ptr.Deref(sc.RunAsGroup, 0) != 999 {
						t.Errorf("%s security context = %+v", name, sc)
					}
				}
			},
		},
		{
			name: "StatefulSet pods restart in place",
			check: func(t *testing.T, spec corev1.PodSpec) {
				if spec.RestartPolicy != corev1.RestartPolicyAlways {
					t.Errorf("restartPolicy = %s", spec.RestartPolicy)
				}
			},
		},
		{
			name:   "Deployment pods restart in place",
			mutate: []func(*v1alpha1.ValkeyNode){withWorkload(v1alpha1.WorkloadDeployment)},
			check: func(t *testing.T, spec corev1.PodSpec) {
				if spec.RestartPolicy != corev1.RestartPolicyAlways {
					t.Errorf("restartPolicy = %s", spec.RestartPolicy)
				}
			},
		},
		{
			name:   "bare pods never restart",
			mutate: []func(*v1alpha1.ValkeyNode){withWorkload(v1alpha1.WorkloadPod)},
			check: func(t *testing.T, spec corev1.PodSpec) {
				if spec.RestartPolicy != corev1.RestartPolicyNever {
					t.Errorf("restartPolicy = %s", spec.RestartPolicy)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, mustTemplate(t, testNode(tc.mutate...)).Spec)
		})
	}
}

// withScheduling sets the scheduling example of the reference.
func withScheduling(vn *v1alpha1.ValkeyNode) {
	vn.Spec.Scheduling = &v1alpha1.SchedulingSpec{
		Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "valkey", Effect: corev1.TaintEffectNoSchedule}},
		NodeSelector:      map[string]string{"kubernetes.io/arch": "amd64"},
		PriorityClassName: "high-priority",
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: "kubernetes.io/hostname",
			}},
		}},
	}
}

// projectedPaths lists "secretOrConfigMap:key=path" of a projected volume, sorted.
func projectedPaths(v *corev1.Volume) []string {
	var out []string
	for _, src := range v.Projected.Sources {
		name, items := "", []corev1.KeyToPath(nil)
		switch {
		case src.ConfigMap != nil:
			name, items = src.ConfigMap.Name, src.ConfigMap.Items
		case src.Secret != nil:
			name, items = src.Secret.Name, src.Secret.Items
		}
		for _, it := range items {
			out = append(out, name+":"+it.Key+"="+it.Path)
		}
	}
	slices.Sort(out)
	return out
}

func TestPodTemplateLabels(t *testing.T) {
	tmpl := mustTemplate(t, testNode())
	want := v1alpha1.ShardLabels("demo", 2)
	want[v1alpha1.LabelNode] = "demo-x7k2p"
	want[v1alpha1.LabelComponent] = "server"
	if !maps.Equal(tmpl.Labels, want) {
		t.Errorf("labels = %v, want %v", tmpl.Labels, want)
	}
	if _, ok := tmpl.Labels[v1alpha1.LabelRole]; ok {
		t.Error("the template carries the role label: a failover would roll the pod")
	}
}

// TestTemplateHash pins what changes the template hash (and so needs a new pod).
func TestTemplateHash(t *testing.T) {
	base := mustTemplate(t, testNode()).Annotations[AnnotationTemplateHash]
	if again := mustTemplate(t, testNode()).Annotations[AnnotationTemplateHash]; again != base {
		t.Fatalf("the same spec hashes to %s and %s", base, again)
	}
	cases := []struct {
		name    string
		mutate  func(*v1alpha1.ValkeyNode)
		changes bool
	}{
		{"live key changed", func(vn *v1alpha1.ValkeyNode) { vn.Spec.Config["maxmemory"] = "200mb" }, false},
		{"live key added", func(vn *v1alpha1.ValkeyNode) { vn.Spec.Config["maxmemory-policy"] = "allkeys-lru" }, false},
		{"non-live key changed", func(vn *v1alpha1.ValkeyNode) { vn.Spec.Config["appendonly"] = "yes" }, true},
		{"revision raised", func(vn *v1alpha1.ValkeyNode) { vn.Spec.Revision = 2 }, false},
		{"status changed", func(vn *v1alpha1.ValkeyNode) { vn.Status.Role = v1alpha1.RolePrimary }, false},
		{"image changed", func(vn *v1alpha1.ValkeyNode) { vn.Spec.Image = "valkey/valkey:8.1.1" }, true},
		{"grace period changed", func(vn *v1alpha1.ValkeyNode) { vn.Spec.TerminationGracePeriodSeconds = ptr.To[int64](45) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vn := testNode()
			tc.mutate(vn)
			got := mustTemplate(t, vn).Annotations[AnnotationTemplateHash]
			if (got != base) != tc.changes {
				t.Errorf("hash changed = %v, want %v", got != base, tc.changes)
			}
		})
	}
}

func TestPatchContainersEmpty(t *testing.T) {
	spec := basePodSpec(testNode())
	out, err := memberpod.PatchContainers(spec, nil, true)
	if err != nil || !reflect.DeepEqual(out, spec) {
		t.Errorf("an empty patch changed the spec (err %v)", err)
	}
}

// TestHandoverHookByVersion: every member gets the preStop handover, whatever its image
// tag says (TestHandoverAsksTheServer).
func TestHandoverHookByVersion(t *testing.T) {
	for image, want := range map[string]bool{
		"valkey/valkey:8.0.1": true, "valkey/valkey:8.1.1": true, "valkey/valkey:9.1.2": true, "valkey/valkey:latest": true,
	} {
		vn := &v1alpha1.ValkeyNode{Spec: v1alpha1.ValkeyNodeSpec{Image: image, SystemUsersSecretName: "s"}}
		h := handoverHook(vn)
		if (h != nil) != want {
			t.Errorf("%s: hook %v, want %v", image, h != nil, want)
			continue
		}
		if h != nil {
			cmd := h.PreStop.Exec.Command
			if !strings.Contains(cmd[2], "cluster failover") || !slices.Contains(cmd[4:], LifecyclePasswordPath) || !slices.Contains(cmd[4:], v1alpha1.UserLifecycle) ||
				len(cmd) != 10 || cmd[9] != strings.Join(valkey.ControlCommands, " ") {
				t.Errorf("%s: hook %q", image, cmd)
			}
		}
	}
	vn := &v1alpha1.ValkeyNode{Spec: v1alpha1.ValkeyNodeSpec{Image: "valkey/valkey:8.0.1", TLSSecretName: "t"}}
	if cmd := handoverHook(vn).PreStop.Exec.Command; cmd[len(cmd)-1] != TLSDir+"/ca.crt" || !strings.Contains(cmd[2], `--tls --cacert "$ca"`) {
		t.Errorf("TLS: %q", cmd)
	}
}

// stubServer puts a valkey-server on PATH that says it is Valkey version and otherwise
// prints its arguments, for the server commands run by the host's sh.
func stubServer(t *testing.T, version string) []string {
	t.Helper()
	bin := t.TempDir()
	stub := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo \"Valkey server v=" + version + " sha=00000000:0 malloc=libc bits=64 build=0\"; exit 0; fi\necho \"valkey-server $*\"\n"
	if err := os.WriteFile(filepath.Join(bin, "valkey-server"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "POD_IP=10.88.1.5"}
}

// runCommand runs a container command with the host's sh and returns its output and
// whether it succeeded.
func runCommand(t *testing.T, env []string, cmd []string) (string, bool) {
	t.Helper()
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Env = env
	out, err := c.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("%q: %v", cmd, err)
	}
	return string(out), err == nil
}

// mustRun runs a container command that must succeed.
func mustRun(t *testing.T, env []string, cmd []string) string {
	t.Helper()
	out, ok := runCommand(t, env, cmd)
	if !ok {
		t.Fatalf("%q failed: %s", cmd, out)
	}
	return out
}

// startFiles is a versioned-defaults file as the ConfigMap holds it, and the file the
// start command writes, for commands run in a test.
func startFiles(t *testing.T) (defaults, include string) {
	t.Helper()
	dir := t.TempDir()
	defaults, include = filepath.Join(dir, "versioned-defaults"), filepath.Join(dir, "operator-defaults.conf")
	if err := os.WriteFile(defaults, []byte(versionedDefaults(nil)), 0o644); err != nil {
		t.Fatal(err)
	}
	return defaults, include
}

// TestStartAsksTheServerForItsVersion runs the start of the server commands with a stub
// valkey-server of each version: the defaults of newer versions are written for the
// version found, and a config key the version does not have stops the start with a
// message saying why.
func TestStartAsksTheServerForItsVersion(t *testing.T) {
	for _, tc := range []struct {
		version, required, keys string
		wantInclude             string
		wantFail                string
	}{
		{"8.0.1", "-", "-", "", ""},
		{"9.1.2", "-", "-", "shutdown-on-sigterm failover\n", ""},
		{"8.1.1", "8.1", "cluster-manual-failover-timeout", "", ""},
		{"8.0.1", "8.1", "cluster-manual-failover-timeout",
			"", "config key cluster-manual-failover-timeout needs Valkey 8.1 or later; this image runs Valkey 8.0.1"},
		{"10.0.0", "9.0", "shutdown-on-sigterm", "shutdown-on-sigterm failover\n", ""},
	} {
		defaults, include := startFiles(t)
		cmd := shell(serverScript(true), "server", ConfigPath, tc.required, tc.keys, defaults, include, filepath.Join(t.TempDir(), "nodes.conf"))
		out, ok := runCommand(t, stubServer(t, tc.version), cmd)
		if tc.wantFail != "" {
			if ok || !strings.Contains(out, tc.wantFail) {
				t.Errorf("%s needing %s: ok %v, output %q", tc.version, tc.required, ok, out)
			}
			continue
		}
		if !ok || !strings.Contains(out, "Valkey "+tc.version+"\nvalkey-server "+ConfigPath) {
			t.Errorf("%s: ok %v, output %q", tc.version, ok, out)
		}
		if got, _ := os.ReadFile(include); string(got) != tc.wantInclude {
			t.Errorf("%s: included defaults %q, want %q", tc.version, got, tc.wantInclude)
		}
	}
}

// TestHandoverAsksTheServer: on every version the preStop hook asks the server (a stub
// valkey-cli here) who it is (9.x would hand over by itself, but without waiting for its
// clients), with the password in its environment.
func TestHandoverAsksTheServer(t *testing.T) {
	for _, version := range []string{"9.0.0", "8.0.1"} {
		env := stubServer(t, version)
		bin := strings.TrimPrefix(strings.SplitN(env[0], ":", 2)[0], "PATH=")
		log := filepath.Join(t.TempDir(), "cli.log")
		if err := os.WriteFile(filepath.Join(bin, "valkey-cli"), []byte("#!/bin/sh\necho \"$*\" >>"+log+"\necho role:slave\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		pw := filepath.Join(t.TempDir(), "pw")
		if err := os.WriteFile(pw, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := handoverHook(&v1alpha1.ValkeyNode{}).PreStop.Exec.Command
		cmd[4] = pw
		mustRun(t, env, cmd)
		called, _ := os.ReadFile(log)
		if !strings.Contains(string(called), "info replication") {
			t.Errorf("Valkey %s: valkey-cli called %q, want it asked for the server's role", version, called)
		}
		if strings.Contains(string(called), "secret") {
			t.Errorf("the password is on valkey-cli's command line: %q", called)
		}
	}
}

// TestServerCommand: without persistence a server restarted in its pod (its marker in
// the data directory) starts as a new, empty node, once a replica took over when it held
// slots (wait_for_takeover: TestWaitForTakeover).
func TestServerCommand(t *testing.T) {
	vn := &v1alpha1.ValkeyNode{}
	cmd := serverCommand(vn)
	start := ConfigPath + " - - " + VersionedDefaultsPath + " " + VersionedIncludePath
	peers := v1alpha1.UserReplication + " " + PrimaryAuthPath + " " + v1alpha1.UserLifecycle + " " + LifecyclePasswordPath
	if args := strings.Join(cmd[3:], " "); args != "server "+start+" "+DataDir+" "+ClusterConfigFile+" "+startedMarker+" 12 "+peers {
		t.Errorf("without persistence, arguments %q, want a restart wait of at most 12 s, who asks the peers and who asks a replica to take over", args)
	}
	// Run it with the host's sh in a data directory of its own: a cluster state file of a
	// replica, so a restart has nothing to wait for.
	data := t.TempDir()
	env := stubServer(t, "8.0.1")
	defaults, include := startFiles(t)
	run := shell(serverScript(false), "server", ConfigPath, "-", "-", defaults, include, data,
		ClusterConfigFile, startedMarker, "0", v1alpha1.UserReplication, filepath.Join(data, "auth"), v1alpha1.UserLifecycle, filepath.Join(data, "lifecycle"))
	for _, f := range []string{ClusterConfigFile, "dump.rdb", "keep.me"} {
		if err := os.WriteFile(filepath.Join(data, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out := mustRun(t, env, run); out != "Valkey 8.0.1\nvalkey-server "+ConfigPath+" --cluster-announce-ip 10.88.1.5\n" {
		t.Errorf("first start: %q", out)
	}
	if _, err := os.Stat(filepath.Join(data, ClusterConfigFile)); !os.IsNotExist(err) {
		t.Error("the first start kept the old cluster state")
	}
	if err := os.WriteFile(filepath.Join(data, "dump.rdb"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, ClusterConfigFile), []byte(divergentNodesConf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, env, run); strings.Contains(out, "waiting") {
		t.Errorf("a replica restarted in its pod waits: %q", out)
	}
	if _, err := os.Stat(filepath.Join(data, "dump.rdb")); !os.IsNotExist(err) {
		t.Error("a restart kept the old data")
	}
	if _, err := os.Stat(filepath.Join(data, "keep.me")); err != nil {
		t.Error("the start removed a file it does not own")
	}
	vn.Spec.Config = v1alpha1.Config{"cluster-node-timeout": "15000"}
	if got := restartWaitSeconds(vn); got != 32 {
		t.Errorf("wait with a 15 s node timeout = %d s, want 32", got)
	}
	if p := livenessProbe(vn); p.InitialDelaySeconds != probeInitialDelay+2*32 {
		t.Errorf("liveness initial delay = %d, want the restart wait added twice (before and after a takeover it asks for)", p.InitialDelaySeconds)
	}
	vn.Spec.Persistence = &v1alpha1.PersistenceSpec{}
	cmd = serverCommand(vn)
	if !strings.Contains(cmd[2], `exec valkey-server "$config"`) ||
		strings.Join(cmd[3:], " ") != "server "+start+" "+DataDir+"/"+ClusterConfigFile+" 32 "+peers {
		t.Errorf("with persistence the server starts on its volume, unless a replica took its slots over: %q", cmd)
	}
	// The kubelet replaces $(NAME) in commands with the container's variable NAME: the
	// scripts must hold no such reference (a user's env patch could set one).
	if ref := regexp.MustCompile(`\$\([A-Za-z_][A-Za-z0-9_]*\)`).FindString(strings.Join(cmd, " ")); ref != "" {
		t.Errorf("the kubelet would expand %s in: %q", ref, cmd)
	}
}
