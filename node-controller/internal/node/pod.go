package node

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/memberpod"
	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// Names, ports and paths of the pods the controller builds.
const (
	// ServerContainer runs valkey-server.
	ServerContainer = v1alpha1.ServerContainerName
	// ExporterContainer runs redis_exporter. It is a native sidecar (an init container
	// with restartPolicy Always): it starts before the server and is stopped when the
	// server exits, so a pod whose server died ends (phase Failed) instead of running on
	// with only its exporter.
	ExporterContainer = v1alpha1.ExporterContainerName

	ClientPort  = 6379
	BusPort     = 16379
	MetricsPort = 9121

	// EtcDir holds everything the server reads: valkey.conf, the aclfile, the system
	// users' files it needs and the TLS files, projected from one ConfigMap and up to
	// three Secrets into one read-only volume, which only the server mounts.
	EtcDir     = "/etc/valkey"
	ConfigPath = EtcDir + "/valkey.conf"
	// VersionedDefaultsPath lists the operator's defaults that only newer versions
	// take ("major.minor key value"); the start command writes those of the server's
	// version to VersionedIncludePath, which valkey.conf includes.
	VersionedDefaultsPath = EtcDir + "/versioned-defaults"
	VersionedIncludePath  = DataDir + "/.operator-defaults.conf"
	ACLPath               = EtcDir + "/acl/" + v1alpha1.ACLFileKey
	PrimaryAuthPath       = EtcDir + "/system/" + v1alpha1.PrimaryAuthKey
	// LifecyclePasswordPath is the password of the pre-stop hook's user.
	LifecyclePasswordPath = EtcDir + "/system/" + v1alpha1.UserLifecycle
	// ExporterDir is the exporter's own volume: its password file and nothing else (no
	// replication password, no TLS key).
	ExporterDir = "/etc/valkey-exporter"
	// ExporterPasswordFilePath is redis_exporter's password file, re-read on GET
	// /-/reload when the acl-controller rotates the system passwords.
	ExporterPasswordFilePath = ExporterDir + "/" + v1alpha1.ExporterPasswordFileKey
	TLSDir                   = EtcDir + "/tls"
	// DataDir is the server's working directory: nodes.conf, RDB and AOF files.
	DataDir = "/data"
	// ClusterConfigFile is the server's nodes.conf, relative to DataDir.
	ClusterConfigFile = "nodes.conf"

	volumeEtc      = "etc"
	volumeExporter = "exporter"
	volumeData     = "data"
	volumeTmp      = "tmp"

	// ComponentServer is the value of LabelComponent on the server's objects.
	ComponentServer = "server"

	// DefaultGracePeriodSeconds is used when the spec has none (the Kubernetes default).
	DefaultGracePeriodSeconds int64 = 30
)

// Annotations the controller writes.
const (
	// AnnotationRevision (on the workload) is the spec.revision the workload was built
	// or last confirmed for.
	AnnotationRevision = "valkey.io/revision"
	// AnnotationTemplateHash (on the workload and in the pod template) is the hash of the
	// pod template the controller built, without this annotation.
	AnnotationTemplateHash = "valkey.io/pod-template-hash"
	// AnnotationConfigHash (in the pod template) is the hash of the part of valkey.conf
	// that only a restart changes, so a change of it changes the template.
	AnnotationConfigHash = "valkey.io/config-hash"
	// AnnotationConfig (on the ConfigMap) is the user configuration, as JSON, that the
	// ConfigMap's valkey.conf was rendered from: what the server runs with.
	AnnotationConfig = "valkey.io/config"
	// annotationDefaultContainer makes kubectl logs and exec pick the server.
	annotationDefaultContainer = "kubectl.kubernetes.io/default-container"
)

// podLabels are the labels of a node's pod (and of its other objects): its shard's
// labels, its node name and the component. The role label is not among them: it
// changes with failovers and is patched onto the live pod, never into a template.
func podLabels(vn *v1alpha1.ValkeyNode) map[string]string {
	l := v1alpha1.ShardLabels(vn.Spec.ClusterName, vn.Spec.ShardIndex)
	l[v1alpha1.LabelNode] = vn.Name
	l[v1alpha1.LabelComponent] = ComponentServer
	return l
}

// selectorLabels select the pod of one node (the immutable workload selector).
func selectorLabels(vn *v1alpha1.ValkeyNode) map[string]string {
	return map[string]string{
		v1alpha1.LabelName:     v1alpha1.AppName,
		v1alpha1.LabelInstance: vn.Spec.ClusterName,
		v1alpha1.LabelNode:     vn.Name,
	}
}

