package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadType selects the Kubernetes object that runs each member's pod.
// +kubebuilder:validation:Enum=StatefulSet;Deployment;Pod
type WorkloadType string

const (
	// WorkloadStatefulSet runs each member in a StatefulSet of one replica (the default).
	// It is the only type that supports persistence.
	WorkloadStatefulSet WorkloadType = "StatefulSet"
	// WorkloadDeployment runs each member in a Deployment of one replica with the Recreate
	// strategy; suited to caches that need neither storage nor stable identity.
	WorkloadDeployment WorkloadType = "Deployment"
	// WorkloadPod (an addition to the reference API) has the operator create each member's
	// pod itself with restartPolicy Never: a pod that dies stays dead as evidence and the
	// operator replaces the member, failing over first if it was a primary.
	WorkloadPod WorkloadType = "Pod"
)

// PDBMode selects which PodDisruptionBudgets the operator keeps for a cluster.
// +kubebuilder:validation:Enum=Cluster;Disabled;Shard
type PDBMode string

const (
	// PDBCluster keeps one PodDisruptionBudget with maxUnavailable 1 over every pod of the
	// cluster (the default, also when podDisruptionBudget is omitted).
	PDBCluster PDBMode = "Cluster"
	// PDBDisabled deletes the operator's PodDisruptionBudgets and creates none.
	PDBDisabled PDBMode = "Disabled"
	// PDBShard (an addition) keeps one PodDisruptionBudget per shard with maxUnavailable 1,
	// so a drain may take one member of every shard at the same time but never two of one.
	PDBShard PDBMode = "Shard"
)

// ReclaimPolicy says what happens to a member's volume when the member is removed.
// +kubebuilder:validation:Enum=Retain;Delete
type ReclaimPolicy string

const (
	// ReclaimRetain keeps the PersistentVolumeClaim when its ValkeyNode is deleted.
	ReclaimRetain ReclaimPolicy = "Retain"
	// ReclaimDelete deletes the PersistentVolumeClaim with its ValkeyNode.
	ReclaimDelete ReclaimPolicy = "Delete"
)

