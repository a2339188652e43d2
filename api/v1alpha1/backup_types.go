package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ObjectStoreSpec says where backups are kept. Exactly one provider is set; today that is
// s3, which serves AWS S3 and every S3-compatible store (MinIO, Ceph RGW, versitygw,
// Google Cloud Storage in interoperability mode, ...).
type ObjectStoreSpec struct {
	// S3 is an S3-compatible object store.
	S3 *S3Spec `json:"s3"`
	// Prefix is put in front of every object the operator writes:
	// <prefix>/<namespace>/<cluster>/<backup>-<uid>/. Empty: the bucket's root.
	// A data source names a backup by its full path and leaves prefix empty. At most
	// 256 characters.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Prefix string `json:"prefix,omitempty"`
}

// S3Spec is an S3-compatible bucket.
type S3Spec struct {
	// Bucket name, by the rules of AWS S3 general purpose buckets: 3 to 63 lowercase
	// letters, digits, dots and hyphens, starting and ending with a letter or digit, no
	// "..", not an IP address, none of AWS's reserved prefixes (xn--, sthree-,
	// amzn-s3-demo-) and suffixes (-s3alias, --ol-s3, .mrap, --x-s3, --table-s3).
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	Bucket string `json:"bucket"`
	// Endpoint is the URL of the store (https://s3.example.com or
	// http://minio.storage:9000). Empty: AWS S3 of the region. At most 512 characters.
	// The operator's object-store endpoint policy refuses loopback, link-local and
	// unspecified addresses, cloud metadata addresses and names, and the Kubernetes API
	// server, and may admit only an allow-list (docs/security.md).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// Region of the bucket (AWS needs the right one; most other stores take any): at
	// most 63 letters, digits, '-' and '_'.
	// +kubebuilder:default="us-east-1"
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Region string `json:"region,omitempty"`
	// ForcePathStyle addresses objects as <endpoint>/<bucket>/<key> instead of
	// <bucket>.<endpoint>/<key>; most S3-compatible stores inside a cluster need it.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
	// Credentials name the Secret with the access key.
	Credentials S3Credentials `json:"credentials"`
	// CABundle names a Secret key holding the PEM certificates that sign the endpoint's
	// certificate, for a store with a private CA. Empty: the system's roots.
	// +optional
	CABundle *SecretKeySelector `json:"caBundle,omitempty"`
}

// S3Credentials name the keys of a Secret in the namespace of the object that uses them.
type S3Credentials struct {
	// SecretName of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName"`
	// AccessKeyIDKey is the key holding the access key ID.
	// +kubebuilder:default="AWS_ACCESS_KEY_ID"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	AccessKeyIDKey string `json:"accessKeyIDKey,omitempty"`
	// SecretAccessKeyKey is the key holding the secret access key.
	// +kubebuilder:default="AWS_SECRET_ACCESS_KEY"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	SecretAccessKeyKey string `json:"secretAccessKeyKey,omitempty"`
}

// SecretKeySelector names one key of a Secret in the same namespace.
type SecretKeySelector struct {
	// SecretName of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName"`
	// Key in the Secret.
	// +kubebuilder:default="ca.crt"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`
}

// BackupDeletionPolicy says what happens to a backup's objects when its ValkeyBackup is
// deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type BackupDeletionPolicy string

const (
	// BackupRetain keeps the objects in the store (the default): a deleted ValkeyBackup
	// can still be restored from by path.
	BackupRetain BackupDeletionPolicy = "Retain"
	// BackupDelete deletes the objects (the manifest first) before the ValkeyBackup goes.
	BackupDelete BackupDeletionPolicy = "Delete"
)

// ValkeyBackupSpec asks for one backup of one ValkeyCluster. It is immutable.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="the spec of a ValkeyBackup is immutable"
type ValkeyBackupSpec struct {
	// ClusterName is the ValkeyCluster to back up, in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ClusterName string `json:"clusterName"`
	// ObjectStore is where the backup is written.
	ObjectStore ObjectStoreSpec `json:"objectStore"`
	// DeletionPolicy: Retain (default) keeps the objects when this ValkeyBackup is
	// deleted, Delete removes them.
	// +kubebuilder:default=Retain
	// +optional
	DeletionPolicy BackupDeletionPolicy `json:"deletionPolicy,omitempty"`
}

// BackupPhase is the one-word state of a backup.
type BackupPhase string

// Values of BackupPhase.
const (
	BackupPending   BackupPhase = "Pending"
	BackupRunning   BackupPhase = "Running"
	BackupCompleted BackupPhase = "Completed"
	BackupFailed    BackupPhase = "Failed"
)