// buildPodTemplate builds the pod of a node from its spec. configHash identifies the
// non-live part of its valkey.conf. The result carries AnnotationTemplateHash, the hash
// of everything else in it; the same inputs always give the same template.
func buildPodTemplate(vn *v1alpha1.ValkeyNode, configHash string) (corev1.PodTemplateSpec, error) {
	spec, err := memberpod.PatchContainers(basePodSpec(vn), vn.Spec.Containers, vn.Spec.Exporter.IsEnabled())
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: podLabels(vn),
			Annotations: map[string]string{
				AnnotationConfigHash:       configHash,
				annotationDefaultContainer: ServerContainer,
			},
		},
		Spec: spec,
	}
	if vn.Spec.RestartedAt != "" {
		// A restart requested by a user (kubectl valkey restart): a new value is a new pod.
		tmpl.Annotations[v1alpha1.AnnotationRestartedAt] = vn.Spec.RestartedAt
	}
	hash, err := hashJSON(tmpl)
	if err != nil {
		return corev1.PodTemplateSpec{}, fmt.Errorf("hash pod template: %w", err)
	}
	tmpl.Annotations[AnnotationTemplateHash] = hash
	return tmpl, nil
}

// basePodSpec is the pod before the user's container patches.
func basePodSpec(vn *v1alpha1.ValkeyNode) corev1.PodSpec {
	s := vn.Spec
	spec := corev1.PodSpec{
		Containers:                    []corev1.Container{serverContainer(vn)},
		Volumes:                       volumes(vn),
		ImagePullSecrets:              append([]corev1.LocalObjectReference(nil), s.ImagePullSecrets...),
		TerminationGracePeriodSeconds: ptr.To(gracePeriod(vn)),
		RestartPolicy:                 restartPolicy(s.WorkloadType),
		SecurityContext:               memberpod.PodSecurityContext(),
		// Valkey never talks to the API server, and Service links would only add
		// variables to every container's environment.
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
	}
	if s.Exporter.IsEnabled() {
		spec.InitContainers = []corev1.Container{exporterContainer(vn)}
	}
	applyScheduling(&spec, vn)
	return spec
}

// gracePeriod is spec.terminationGracePeriodSeconds, or the Kubernetes default.
func gracePeriod(vn *v1alpha1.ValkeyNode) int64 {
	if p := vn.Spec.TerminationGracePeriodSeconds; p != nil && *p > 0 {
		return *p
	}
	return DefaultGracePeriodSeconds
}

// restartPolicy is Never for bare pods (a dead server is evidence, and the
// cluster-controller replaces the member) and Always under a workload controller.
func restartPolicy(t v1alpha1.WorkloadType) corev1.RestartPolicy {
	if t == v1alpha1.WorkloadPod {
		return corev1.RestartPolicyNever
	}
	return corev1.RestartPolicyAlways
}

// serverContainer runs valkey-server with the rendered config, announcing the pod IP.
func serverContainer(vn *v1alpha1.ValkeyNode) corev1.Container {
	return corev1.Container{
		Name:    ServerContainer,
		Image:   vn.Spec.Image,
		Command: serverCommand(vn),
		Env: []corev1.EnvVar{{
			Name:      "POD_IP",
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}},
		}},
		Ports: []corev1.ContainerPort{
			{Name: "client", ContainerPort: ClientPort, Protocol: corev1.ProtocolTCP},
			{Name: "bus", ContainerPort: BusPort, Protocol: corev1.ProtocolTCP},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: volumeEtc, MountPath: EtcDir, ReadOnly: true},
			{Name: volumeData, MountPath: DataDir},
			{Name: volumeTmp, MountPath: "/tmp"},
		},
		Resources:       *vn.Spec.Resources.DeepCopy(),
		LivenessProbe:   livenessProbe(vn),
		Lifecycle:       handoverHook(vn),
		SecurityContext: memberpod.ContainerSecurityContext(),
		// A server that fails leaves its last log lines as its termination message, so
		// PodReady (and the cluster's Ready) can say why with no log-reading rights.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// handoverWaitSeconds bounds how long the hook waits for the replica to take over: the
// manual failover timeout (5 s by default) and a margin, well inside the grace period.
const handoverWaitSeconds = 10

// handoverDrainSeconds bounds how long the hook then waits for the clients to move to
// the new primary (as the cluster-controller's drain of a leaving member).
const handoverDrainSeconds = 5