// ValkeyClusterSpec is the desired state of a Valkey cluster running in cluster mode.
// The rules that compare a change with the stored spec are CEL rules of the CRD, so the
// API server refuses such a change whether or not the webhooks run.
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.replicasPerShard) || self.replicas == self.replicasPerShard",message="replicas is another name for replicasPerShard: set one, or both to the same value",fieldPath=".replicas",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.persistence) || has(oldSelf.persistence)",message="persistence cannot be added after creation",fieldPath=".persistence",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="has(self.persistence) || !has(oldSelf.persistence)",message="persistence cannot be removed after creation",fieldPath=".persistence",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || has(oldSelf.tls)",message="TLS cannot be turned on after creation",fieldPath=".tls",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="has(self.tls) || !has(oldSelf.tls)",message="TLS cannot be turned off after creation",fieldPath=".tls",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="(has(self.workloadType) ? self.workloadType : 'StatefulSet') == (has(oldSelf.workloadType) ? oldSelf.workloadType : 'StatefulSet')",message="workloadType cannot change after creation",fieldPath=".workloadType",reason=FieldValueForbidden
type ValkeyClusterSpec struct {
	// Shards is the number of primaries; the 16384 hash slots are spread evenly over
	// them. Scaling moves slots: new shards receive slots, removed shards are drained
	// first. At most 1000, and shards x (1 + replicasPerShard) members at most what the
	// operator's policy allows per cluster (policy.maxMembersPerCluster, default 100).
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Shards int32 `json:"shards,omitempty"`

	// ReplicasPerShard is the number of replicas of each primary (default 1). 0 runs
	// primaries only: a lost primary then loses its data unless persistence brings its
	// volume back. At most 10.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +optional
	ReplicasPerShard *int32 `json:"replicasPerShard,omitempty"`

	// Replicas is another name for replicasPerShard, the one manifests written for the
	// valkey-io operator use: replicas of each primary, not pods in all. Accepted with a
	// warning; set one of the two (both only with the same value). replicasPerShard stays
	// this API's name because everywhere else in Kubernetes (Deployments, StatefulSets,
	// the scale subresource) "replicas" counts pods, and a cluster of 3 shards with
	// replicas 1 runs 6 of them.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Image is the Valkey server image. Changing it rolls the cluster one shard at a
	// time with one failover per shard. Valkey 8.0 and later are supported: an image
	// whose tag names an older Valkey, or whose repository is Redis's (the last path
	// element is redis or starts with redis-), is refused; any other image's
	// valkey-server is checked when its pod starts, and a server that is not Valkey
	// 8.0 or later makes the members UnsupportedServer. At most 512 characters.
	// +kubebuilder:default="valkey/valkey:8.0.1"
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// ImagePullSecrets are Secrets in the cluster's namespace used to pull every image of
	// the pods (server, exporter and added containers). Set at pod level. At most 16.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// Resources of the server container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Config is Valkey configuration passed to every member (valkey.conf directives).
	// maxmemory, maxmemory-policy, maxclients and the other keys listed in the
	// documentation are applied live with CONFIG SET; any other change rolls the
	// members. Keys the operator manages (ports, TLS, ACL file, cluster settings, ...)
	// are refused. At most 200 entries; each key at most 128 characters, each value at
	// most 4096, keys and values together at most 65536 bytes.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=200
	// +kubebuilder:pruning:PreserveUnknownFields
	Config Config `json:"config,omitempty"`

	// Containers is merged into the pod's containers as a strategic merge patch:
	// entries named "server" or "metrics-exporter" are merged into those containers by
	// name; any other entry is appended as a sidecar. At most 8 entries, together at most
	// 65536 bytes of JSON.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Containers []corev1.Container `json:"containers,omitempty"`

	// Exporter configures the Prometheus metrics sidecar (port 9121).
	// +kubebuilder:default={}
	// +optional
	Exporter ExporterSpec `json:"exporter,omitempty"`

	// Persistence gives each member a PersistentVolumeClaim for its data directory.
	// Requires workloadType StatefulSet; cannot be added or removed after creation;
	// size can only grow; storageClassName is immutable.
	// +optional
	Persistence *PersistenceSpec `json:"persistence,omitempty"`

	// PodDisruptionBudget selects the disruption budgets the operator keeps.
	// Omitted means mode Cluster.
	// +optional
	PodDisruptionBudget *PodDisruptionBudgetSpec `json:"podDisruptionBudget,omitempty"`

	// TerminationGracePeriodSeconds of the Valkey pods. When omitted the operator uses
	// the larger of 30 s and cluster-manual-failover-timeout plus 10 s, so a primary can
	// hand its slots to a replica before it is killed. A smaller explicit value is
	// honoured and reported by the ConfigurationWarning condition (GracePeriodTooShort).
	// +kubebuilder:validation:Minimum=1
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`

	// Scheduling is passed through to every pod of the cluster.
	// +optional
	Scheduling *SchedulingSpec `json:"scheduling,omitempty"`

	// PrimaryPlacement (an addition) says where the shards' primaries should run: by
	// default spread over the Kubernetes nodes and zones, and moved back there with
	// planned failovers after a failover left them elsewhere. It is a field of its own,
	// not a part of scheduling: scheduling shapes the pods, and changing it rolls every
	// member; which member of a shard is its primary is decided by failovers among
	// running pods, and changing this never restarts a pod. Omitted means policy Spread
	// over topology.kubernetes.io/zone.
	// +optional
	PrimaryPlacement *PrimaryPlacementSpec `json:"primaryPlacement,omitempty"`

	// TLS turns on TLS for clients, replication and the cluster bus, with a certificate
	// from a Secret you keep or issued by cert-manager. It cannot be turned on or off
	// after creation; its source may change.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// Users are ACL users, applied live to every member. Names starting with "_" are
	// reserved for the operator's own users. At most 100 users, whose lines in the
	// aclfile (names, a 65-character hash per password key or clear-text password of
	// permissions, patterns, commands, permissions) come to at most 65536 bytes together.
	// +kubebuilder:validation:MaxItems=100
	// +optional
	// +listType=map
	// +listMapKey=name
	Users []UserSpec `json:"users,omitempty"`

	// WorkloadType selects what runs each member's pod: StatefulSet (default),
	// Deployment or Pod. Immutable.
	// +kubebuilder:default=StatefulSet
	// +optional
	WorkloadType WorkloadType `json:"workloadType,omitempty"`

	// NetworkPolicy (an addition) is the NetworkPolicy the operator keeps for the
	// cluster's pods: the cluster bus only from the cluster's own members, the client
	// port from the clients listed (every pod of the namespace by default) and the
	// operator, the exporter's port from the operator and the monitoring peers.
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// DataSource names a backup the cluster starts from (an addition): the cluster
	// forms empty, the backup-controller writes every key of the backup into it, and
	// only then are spec.users loaded and the cluster reported Ready. Set it at
	// creation; it is immutable.
	// +optional
	DataSource *DataSource `json:"dataSource,omitempty"`

	// ExternalAccess (an addition) gives every member an address that clients outside
	// the Kubernetes cluster can reach: a Service per member, whose address the member
	// announces to clients (CLUSTER SLOTS, CLUSTER SHARDS, MOVED and ASK) while the
	// members keep talking to each other over their pod IPs. Omitted means type None.
	// +optional
	ExternalAccess *ExternalAccessSpec `json:"externalAccess,omitempty"`
}

// ExternalAccessType selects how clients outside the Kubernetes cluster reach the members.
// +kubebuilder:validation:Enum=None;NodePort;LoadBalancer
type ExternalAccessType string

const (
	// ExternalAccessNone: members announce their pod IPs, reachable inside the Kubernetes
	// cluster only (the default).
	ExternalAccessNone ExternalAccessType = "None"
	// ExternalAccessNodePort: a NodePort Service per member; the member announces the
	// address of the node its pod runs on and the Service's node port. Needs Valkey 9.0
	// or later (cluster-announce-client-port): on 8.x the announced port is also the one
	// replicas connect to, so it cannot differ from 6379.
	ExternalAccessNodePort ExternalAccessType = "NodePort"
	// ExternalAccessLoadBalancer: a LoadBalancer Service per member (one load balancer
	// each); the member announces the load balancer's address and port 6379. Works on
	// every supported version.
	ExternalAccessLoadBalancer ExternalAccessType = "LoadBalancer"
)

// ExternalAccessSpec configures the per-member Services and what the members announce.
type ExternalAccessSpec struct {
	// Type is None (default), NodePort or LoadBalancer.
	// +kubebuilder:default=None
	// +optional
	Type ExternalAccessType `json:"type,omitempty"`
	// Annotations of every per-member Service (cloud load-balancer settings,
	// external-dns annotations). At most 64, keys and values together at most 32768
	// bytes.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels of every per-member Service, added to the operator's own. At most 64.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// HostnameTemplate, when set, makes every member announce a DNS name instead of an
	// address (cluster-announce-hostname with cluster-preferred-endpoint-type
	// hostname), so MOVED and ASK name the member by it. Placeholders: {member} (the
	// ValkeyNode's name, required: it makes the name unique), {cluster}, {namespace}.
	// Example: "{member}.valkey.example.com". Publishing the names in DNS is the user's
	// part (external-dns reads the Service annotation
	// external-dns.alpha.kubernetes.io/hostname, which the operator sets to the name).
	// With TLS the certificate must cover the names (status.tls.missingNames).
	// +kubebuilder:validation:MaxLength=200
	// +optional
	HostnameTemplate string `json:"hostnameTemplate,omitempty"`
	// LoadBalancerSourceRanges limits the client addresses a LoadBalancer Service
	// admits (CIDRs), where the cloud supports it. At most 64.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	// +optional
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty"`
	// ExternalTrafficPolicy of the per-member Services: Cluster (the Kubernetes
	// default) or Local, which keeps the clients' source addresses (what NetworkPolicy
	// ipBlocks and ACL logs see) and, with NodePort, makes only the node of the member's
	// pod answer on its node port (the address the member announces).
	// +kubebuilder:validation:Enum=Cluster;Local
	// +optional
	ExternalTrafficPolicy corev1.ServiceExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`
}

// NetworkPolicySpec selects what may connect to the cluster's pods.
type NetworkPolicySpec struct {
	// Enabled keeps a NetworkPolicy named after the cluster. When omitted, the
	// operator's default decides (the chart's valkeyNetworkPolicy.enabled, true unless
	// the administrator turned it off). Without TLS the cluster bus has no
	// authentication: turning this off lets any pod that reaches the members join them.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// Clients may connect to the client port (6379). Empty: every pod of the cluster's
	// namespace. Clients outside the Kubernetes cluster or on a node's network (the
	// host) need an ipBlock. At most 64.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Clients []networkingv1.NetworkPolicyPeer `json:"clients,omitempty"`
	// Metrics may scrape the exporter's port (9121). Empty: the operator's default (the
	// chart's valkeyNetworkPolicy.metrics; nobody but the operator when that is empty
	// too). At most 64.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Metrics []networkingv1.NetworkPolicyPeer `json:"metrics,omitempty"`
}

// ExporterSpec configures the metrics-exporter sidecar.
type ExporterSpec struct {
	// Enabled runs the exporter in every pod (default true).
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// Image of the exporter (redis_exporter compatible). At most 512 characters.
	// +kubebuilder:default="oliver006/redis_exporter:v1.86.0"
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`
	// Resources of the exporter container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// PersistenceSpec describes each member's volume.
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="storageClassName cannot change after creation",fieldPath=".storageClassName",reason=FieldValueForbidden
type PersistenceSpec struct {
	// Size of each member's volume. It can grow (when the StorageClass allows expansion)
	// but never shrink.
	Size resource.Quantity `json:"size"`
	// StorageClassName of the volumes; the cluster's default class when empty. Immutable.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// ReclaimPolicy: Retain (default) keeps a member's claim when the member is removed,
	// Delete removes it.
	// +kubebuilder:default=Retain
	// +optional
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy,omitempty"`
}

// PodDisruptionBudgetSpec selects the disruption budgets of the cluster.
type PodDisruptionBudgetSpec struct {
	// Mode is Cluster (one budget over all pods, maxUnavailable 1), Shard (one budget per
	// shard, maxUnavailable 1) or Disabled (none; an existing one is deleted).
	// +kubebuilder:default=Cluster
	// +optional
	Mode PDBMode `json:"mode,omitempty"`
}

// PrimaryPlacementPolicy selects whether the operator keeps the primaries spread.
// +kubebuilder:validation:Enum=Spread;None
type PrimaryPlacementPolicy string

const (
	// PrimaryPlacementSpread keeps the primaries spread (the default): at rest no node
	// holds two primaries and no primary shares its node with a replica of its own shard,
	// and the same for zones (the topology key's values), as far as the nodes the
	// members run on allow; else as even as they allow. After a failover the operator
	// restores the spread with planned failovers, one shard at a time, and on every
	// failover it chooses it prefers the replica that keeps the spread.
	PrimaryPlacementSpread PrimaryPlacementPolicy = "Spread"
	// PrimaryPlacementNone leaves the primaries where failovers put them; the operator
	// neither checks nor restores their spread.
	PrimaryPlacementNone PrimaryPlacementPolicy = "None"
)

// PrimaryPlacementSpec says where the primaries should run.
type PrimaryPlacementSpec struct {
	// Policy is Spread (default) or None.
	// +kubebuilder:default=Spread
	// +optional
	Policy PrimaryPlacementPolicy `json:"policy,omitempty"`
	// TopologyKey is the node label whose values are the failure domains larger than a
	// node (zones) the primaries are spread over, on top of the nodes themselves.
	// Default topology.kubernetes.io/zone; kubernetes.io/hostname spreads over nodes
	// only. Nodes without the label are in no zone: only their node counts. A label
	// key (an optional DNS prefix and a name), at most 316 characters.
	// +kubebuilder:default="topology.kubernetes.io/zone"
	// +kubebuilder:validation:MaxLength=316
	// +optional
	TopologyKey string `json:"topologyKey,omitempty"`
}

// SchedulingSpec holds the placement settings passed to every pod.
type SchedulingSpec struct {
	// Tolerations of the pods. At most 64.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// NodeSelector of the pods. At most 64 labels.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Affinity of the pods. When it sets no pod anti-affinity, the operator adds a
	// preferred anti-affinity that keeps a shard's members on different nodes. At most
	// 32768 bytes of JSON.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// PriorityClassName of the pods; it must name an existing PriorityClass.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// TopologySpreadConstraints of the pods. The operator makes each one shard-aware: its
	// label selector is set to this cluster's pods of the same shard, so a shard's
	// members are spread over the topology domains. With DoNotSchedule, a member that
	// cannot be placed stays Pending and the cluster reports PodUnschedulable. At most
	// 16.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
}

// TLSSpec turns on TLS. The members' certificate comes from exactly one of two
// sources: a Secret you keep (certificate), or cert-manager, which issues and renews it
// (certManager). Switching between the two while TLS is on is a certificate rotation,
// rolled out live.
// +kubebuilder:validation:XValidation:rule="has(self.certificate) != has(self.certManager)",message="set exactly one of certificate (a Secret you keep) and certManager (a certificate cert-manager issues and renews)"
type TLSSpec struct {
	// Certificate names a Secret you keep with the members' certificate. Exactly one of
	// certificate and certManager.
	// +optional
	Certificate *CertificateSpec `json:"certificate,omitempty"`
	// CertManager has cert-manager (installed in the Kubernetes cluster) issue the
	// members' certificate and renew it: the tls-controller keeps a cert-manager
	// Certificate {cluster}-tls, writing Secret {cluster}-tls, with every name the
	// cluster is reached by, and checks and rolls out what cert-manager writes as it does
	// a Secret you keep. Exactly one of certificate and certManager.
	// +optional
	CertManager *CertManagerSpec `json:"certManager,omitempty"`
}

// CertificateSpec names a Secret of type kubernetes.io/tls (or Opaque) holding ca.crt,
// tls.crt and tls.key. The certificate must allow server and client authentication.
type CertificateSpec struct {
	// SecretName in the cluster's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName"`
}

// CertManagerSpec is the certificate the tls-controller asks cert-manager for. The
// names it covers are computed (the client and headless Services, the members' external
// names and addresses); dnsNames and ipAddresses add to them. Its usages are server and
// client authentication, digital signature and key encipherment: members are servers
// and clients of each other on the cluster bus.
type CertManagerSpec struct {
	// IssuerRef is the cert-manager issuer that signs the members' certificate. Omitted:
	// the operator makes a CA for this cluster alone (a self-signed Issuer
	// {cluster}-selfsigned, a CA Certificate and Secret {cluster}-ca, and a CA Issuer
	// {cluster}-ca), so a member certificate of this cluster is trusted by no other
	// cluster's bus. An issuer shared by several clusters makes every member certificate
	// it issues acceptable to all their buses.
	// +optional
	IssuerRef *IssuerRef `json:"issuerRef,omitempty"`
	// Duration is the certificate's requested lifetime, at least 1h (for example 2160h).
	// cert-manager's default (90 days) when omitted.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1h')",message="must be a duration of at least 1h, such as 2160h"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// RenewBefore is how long before the certificate's end cert-manager renews it: at
	// least 5m and less than duration (for example 360h). cert-manager's default (a
	// third of the lifetime) when omitted.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5m')",message="must be a duration of at least 5m, such as 360h"
	// +optional
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
	// PrivateKey is the algorithm and size of the members' key. cert-manager's default
	// (RSA 2048) when omitted.
	// +optional
	PrivateKey *PrivateKeySpec `json:"privateKey,omitempty"`
	// DNSNames are names the certificate covers besides those the operator computes
	// (a name under which you publish the cluster, for example). A wildcard is allowed
	// as the first label (*.cache.example.com). At most 32.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	DNSNames []string `json:"dnsNames,omitempty"`
	// IPAddresses are IP addresses the certificate covers besides those the operator
	// computes (the members' external addresses). At most 32.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=45
	// +optional
	IPAddresses []string `json:"ipAddresses,omitempty"`
}

// IssuerKind is the kind of a cert-manager issuer.
// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
type IssuerKind string

const (
	// IssuerKindIssuer is an Issuer in the cluster's namespace.
	IssuerKindIssuer IssuerKind = "Issuer"
	// IssuerKindClusterIssuer is a ClusterIssuer.
	IssuerKindClusterIssuer IssuerKind = "ClusterIssuer"
)

// CertManagerGroup is cert-manager's API group, the default group of an issuerRef.
const CertManagerGroup = "cert-manager.io"

// IssuerRef names a cert-manager issuer.
type IssuerRef struct {
	// Name of the Issuer (in the cluster's namespace) or ClusterIssuer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Kind is Issuer (default) or ClusterIssuer.
	// +kubebuilder:default=Issuer
	// +optional
	Kind IssuerKind `json:"kind,omitempty"`
	// Group of the issuer's API: cert-manager.io (default).
	// +kubebuilder:default="cert-manager.io"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group string `json:"group,omitempty"`
}

// PrivateKeyAlgorithm is the algorithm of a private key cert-manager generates.
// +kubebuilder:validation:Enum=RSA;ECDSA;Ed25519
type PrivateKeyAlgorithm string

const (
	// PrivateKeyRSA is an RSA key: size 2048 (default) to 8192.
	PrivateKeyRSA PrivateKeyAlgorithm = "RSA"
	// PrivateKeyECDSA is an ECDSA key: size 256 (default), 384 or 521.
	PrivateKeyECDSA PrivateKeyAlgorithm = "ECDSA"
	// PrivateKeyEd25519 is an Ed25519 key, which has no size.
	PrivateKeyEd25519 PrivateKeyAlgorithm = "Ed25519"
)

// PrivateKeySpec is the members' private key.
type PrivateKeySpec struct {
	// Algorithm is RSA (cert-manager's default), ECDSA or Ed25519.
	// +optional
	Algorithm PrivateKeyAlgorithm `json:"algorithm,omitempty"`
	// Size in bits: 2048 to 8192 for RSA (default 2048), 256, 384 or 521 for ECDSA
	// (default 256); none for Ed25519.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=8192
	// +optional
	Size int32 `json:"size,omitempty"`
}

// UserSpec is one ACL user.
type UserSpec struct {
	// Name of the user. Must not start with "_" (reserved) and must not be "default".
	// At most 128 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`
	// PasswordSecret names a Secret and the keys in it that hold this user's passwords;
	// each key is one accepted password (several keys allow rotation). Values are sent
	// to the servers as SHA-256 hashes only.
	// +optional
	PasswordSecret *PasswordSecretRef `json:"passwordSecret,omitempty"`
	// NoPass lets the user log in with any password. Exactly one of nopass and
	// passwordSecret must be set.
	// +optional
	NoPass bool `json:"nopass,omitempty"`
	// Commands allowed and denied: categories (@read), commands (get) and subcommands
	// (config|get).
	// +optional
	Commands *CommandsSpec `json:"commands,omitempty"`
	// Keys the user may access, by access type.
	// +optional
	Keys *KeysSpec `json:"keys,omitempty"`
	// Channels the user may use for pub/sub.
	// +optional
	Channels *ChannelsSpec `json:"channels,omitempty"`
	// Permissions is a raw ACL rule string appended after the generated rules. At most
	// 4096 characters.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Permissions string `json:"permissions,omitempty"`
}

// PasswordSecretRef points at passwords in a Secret.
type PasswordSecretRef struct {
	// Name of the Secret in the cluster's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Keys in the Secret, each holding one password. At most 16.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	Keys []string `json:"keys"`
}

// CommandsSpec lists commands to allow and deny.
type CommandsSpec struct {
	// Allow are categories (@read), commands or subcommands to allow. At most 256, each at most 1024
	// characters.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=1024
	// +optional
	Allow []string `json:"allow,omitempty"`
	// Deny are categories, commands or subcommands to deny (applied after allow). At most 256, each at most 1024
	// characters.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=1024
	// +optional
	Deny []string `json:"deny,omitempty"`
}

// KeysSpec lists key patterns by access type.
type KeysSpec struct {
	// ReadWrite patterns (~pattern). At most 256, each at most 1024
	// characters.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=1024
	// +optional
	ReadWrite []string `json:"readWrite,omitempty"`
	// ReadOnly patterns (%R~pattern). At most 256, each at most 1024
	// characters.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=1024
	// +optional
	ReadOnly []string `json:"readOnly,omitempty"`
	// WriteOnly patterns (%W~pattern). At most 256, each at most 1024
	// characters.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=1024
	// +optional
	WriteOnly []string `json:"writeOnly,omitempty"`
}

// ChannelsSpec lists pub/sub channel patterns.
type ChannelsSpec struct {
	// Patterns of channels (&pattern) the user may publish and subscribe to. Setting any
	// also grants the pub/sub commands (+@pubsub, before the user's own command rules):
	// the patterns, not the commands, limit what the user reaches. To give the patterns
	// without the commands, deny them: commands.deny ["@pubsub"] wins. At most 256, each
	// at most 1024 characters.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=1024
	// +optional
	Patterns []string `json:"patterns,omitempty"`
}

// ValkeyClusterStatus is written by the controllers, each owning its own fields (see
// docs/status-contract.md).
type ValkeyClusterStatus struct {
	// ObservedGeneration is the generation the cluster-controller last acted on fully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// SeedEndpoints are external addresses ("host:port") of members that serve, for
	// clients outside the Kubernetes cluster to start from (with spec.externalAccess;
	// a cluster client learns the rest from the servers).
	// +optional
	SeedEndpoints []string `json:"seedEndpoints,omitempty"`
	// State summarises the conditions for humans: Creating, Ready, Updating, Scaling,
	// Degraded, Failed (members cannot run until something is fixed: Ready names the
	// cause) or Invalid.
	// +optional
	State ClusterState `json:"state,omitempty"`
	// ReadyShards counts shards whose primary serves its slots and whose replicas are
	// all linked and in sync.
	// +optional
	ReadyShards int32 `json:"readyShards,omitempty"`
	// FirstReadyTime is when the cluster was Ready for the first time; unset while it is
	// being created. Only a cluster that has been Ready can have lost data: the operator
	// assigns all slots again, empty, only to such a cluster, and only once every member
	// answers with an empty dataset and none serves a slot (docs/failure-modes.md).
	// +optional
	FirstReadyTime *metav1.Time `json:"firstReadyTime,omitempty"`
	// Shards describes each shard as the servers report it.
	// +optional
	// +listType=map
	// +listMapKey=index
	Shards []ShardStatus `json:"shards,omitempty"`
	// AppliedSpec is the last valid spec the cluster-controller acted on. When the spec
	// becomes invalid (possible with the webhooks off), the operator keeps healing the
	// cluster as this spec says (lost members replaced, failovers) and applies no
	// change until the spec is valid again.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	AppliedSpec *ValkeyClusterSpec `json:"appliedSpec,omitempty"`
	// ACL is written by the acl-controller.
	// +optional
	ACL *ACLStatus `json:"acl,omitempty"`
	// TLS is written by the tls-controller.
	// +optional
	TLS *TLSStatus `json:"tls,omitempty"`
	// Failover acknowledges the valkey.io/failover annotation (cluster-controller).
	// +optional
	Failover *FailoverRequestStatus `json:"failover,omitempty"`
	// Conditions, each owned by one controller.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterState is the one-word summary shown by kubectl get.
type ClusterState string

// Values of ClusterState.
const (
	StateCreating ClusterState = "Creating"
	StateReady    ClusterState = "Ready"
	StateUpdating ClusterState = "Updating"
	StateScaling  ClusterState = "Scaling"
	StateDegraded ClusterState = "Degraded"
	StateFailed   ClusterState = "Failed"
	StateInvalid  ClusterState = "Invalid"
)

// ShardStatus is one shard as the servers report it.
type ShardStatus struct {
	// Index of the shard (0-based).
	Index int32 `json:"index"`
	// Primary is the ValkeyNode serving the shard's slots.
	// +optional
	Primary string `json:"primary,omitempty"`
	// Replicas are the ValkeyNodes replicating the primary.
	// +optional
	Replicas []string `json:"replicas,omitempty"`
	// Slots are the slot ranges the primary owns, as "start-end".
	// +optional
	Slots []string `json:"slots,omitempty"`
	// ExternalAddresses are the members' external addresses ("host:port", by ValkeyNode
	// name) as they announce them to clients, with spec.externalAccess.
	// +optional
	ExternalAddresses map[string]string `json:"externalAddresses,omitempty"`
	// PrimaryNode is the Kubernetes node the primary's pod runs on.
	// +optional
	PrimaryNode string `json:"primaryNode,omitempty"`
	// PrimaryZone is that node's value of the placement topology key
	// (spec.primaryPlacement.topologyKey, topology.kubernetes.io/zone by default);
	// empty when the node has no such label or the policy is None.
	// +optional
	PrimaryZone string `json:"primaryZone,omitempty"`
}

// FailoverRequestPhase is where a failover request stands.
// +kubebuilder:validation:Enum=Pending;InProgress;Done;Refused
type FailoverRequestPhase string

// Values of FailoverRequestPhase.
const (
	// FailoverRequestPending: the shard is not ready for the failover yet (no replica
	// in sync, the cluster settling); Message says what it waits for.
	FailoverRequestPending FailoverRequestPhase = "Pending"
	// FailoverRequestInProgress: the target was asked to take over.
	FailoverRequestInProgress FailoverRequestPhase = "InProgress"
	// FailoverRequestDone: the target serves the shard.
	FailoverRequestDone FailoverRequestPhase = "Done"
	// FailoverRequestRefused: the request cannot be carried out; Message says why.
	FailoverRequestRefused FailoverRequestPhase = "Refused"
)

// FailoverRequestStatus acknowledges a failover request. The operator reads the
// valkey.io/failover annotation and never writes it: a request is answered once
// status.failover.request equals the annotation's value and the phase is Done or
// Refused, and a new value is a new request.
type FailoverRequestStatus struct {
	// Request is the annotation's value this status is about.
	Request string `json:"request"`
	// Shard is the shard the request names (absent when the value cannot be read).
	// +optional
	Shard *int32 `json:"shard,omitempty"`
	// Target is the replica that takes over: the one the request names, or the one the
	// operator chose (the most caught-up replica in sync).
	// +optional
	Target string `json:"target,omitempty"`
	// Phase of the request.
	Phase FailoverRequestPhase `json:"phase"`
	// Message says what the request waits for, what happened, or why it was refused.
	// +optional
	Message string `json:"message,omitempty"`
	// LastTransitionTime is when the phase last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

// Answered reports whether the request value is answered: done or refused.
func (f *FailoverRequestStatus) Answered(value string) bool {
	return f != nil && f.Request == value && (f.Phase == FailoverRequestDone || f.Phase == FailoverRequestRefused)
}

// ACLStatus tells the other controllers which Secrets hold the users.
type ACLStatus struct {
	// SecretName holds the rendered aclfile (users.acl).
	SecretName string `json:"secretName"`
	// SystemUsersSecretName holds the generated passwords of the operator's users.
	SystemUsersSecretName string `json:"systemUsersSecretName"`
	// Revision identifies the content of the aclfile.
	Revision string `json:"revision"`
	// Rotation is the state of the rotation of the system users' passwords, absent
	// until one is requested.
	// +optional
	Rotation *PasswordRotationStatus `json:"rotation,omitempty"`
}

// RotationPhase is a step of a rotation of the system users' passwords.
// +kubebuilder:validation:Enum=Idle;AddingPasswords;Propagating;RetiringPasswords
type RotationPhase string

// Values of RotationPhase (docs/acl.md describes each step).
const (
	// RotationIdle: no rotation runs.
	RotationIdle RotationPhase = "Idle"
	// RotationAdding: the members accept the current and the new passwords.
	RotationAdding RotationPhase = "AddingPasswords"
	// RotationPropagating: the new passwords are the current ones; clients move to them.
	RotationPropagating RotationPhase = "Propagating"
	// RotationRetiring: the members stop accepting the old passwords.
	RotationRetiring RotationPhase = "RetiringPasswords"
)

// PasswordRotationStatus is the state of a rotation of the system users' passwords,
// requested with the valkey.io/rotate-system-passwords annotation: a value that is not
// empty and differs from completedRequest starts one.
type PasswordRotationStatus struct {
	// Phase of the rotation.
	Phase RotationPhase `json:"phase"`
	// Request is the annotation's value the running rotation serves.
	// +optional
	Request string `json:"request,omitempty"`
	// CompletedRequest is the annotation's value the last completed rotation served.
	// +optional
	CompletedRequest string `json:"completedRequest,omitempty"`
	// StartedAt is when the running rotation began.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// PhaseSince is when the running rotation entered its phase.
	// +optional
	PhaseSince *metav1.Time `json:"phaseSince,omitempty"`
	// FinishedAt is when the last rotation completed.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// TLSStatus describes the certificate the members should serve.
type TLSStatus struct {
	// SecretName is the Secret the accepted certificate was copied from: yours
	// (spec.tls.certificate.secretName), or the one cert-manager writes ({cluster}-tls)
	// with spec.tls.certManager.
	SecretName string `json:"secretName"`
	// AcceptedSecretName is the operator's copy of the accepted certificate: the Secret
	// the members mount and every component reads the CA from.
	// +optional
	AcceptedSecretName string `json:"acceptedSecretName,omitempty"`
	// Revision identifies the accepted Secret content.
	Revision string `json:"revision"`
	// Fingerprint is the SHA-256 of the accepted leaf certificate.
	Fingerprint string `json:"fingerprint"`
	// NotAfter of the accepted certificate.
	NotAfter metav1.Time `json:"notAfter"`
	// MissingNames are names the certificate does not cover: of a Secret you keep, the
	// client Service's names and the members' external hostnames; of a certificate
	// cert-manager issues, any name or address the operator asked for (until
	// cert-manager has issued a certificate with the names a change added).
	// +optional
	MissingNames []string `json:"missingNames,omitempty"`
	// Rollout is where the rollout of this revision to the members stands.
	// +optional
	Rollout *TLSRolloutStatus `json:"rollout,omitempty"`
}

// TLSRolloutPhase is where the rollout of a certificate revision stands.
// +kubebuilder:validation:Enum=RollingOut;RolledOut
type TLSRolloutPhase string

// Values of TLSRolloutPhase.
const (
	// TLSRollingOut: not every member was seen serving the revision yet.
	TLSRollingOut TLSRolloutPhase = "RollingOut"
	// TLSRolledOut: every member was seen serving the revision.
	TLSRolledOut TLSRolloutPhase = "RolledOut"
)

// TLSRolloutStatus is the rollout of status.tls.revision to the members.
type TLSRolloutStatus struct {
	// Phase of the rollout.
	Phase TLSRolloutPhase `json:"phase"`
	// ReloadAfter is set while a revision whose certificate cannot show that a member
	// loaded it (ca.crt or the chain changed but not the leaf, or the revision came
	// before the previous one was rolled out) rolls out: a member counts as serving it
	// only after a reload at or after this time, when the kubelet has surely updated
	// every pod's files.
	// +optional
	ReloadAfter *metav1.Time `json:"reloadAfter,omitempty"`
}

// ValkeyCluster runs Valkey in cluster mode: shards of a primary and replicas, with
// slots, failover, rolling changes, scaling, ACL users and TLS managed by the operator.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vkc,categories=valkey
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Shards",type=integer,JSONPath=`.spec.shards`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicasPerShard`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyShards`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ValkeyClusterSpec   `json:"spec,omitempty"`
	Status ValkeyClusterStatus `json:"status,omitempty"`
}

// ValkeyClusterList is a list of ValkeyCluster.
// +kubebuilder:object:root=true
type ValkeyClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValkeyCluster `json:"items"`
}
