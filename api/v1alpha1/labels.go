package v1alpha1

import "strconv"

// Labels and annotations the operator puts on what it creates. Identity lives in labels,
// not in names: members are named {cluster}-{random suffix}.
const (
	LabelName       = "app.kubernetes.io/name"
	LabelInstance   = "app.kubernetes.io/instance"
	LabelManagedBy  = "app.kubernetes.io/managed-by"
	LabelComponent  = "app.kubernetes.io/component"
	LabelShardIndex = "valkey.io/shard-index"
	LabelRole       = "valkey.io/role"
	LabelNode       = "valkey.io/node"

	// AppName is the value of LabelName on everything of a Valkey cluster.
	AppName = "valkey"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "valkey-operator"

	// AnnotationRotateSystemPasswords on a ValkeyCluster requests a rotation of the
	// operator's own users' passwords; its value is any new token (a timestamp). The
	// acl-controller reads it and never writes it: status.acl.rotation says where the
	// rotation stands and which value it completed last.
	AnnotationRotateSystemPasswords = "valkey.io/rotate-system-passwords"

	// AnnotationPaused on a ValkeyCluster, with the value "true", pauses the cluster for
	// maintenance: no planned change starts (rolls, scales, live config, ACL and TLS
	// rollouts), the healing of lost members goes on and deletion still works. The
	// cluster-controller reports it in the Paused condition, which the other controllers
	// read. Removing it (or any other value) resumes.
	AnnotationPaused = "valkey.io/paused"

	// AnnotationRestartedAt on a ValkeyCluster requests a rolling restart of every member
	// whose pod was built before it: an RFC 3339 time, copied into the members' specs
	// (ValkeyNodeSpec.RestartedAt), so the cluster-controller rolls them as any change of
	// the pod, one shard at a time with one failover per shard.
	AnnotationRestartedAt = "valkey.io/restarted-at"

	// AnnotationFailover on a ValkeyCluster requests a planned failover of one shard:
	// "<shard>" (the most caught-up replica in sync takes over) or "<shard>/<member>" (that
	// replica, a ValkeyNode of the shard), optionally followed by "@<token>" (any text
	// that makes the value new, such as a time). The cluster-controller reads it and never
	// writes it: status.failover answers the value (the replica chosen, the phase, why it
	// waits or was refused), a failover that timed out is asked again, and the request is
	// done once status.failover.request equals the value with phase Done or Refused. A new
	// value is a new request; the same value again is not.
	AnnotationFailover = "valkey.io/failover"
)

// AnnotationRestartedAtShard is the annotation on a ValkeyCluster that requests a rolling
// restart of one shard's members (see AnnotationRestartedAt).
func AnnotationRestartedAtShard(shard int32) string {
	return AnnotationRestartedAt + "-shard-" + strconv.Itoa(int(shard))
}

const (
	// AnnotationRefreshMounts on a member's pod is written by the node-controller while
	// the tls-controller waits for the pod's mounted certificate to change: updating the
	// pod makes the kubelet refresh its Secret volumes at once instead of at its next sync.
	AnnotationRefreshMounts = "valkey.io/refresh-mounts"
)

// ClusterLabels selects everything of one cluster.
func ClusterLabels(cluster string) map[string]string {
	return map[string]string{LabelName: AppName, LabelInstance: cluster, LabelManagedBy: ManagedBy}
}

// ShardLabels selects the members of one shard of a cluster.
func ShardLabels(cluster string, shard int32) map[string]string {
	l := ClusterLabels(cluster)
	l[LabelShardIndex] = strconv.Itoa(int(shard))
	return l
}

// The names of the Secrets the acl- and tls-controllers make. Only those producers build
// them; every other component reads the status field that names them (published.go), and
// `make lint` refuses a use of these builders elsewhere.

// ACLSecretName is the name of a cluster's aclfile Secret.
func ACLSecretName(cluster string) string { return cluster + "-acl" }

// SystemUsersSecretName is the name of the Secret with the operator's users' passwords.
func SystemUsersSecretName(cluster string) string { return cluster + "-system-users" }

// TLSSecretName is the name of the operator's copy of a cluster's certificate: the
// tls-controller writes the user's Secret into it only once it passes every check, and
// the pods mount it, so a bad certificate never reaches a running member.
func TLSSecretName(cluster string) string { return cluster + "-tls-accepted" }

// HeadlessServiceName is the name of the headless Service of a cluster's members.
func HeadlessServiceName(cluster string) string { return cluster + "-nodes" }

// ClientServiceName is the name of the Service clients connect to.
func ClientServiceName(cluster string) string { return cluster }

// ExternalServiceName is the name of a member's own Service (spec.externalAccess).
func ExternalServiceName(member string) string { return member + "-external" }

// AnnotationExternalDNSHostname is the annotation external-dns reads: the operator puts
// each member's name from spec.externalAccess.hostnameTemplate on its Service.
const AnnotationExternalDNSHostname = "external-dns.alpha.kubernetes.io/hostname"

// The operator's own ACL users. Their passwords are the values of the keys of the same
// names in the {cluster}-system-users Secret.
const (
	// UserOperator is the user every controller authenticates as.
	UserOperator = "_operator"
	// UserReplication is the user replicas authenticate as to their primary.
	UserReplication = "_replication"
	// UserExporter is the user of the metrics exporter: what redis_exporter reads with
	// its config scraping off, nothing else.
	UserExporter = "_exporter"
	// UserLifecycle is the user of the server container's own hooks: the pre-stop
	// hand-over (INFO replication, then CLUSTER FAILOVER on a replica, and CLIENT LIST
	// to wait for the clients to move).
	UserLifecycle = "_lifecycle"

	// PrimaryAuthKey is the key of the system users Secret holding the config snippet
	// (`primaryauth <password>`) that servers include, so the replication password is
	// never written into a ConfigMap.
	PrimaryAuthKey = "primaryauth.conf"
	// ACLFileKey is the key of the aclfile in the {cluster}-acl Secret.
	ACLFileKey = "users.acl"
)

// Names of the containers the operator builds; a spec.containers entry with one of these
// names is merged into that container, any other entry is a new sidecar.
const (
	ServerContainerName   = "server"
	ExporterContainerName = "metrics-exporter"
)