// handoverHook makes a primary hand its slots to a replica in sync before the server is
// stopped, then waits for its clients to follow, so a pod deleted, evicted or drained is
// one planned failover for clients, not a lost primary nor a reset connection
// (scripts/handover.sh). Valkey 9.0 also hands over by itself on SIGTERM
// (shutdown-on-sigterm failover, which the start command sets on 9.x), should the hook
// not run. It authenticates as the lifecycle user, whose rules allow PING, INFO, CLUSTER
// FAILOVER and CLIENT LIST and nothing else.
func handoverHook(vn *v1alpha1.ValkeyNode) *corev1.Lifecycle {
	args := []string{LifecyclePasswordPath, v1alpha1.UserLifecycle, strconv.Itoa(ClientPort), strconv.Itoa(handoverWaitSeconds),
		strconv.Itoa(handoverDrainSeconds), strings.Join(valkey.ControlCommands, " ")}
	if vn.Spec.TLSSecretName != "" {
		args = append(args, TLSDir+"/ca.crt")
	}
	return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: shell(drainSh+handoverSh, "handover", args...)},
	}}
}

// serverCommand starts valkey-server with the rendered config, announcing the pod IP:
// on the member's volume after repairing its cluster state (scripts/server-persistent.sh),
// or, without persistence, as a new empty node after a restart in its pod
// (scripts/server-ephemeral.sh).
//
// Both first ask the image's server for its version (scripts/start.sh): a config key the
// version does not have stops the start with a message saying so (the server itself
// would refuse the whole file), and the operator's defaults of newer versions are
// written for the version found.
func serverCommand(vn *v1alpha1.ValkeyNode) []string {
	start := startArgs(vn)
	wait := strconv.Itoa(int(restartWaitSeconds(vn)))
	// Who asks the other members whether a replica took over, and who asks a replica to
	// take over when none did (takeover.sh).
	peers := []string{v1alpha1.UserReplication, PrimaryAuthPath, v1alpha1.UserLifecycle, LifecyclePasswordPath}
	if vn.Spec.TLSSecretName != "" {
		peers = append(peers, TLSDir+"/ca.crt")
	}
	if vn.Spec.Persistence != nil {
		args := append(append(start, DataDir+"/"+ClusterConfigFile, wait), peers...)
		return shell(serverScript(true), "server", args...)
	}
	args := append(append(start, DataDir, ClusterConfigFile, startedMarker, wait), peers...)
	return shell(serverScript(false), "server", args...)
}

// serverScript is the server container's program, with the scripts it sources.
func serverScript(persistent bool) string {
	if persistent {
		return versionSh + startSh + takeoverSh + serverPersistentSh
	}
	return versionSh + startSh + takeoverSh + serverEphemeralSh
}

// startArgs are the arguments of prepare_start: the config file, the version the
// config's keys need and those keys, the versioned defaults and the file to write them.
func startArgs(vn *v1alpha1.ValkeyNode) []string {
	need, keys := valkeyconf.Required(vn.Spec.Config)
	required, names := "-", "-"
	if !need.IsZero() {
		required, names = fmt.Sprintf("%d.%d", need.Major, need.Minor), strings.Join(keys, ",")
	}
	return []string{ConfigPath, required, names, VersionedDefaultsPath, VersionedIncludePath}
}

// startedMarker, in the data directory of a member without persistence, says that a
// server already ran in this pod.
const startedMarker = ".server-started"

// restartWaitSeconds is how long a restarted primary waits for a replica to take its
// slots over (takeover.sh) before it has its most caught-up replica take over without a
// vote, and again after that: twice the node timeout (one to flag the old identity as
// failing, one for the election and its retry) and two seconds, as long as the operator
// gives Valkey before it forces a takeover. With the operator's fast failover the wait
// ends within a second or two.
func restartWaitSeconds(vn *v1alpha1.ValkeyNode) int32 {
	return int32((2*valkeyconf.NodeTimeout(vn.Spec.Config) + 2*time.Second + time.Second - 1) / time.Second)
}

// Timing of the liveness probe: a server that has refused connections for about 30 s
// is dead.
const (
	probeInitialDelay = 10
	probePeriod       = 10
	probeTimeout      = 5
	probeFailures     = 3
)