// ValkeyBackupStatus is written by the backup-controller.
type ValkeyBackupStatus struct {
	// ObservedGeneration is the generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase: Pending, Running, Completed or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// StartTime is when the first shard's transfer started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the manifest was written (Completed) or the backup failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Path is the backup's folder in the bucket (prefix included): it holds
	// manifest.json, written last, and one shard-<index>.rdb per shard. A data source
	// names a backup by this path.
	// +optional
	Path string `json:"path,omitempty"`
	// ValkeyVersion of the servers the shards were taken from (the highest).
	// +optional
	ValkeyVersion string `json:"valkeyVersion,omitempty"`
	// Size is the total size of the shards' objects in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`
	// Keys is the total number of keys in the shards' snapshots.
	// +optional
	Keys int64 `json:"keys,omitempty"`
	// Shards describes each shard's snapshot.
	// +optional
	// +listType=map
	// +listMapKey=index
	Shards []BackupShardStatus `json:"shards,omitempty"`
	// Conditions: Completed and Failed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BackupShardStatus is one shard's snapshot.
type BackupShardStatus struct {
	// Index of the shard.
	Index int32 `json:"index"`
	// Object is the snapshot's object name, relative to the backup's path.
	// +optional
	Object string `json:"object,omitempty"`
	// Size of the object in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`
	// Keys in the snapshot.
	// +optional
	Keys int64 `json:"keys,omitempty"`
	// Checksum of the object: "sha256:<hex>".
	// +optional
	Checksum string `json:"checksum,omitempty"`
	// Slots the shard owned when the backup was planned, as "start-end".
	// +optional
	Slots []string `json:"slots,omitempty"`
	// Source is the ValkeyNode the snapshot was taken from.
	// +optional
	Source string `json:"source,omitempty"`
	// SourceRole is replica, or primary when the shard had no replica in sync.
	// +optional
	SourceRole string `json:"sourceRole,omitempty"`
	// ValkeyVersion of the source server.
	// +optional
	ValkeyVersion string `json:"valkeyVersion,omitempty"`
	// RDBVersion is the snapshot's format version (from its header).
	// +optional
	RDBVersion int32 `json:"rdbVersion,omitempty"`
	// Attempts counts the transfers started for this shard.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// Phase of the shard: Pending, Running, Completed or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// Message says why the last attempt failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// ValkeyBackup is one backup of a ValkeyCluster to object storage: one RDB snapshot per
// shard, taken from an in-sync replica, and a manifest written last.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vkb,categories=valkey
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Keys",type=integer,JSONPath=`.status.keys`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=`.status.path`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ValkeyBackupSpec   `json:"spec,omitempty"`
	Status ValkeyBackupStatus `json:"status,omitempty"`
}

// ValkeyBackupList is a list of ValkeyBackup.
// +kubebuilder:object:root=true
type ValkeyBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValkeyBackup `json:"items"`
}

// BackupRetention says which of a schedule's backups are kept. The newest completed
// backup is always kept.
type BackupRetention struct {
	// KeepLast keeps this many completed backups.
	// +kubebuilder:validation:Minimum=1
	// +optional
	KeepLast *int32 `json:"keepLast,omitempty"`
	// MaxAge deletes completed backups older than this (for example 168h).
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// ValkeyBackupScheduleSpec creates a ValkeyBackup of a cluster on a schedule and deletes
// old ones.
type ValkeyBackupScheduleSpec struct {
	// ClusterName is the ValkeyCluster to back up, in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ClusterName string `json:"clusterName"`
	// Schedule in cron syntax ("0 3 * * *", UTC) or a descriptor ("@daily",
	// "@every 6h"), at most 128 characters. Two backups are at least the operator's
	// policy.minBackupInterval apart (default 5m).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule"`
	// ObjectStore is where the backups are written.
	ObjectStore ObjectStoreSpec `json:"objectStore"`
	// Retention says which completed backups are kept; failed ones are kept until a
	// newer backup completes, at most the 3 newest.
	// +optional
	Retention BackupRetention `json:"retention,omitempty"`
	// BackupDeletionPolicy is the deletionPolicy of the backups it creates: Delete
	// (default) removes a backup's objects when retention deletes it.
	// +kubebuilder:default=Delete
	// +optional
	BackupDeletionPolicy BackupDeletionPolicy `json:"backupDeletionPolicy,omitempty"`
	// Suspend stops creating backups (retention still applies).
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ValkeyBackupScheduleStatus is written by the backup-controller.
type ValkeyBackupScheduleStatus struct {
	// ObservedGeneration is the generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastScheduleTime is the time of the last backup created.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// NextScheduleTime is when the next backup is due.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// LastBackup is the name of the newest ValkeyBackup it created.
	// +optional
	LastBackup string `json:"lastBackup,omitempty"`
	// LastCompletedBackup is the name of the newest completed one.
	// +optional
	LastCompletedBackup string `json:"lastCompletedBackup,omitempty"`
	// Conditions: Scheduled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ValkeyBackupSchedule creates ValkeyBackups of a cluster on a cron schedule and removes
// old ones by retention.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vkbs,categories=valkey
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Last",type=string,JSONPath=`.status.lastBackup`
// +kubebuilder:printcolumn:name="Next",type=date,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyBackupSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ValkeyBackupScheduleSpec   `json:"spec,omitempty"`
	Status ValkeyBackupScheduleStatus `json:"status,omitempty"`
}

// ValkeyBackupScheduleList is a list of ValkeyBackupSchedule.
// +kubebuilder:object:root=true
type ValkeyBackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValkeyBackupSchedule `json:"items"`
}

// DataSource names the backup a new ValkeyCluster starts from: a ValkeyBackup of its
// namespace, or a backup's path in an object store (a backup made by another Kubernetes
// cluster). Set it at creation; it is immutable.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="dataSource is immutable"
type DataSource struct {
	// BackupName is a completed ValkeyBackup in the cluster's namespace.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	BackupName string `json:"backupName,omitempty"`
	// ObjectStore holds the backup named by path (its prefix stays empty).
	// +optional
	ObjectStore *ObjectStoreSpec `json:"objectStore,omitempty"`
	// Path is the backup's folder in the bucket: the status.path of its ValkeyBackup.
	// At most 1024 characters.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Path string `json:"path,omitempty"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &ValkeyBackup{}, &ValkeyBackupList{}, &ValkeyBackupSchedule{}, &ValkeyBackupScheduleList{})
		return nil
	})
}
