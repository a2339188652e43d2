package v1alpha1

// Condition types of the backup-controller (docs/status-contract.md).
const (
	// ConditionCompleted (ValkeyBackup, backup-controller): every shard's snapshot is in
	// the object store and the manifest, written last, names them.
	ConditionCompleted = "Completed"
	// ConditionFailed (ValkeyBackup, backup-controller): the backup stopped for good; no
	// manifest was written, so no restore takes it for a backup.
	ConditionFailed = "Failed"
	// ConditionScheduled (ValkeyBackupSchedule, backup-controller): the schedule parses
	// and backups are created on it.
	ConditionScheduled = "Scheduled"
	// ConditionRestored (ValkeyCluster with spec.dataSource, backup-controller): every
	// key of the data source was written into the cluster. The cluster-controller does
	// not report Ready, and the acl-controller does not load spec.users, before it is
	// True.
	ConditionRestored = "Restored"
)

// Reasons of the backup-controller's conditions.
const (
	// Completed, Failed (ValkeyBackup).
	ReasonBackupCompleted  = "Completed"
	ReasonBackupInProgress = "InProgress"
	ReasonBackupNotFailed  = "NotFailed"
	ReasonClusterNotFound  = "ClusterNotFound"
	ReasonClusterNotReady  = "ClusterNotReady"
	ReasonStoreUnreachable = "ObjectStoreUnreachable"
	// ReasonEndpointRefused: the endpoint resolved to an address the operator's
	// object-store endpoint policy refuses (the loopback, the metadata service, the
	// Kubernetes API server, outside the allow-list); a Job refused to connect to it.
	ReasonEndpointRefused   = "EndpointRefused"
	ReasonAccessDenied      = "AccessDenied"
	ReasonCredentialsMissed = "CredentialsMissing"
	ReasonSourceLost        = "SourceLost"
	ReasonTransferFailed    = "TransferFailed"
	ReasonDeadlineExceeded  = "DeadlineExceeded"

	// Scheduled (ValkeyBackupSchedule).
	ReasonScheduleValid   = "Valid"
	ReasonInvalidSchedule = "InvalidSchedule"
	ReasonSuspended       = "Suspended"

	// Restored (ValkeyCluster).
	ReasonRestored          = "Restored"
	ReasonRestoreInProgress = "InProgress"
	ReasonWaitingForCluster = "WaitingForCluster"
	ReasonBackupNotReady    = "BackupNotReady"
	ReasonNotFound          = "NotFound"
	ReasonChecksumMismatch  = "ChecksumMismatch"
	ReasonVersionTooNew     = "VersionTooNew"
	ReasonRestoreFailed     = "RestoreFailed"
	ReasonNotAtCreation     = "NotAtCreation"

	// ReasonWaitingForRestore (Ready, Progressing; cluster-controller): the cluster is
	// formed but its data source is not restored yet.
	ReasonWaitingForRestore = "WaitingForRestore"
)

// Labels, annotations and finalizers of the backup-controller.
const (
	// LabelBackup is set on a backup's Jobs: the ValkeyBackup's name.
	LabelBackup = "valkey.io/backup"
	// LabelSchedule is set on the ValkeyBackups a schedule created.
	LabelSchedule = "valkey.io/backup-schedule"
	// LabelRestore is set on a cluster's restore Jobs: the cluster's name.
	LabelRestore = "valkey.io/restore"
	// FinalizerBackupObjects holds a ValkeyBackup with deletionPolicy Delete until its
	// objects are deleted.
	FinalizerBackupObjects = "valkey.io/backup-objects"
)

// The system users of backups and restores. Their passwords are keys of the
// {cluster}-system-users Secret; a backup Job mounts only the _backup key, a restore Job
// only the _restore key.
const (
	// UserBackup takes snapshots over the replication protocol: the handshake and INFO,
	// no key access.
	UserBackup = "_backup"
	// UserRestore writes the keys of a data source (RESTORE); it is switched on only
	// while a restore is pending.
	UserRestore = "_restore"
)