// livenessProbe restarts a server whose process no longer takes connections: the
// kubelet opens the client port itself (a TCP probe), which starts no process in the
// container and costs the node nothing per member. An exec probe (an authenticated
// PING through valkey-cli) costs a runc exec and four processes per member every period,
// and on a loaded node it times out and restarts healthy servers, the worst moment to
// lose one. A server that accepts connections but does not answer (stopped, or
// wedged) is found by the cluster instead: its peers flag it failing after the node
// timeout and a primary's shard fails over. There is no readiness probe: cluster
// clients find members through the cluster protocol, not through Service endpoints.
func livenessProbe(vn *v1alpha1.ValkeyNode) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{
			TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(ClientPort)},
		},
		// Counted from each start of the container: a restart first waits, twice at most.
		InitialDelaySeconds: probeInitialDelay + 2*restartWaitSeconds(vn),
		PeriodSeconds:       probePeriod,
		TimeoutSeconds:      probeTimeout,
		FailureThreshold:    probeFailures,
		SuccessThreshold:    1,
	}
}

// exporterContainer runs redis_exporter against the server over the pod's loopback
// interface, as the exporter's user, with its config scraping off (CONFIG GET would
// read the replication password, and ACLs cannot limit it to some keys). It mounts only
// its password file. With TLS it speaks TLS without checking the server's certificate:
// the certificate names the cluster's Services, not localhost, and the connection
// never leaves the pod's network namespace, so it needs no CA (nor client certificate:
// the servers do not ask for one).
func exporterContainer(vn *v1alpha1.ValkeyNode) corev1.Container {
	scheme := "redis"
	if vn.Spec.TLSSecretName != "" {
		scheme = "rediss"
	}
	env := []corev1.EnvVar{
		{Name: "REDIS_ADDR", Value: fmt.Sprintf("%s://localhost:%d", scheme, ClientPort)},
		{Name: "REDIS_EXPORTER_CONFIG_COMMAND", Value: "-"},
	}
	if name := vn.Spec.SystemUsersSecretName; name != "" {
		env = append(env,
			corev1.EnvVar{Name: "REDIS_USER", Value: v1alpha1.UserExporter},
			corev1.EnvVar{Name: "REDIS_PASSWORD_FILE", Value: ExporterPasswordFilePath})
	}
	if vn.Spec.TLSSecretName != "" {
		env = append(env, corev1.EnvVar{Name: "REDIS_EXPORTER_SKIP_TLS_VERIFICATION", Value: "true"})
	}
	return corev1.Container{
		Name:            ExporterContainer,
		Image:           vn.Spec.Exporter.ImageOrDefault(),
		Env:             env,
		Ports:           []corev1.ContainerPort{{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP}},
		VolumeMounts:    exporterMounts(vn),
		Resources:       *vn.Spec.Exporter.Resources.DeepCopy(),
		RestartPolicy:   ptr.To(corev1.ContainerRestartPolicyAlways),
		SecurityContext: memberpod.ContainerSecurityContext(),
	}
}

// exporterMounts is the exporter's volume, when there is a password file to mount.
func exporterMounts(vn *v1alpha1.ValkeyNode) []corev1.VolumeMount {
	if vn.Spec.SystemUsersSecretName == "" {
		return nil
	}
	return []corev1.VolumeMount{{Name: volumeExporter, MountPath: ExporterDir, ReadOnly: true}}
}

// volumes are the server's projected configuration, the exporter's password file, the
// data directory and /tmp.
func volumes(vn *v1alpha1.ValkeyNode) []corev1.Volume {
	data := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	if usesClaim(vn) {
		data = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(vn)}}
	}
	out := []corev1.Volume{
		{Name: volumeEtc, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources:     projections(vn),
			DefaultMode: ptr.To[int32](0o440),
		}}},
	}
	if vn.Spec.Exporter.IsEnabled() && vn.Spec.SystemUsersSecretName != "" {
		out = append(out, corev1.Volume{Name: volumeExporter, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{secretProjection(vn.Spec.SystemUsersSecretName,
				v1alpha1.ExporterPasswordFileKey, v1alpha1.ExporterPasswordFileKey)},
			DefaultMode: ptr.To[int32](0o440),
		}}})
	}
	return append(out,
		corev1.Volume{Name: volumeData, VolumeSource: data},
		corev1.Volume{Name: volumeTmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
}

// projections put the config, the aclfile, the system users' files the server needs
// (the replication include and the lifecycle user's password: not the operator's nor
// the exporter's) and the TLS files under EtcDir. Projected files follow their sources, so ACL LOAD
// and certificate reloads see new content without a restart.
func projections(vn *v1alpha1.ValkeyNode) []corev1.VolumeProjection {
	s := vn.Spec
	out := []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: vn.Name},
		Items: []corev1.KeyToPath{{Key: ConfigKey, Path: relPath(ConfigPath)},
			{Key: VersionedDefaultsKey, Path: relPath(VersionedDefaultsPath)}},
	}}}
	if s.ACLSecretName != "" {
		out = append(out, secretProjection(s.ACLSecretName, v1alpha1.ACLFileKey, relPath(ACLPath)))
	}
	if s.SystemUsersSecretName != "" {
		out = append(out, secretProjection(s.SystemUsersSecretName,
			v1alpha1.PrimaryAuthKey, relPath(PrimaryAuthPath),
			v1alpha1.UserLifecycle, relPath(LifecyclePasswordPath)))
	}
	if s.TLSSecretName != "" {
		out = append(out, secretProjection(s.TLSSecretName,
			"ca.crt", relPath(TLSDir+"/ca.crt"), "tls.crt", relPath(TLSDir+"/tls.crt"), "tls.key", relPath(TLSDir+"/tls.key")))
	}
	return out
}

