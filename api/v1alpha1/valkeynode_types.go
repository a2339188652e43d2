package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Lifecycle is the phase of a member in its cluster.
// +kubebuilder:validation:Enum=Joining;Active;Leaving
type Lifecycle string

const (
	// LifecycleJoining: the member exists and is being started, met and given its role.
	LifecycleJoining Lifecycle = "Joining"
	// LifecycleActive: the member has joined and, for a replica, is in sync.
	LifecycleActive Lifecycle = "Active"
	// LifecycleLeaving: the member is being retired: its slots are moved or failed over,
	// then it is forgotten by every other member.
	LifecycleLeaving Lifecycle = "Leaving"
)

// Role is a member's replication role as the server reports it.
type Role string

// Values of Role.
const (
	RolePrimary Role = "primary"
	RoleReplica Role = "replica"
)

// ValkeyNodeSpec is everything needed to run one member's server. The cluster-controller
// writes it; the node-controller turns it into a ConfigMap, a workload and a pod.
type ValkeyNodeSpec struct {
	// ClusterName is the ValkeyCluster this member belongs to.
	// +kubebuilder:validation:MinLength=1
	ClusterName string `json:"clusterName"`
	// ShardIndex is the shard this member was created for.
	// +kubebuilder:validation:Minimum=0
	ShardIndex int32 `json:"shardIndex"`
	// Replicas is always 1: one member is one server. It is the scale subresource's
	// spec, so the disruption controller can count the pods a ValkeyNode controls
	// (workloadType Pod) and honour the cluster's PodDisruptionBudgets.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Revision authorises a new pod. The node-controller brings the workload in line
	// with this spec only when Revision differs from the revision the workload was
	// built for; otherwise changes that need a new pod are held back (and reported by
	// the PodReady condition's UpdatePending reason) until the cluster-controller
	// raises it. Live settings are applied whatever the revision.
	// +kubebuilder:validation:Minimum=1
	Revision int64 `json:"revision"`
	// WorkloadType selects the workload that runs the pod.
	WorkloadType WorkloadType `json:"workloadType"`
	// Image of the server.
	Image string `json:"image"`
	// ImagePullSecrets of the pod.
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// Resources of the server container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// Config is the user configuration of the server (already validated).
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Config Config `json:"config,omitempty"`
	// Containers patches the pod's containers (see ValkeyCluster.spec.containers).
	// +optional
	Containers []corev1.Container `json:"containers,omitempty"`
	// Exporter configures the metrics sidecar.
	// +optional
	Exporter ExporterSpec `json:"exporter,omitempty"`
	// Persistence gives the member a PersistentVolumeClaim.
	// +optional
	Persistence *PersistenceSpec `json:"persistence,omitempty"`
	// Scheduling of the pod.
	// +optional
	Scheduling *SchedulingSpec `json:"scheduling,omitempty"`
	// TerminationGracePeriodSeconds of the pod, as derived by the cluster-controller.
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// TLSSecretName, when set, makes the server speak TLS only with this certificate.
	// +optional
	TLSSecretName string `json:"tlsSecretName,omitempty"`
	// ACLSecretName is the Secret with the aclfile (users.acl).
	ACLSecretName string `json:"aclSecretName"`
	// SystemUsersSecretName is the Secret with the operator's users' passwords.
	SystemUsersSecretName string `json:"systemUsersSecretName"`
	// RestartedAt is the latest restart requested for this member (the cluster's
	// valkey.io/restarted-at annotations): the node-controller puts it into the pod's
	// annotations, so a new value builds a new pod.
	// +optional
	RestartedAt string `json:"restartedAt,omitempty"`
}

// ValkeyNodeStatus is written by several controllers, each owning its own fields.
type ValkeyNodeStatus struct {
	// PodName of the pod running the server (node-controller).
	// +optional
	PodName string `json:"podName,omitempty"`
	// PodIP of that pod (node-controller).
	// +optional
	PodIP string `json:"podIP,omitempty"`
	// Role reported by the server (node-controller).
	// +optional
	Role Role `json:"role,omitempty"`
	// Version of the server, from INFO (node-controller).
	// +optional
	Version string `json:"version,omitempty"`
	// Revision of the spec the running pod was built from (node-controller).
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// Replicas is 1 while the member's pod exists, 0 otherwise: the scale
	// subresource's status (node-controller).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ServerRestarts is the restart count of the server container of pod podName when
	// its server last answered (node-controller): a higher count means the process that
	// answered then has exited since.
	// +optional
	ServerRestarts int32 `json:"serverRestarts,omitempty"`
	// NodeName is the Kubernetes node the pod runs on (node-controller).
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ExternalAddress is the address ("host:port") the member announces to clients
	// outside the Kubernetes cluster, from its per-member Service, once the server
	// announces it (cluster-controller; spec.externalAccess of the cluster).
	// +optional
	ExternalAddress string `json:"externalAddress,omitempty"`
	// NodeID is the member's Valkey cluster node ID (cluster-controller).
	// +optional
	NodeID string `json:"nodeID,omitempty"`
	// Lifecycle of the member (cluster-controller).
	// +optional
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`
	// Failover is set while a failover the cluster-controller asked of this member (a
	// replica) is pending: from the CLUSTER FAILOVER until the member is seen serving
	// its shard or the failover's window has passed (cluster-controller).
	// +optional
	Failover *MemberFailover `json:"failover,omitempty"`
	// Conditions, each owned by one controller.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FailoverKind says how the cluster-controller asked a replica to take over.
// +kubebuilder:validation:Enum=Planned;Forced;Placement
type FailoverKind string

// Values of FailoverKind.
const (
	// FailoverPlanned: CLUSTER FAILOVER with the primary's agreement (a roll, a member
	// leaving, a user's request): no acknowledged write is lost.
	FailoverPlanned FailoverKind = "Planned"
	// FailoverForced: CLUSTER FAILOVER FORCE or TAKEOVER on a primary that is lost.
	FailoverForced FailoverKind = "Forced"
	// FailoverPlacement: a planned failover that moves a shard's primary to a node that
	// keeps the primaries spread (spec.primaryPlacement).
	FailoverPlacement FailoverKind = "Placement"
)

// MemberFailover is a failover the cluster-controller asked of a member. It is written
// before the command, so a pass that comes before the failover completed does not ask
// again, and closed once, so a failover is counted once, across controller restarts.
type MemberFailover struct {
	// Kind of the failover.
	Kind FailoverKind `json:"kind"`
	// RequestedAt is when the member was asked to take over.
	RequestedAt metav1.MicroTime `json:"requestedAt"`
}

// ValkeyNode is one member of a ValkeyCluster: one Valkey server in one pod. It is
// internal to the operator: users read it, never write it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas
// +kubebuilder:resource:shortName=vkn,categories=valkey
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Shard",type=integer,JSONPath=`.spec.shardIndex`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.status.role`
// +kubebuilder:printcolumn:name="Lifecycle",type=string,JSONPath=`.status.lifecycle`
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.status.podName`
// +kubebuilder:printcolumn:name="IP",type=string,JSONPath=`.status.podIP`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ValkeyNodeSpec   `json:"spec,omitempty"`
	Status ValkeyNodeStatus `json:"status,omitempty"`
}

// ValkeyNodeList is a list of ValkeyNode.
// +kubebuilder:object:root=true
type ValkeyNodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValkeyNode `json:"items"`
}