// secretProjection projects keys of a Secret; keyPaths alternates key and path.
func secretProjection(name string, keyPaths ...string) corev1.VolumeProjection {
	items := make([]corev1.KeyToPath, 0, len(keyPaths)/2)
	for i := 0; i+1 < len(keyPaths); i += 2 {
		items = append(items, corev1.KeyToPath{Key: keyPaths[i], Path: keyPaths[i+1]})
	}
	return corev1.VolumeProjection{Secret: &corev1.SecretProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items,
	}}
}

// relPath is a path under EtcDir, relative to it.
func relPath(p string) string { return strings.TrimPrefix(p, EtcDir+"/") }

// applyScheduling passes the scheduling settings through, makes topology spread
// constraints shard-aware, and by default keeps a shard's members apart and spreads the
// cluster's members evenly (defaultAntiAffinity).
func applyScheduling(spec *corev1.PodSpec, vn *v1alpha1.ValkeyNode) {
	shard := v1alpha1.ShardLabels(vn.Spec.ClusterName, vn.Spec.ShardIndex)
	var affinity *corev1.Affinity
	if s := vn.Spec.Scheduling; s != nil {
		spec.Tolerations = append([]corev1.Toleration(nil), s.Tolerations...)
		if len(s.NodeSelector) > 0 {
			spec.NodeSelector = maps.Clone(s.NodeSelector)
		}
		spec.PriorityClassName = s.PriorityClassName
		spec.TopologySpreadConstraints = shardSpread(s.TopologySpreadConstraints, shard)
		affinity = s.Affinity.DeepCopy()
	}
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.PodAntiAffinity == nil {
		affinity.PodAntiAffinity = defaultAntiAffinity(v1alpha1.ClusterLabels(vn.Spec.ClusterName), shard)
	}
	spec.Affinity = affinity
}

// shardSpread scopes each constraint to the pods of the node's shard.
func shardSpread(in []corev1.TopologySpreadConstraint, shard map[string]string) []corev1.TopologySpreadConstraint {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.TopologySpreadConstraint, 0, len(in))
	for _, c := range in {
		c = *c.DeepCopy()
		c.LabelSelector = &metav1.LabelSelector{MatchLabels: maps.Clone(shard)}
		out = append(out, c)
	}
	return out
}

// Weights of the default anti-affinity's preferences, in the order they matter.
const (
	weightShardNode     = 100
	weightShardZone     = 50
	weightClusterSpread = 10
)

// defaultAntiAffinity is what the operator prefers when the user sets no pod
// anti-affinity, all of it preferred (a pod is placed even where none holds):
//   - nodes that run no other member of the pod's shard: a node's loss takes one member of
//     a shard at most, and a primary never shares its node with its own replica;
//   - zones (topology.kubernetes.io/zone) that run no other member of the shard;
//   - nodes that run fewer members of the cluster: members of every shard on every node,
//     so that the cluster-controller can choose one primary per node (failback.go of the
//     cluster-controller), which scheduling cannot do itself, as a pod does not know
//     whether its member will be a primary.
func defaultAntiAffinity(cluster, shard map[string]string) *corev1.PodAntiAffinity {
	term := func(weight int32, sel map[string]string, key string) corev1.WeightedPodAffinityTerm {
		return corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(sel)},
			TopologyKey:   key,
		}}
	}
	return &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
		term(weightShardNode, shard, corev1.LabelHostname),
		term(weightShardZone, shard, corev1.LabelTopologyZone),
		term(weightClusterSpread, cluster, corev1.LabelHostname),
	}}
}

// hashJSON is a short, stable hash of v's JSON (maps are encoded in key order).
func hashJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return hashBytes(b), nil
}

// hashBytes is the first 16 hex digits of the SHA-256 of b.
func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}
