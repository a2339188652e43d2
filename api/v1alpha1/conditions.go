package v1alpha1

// Condition types. Each is written by exactly one controller (its owner, named in the
// comment) with a server-side apply patch under that controller's field manager; the
// table is docs/status-contract.md. InvalidSpec is the exception: every controller sets
// it, with the same content, as the guard in front of its reconcile.
const (
	// ConditionReady (ValkeyCluster, cluster-controller): every slot is served, every
	// shard of the spec has its primary and all its replicas in sync, and every member
	// agrees the cluster is ok. It does not wait for the spec to be applied: a roll, a
	// scale or a live change in flight keeps a serving cluster Ready, and Progressing
	// says what is still to do. Of the other controllers' inputs it sums up the Secrets
	// the acl- and tls-controllers name in status (WaitingForACL, WaitingForTLS) and, with
	// spec.dataSource, Restored (WaitingForRestore); not ACLReady, TLSReady or
	// CertificateExpiring, whose refused changes leave the members serving.
	ConditionReady = "Ready"
	// ConditionProgressing (ValkeyCluster, cluster-controller): the operator is changing
	// the cluster (forming, rolling, scaling, healing); the reason names the step.
	ConditionProgressing = "Progressing"
	// ConditionDegraded (ValkeyCluster, cluster-controller): the cluster serves with less
	// redundancy than asked, or some slots are not served; the reason names the cause.
	ConditionDegraded = "Degraded"
	// ConditionClusterFormed (ValkeyCluster, cluster-controller): every member knows
	// every other member.
	ConditionClusterFormed = "ClusterFormed"
	// ConditionSlotsAssigned (ValkeyCluster, cluster-controller): all 16384 slots are
	// owned by the spec's shards and none is importing or migrating.
	ConditionSlotsAssigned = "SlotsAssigned"
	// ConditionConfigurationWarning (ValkeyCluster, cluster-controller): the spec is
	// accepted but unwise (for example GracePeriodTooShort).
	ConditionConfigurationWarning = "ConfigurationWarning"
	// ConditionPodUnschedulable (ValkeyCluster, cluster-controller): a member's pod
	// cannot be scheduled; the message carries the scheduler's.
	ConditionPodUnschedulable = "PodUnschedulable"
	// ConditionExternalAddressPending (ValkeyCluster, cluster-controller): with
	// spec.externalAccess, a member has no external address announced yet (its Service
	// has no address, its node is unknown, or its Valkey cannot announce a node port);
	// Ready waits for it. False with reason ExternalAccessOff when external access is off.
	ConditionExternalAddressPending = "ExternalAddressPending"
	// ConditionPrimariesSpread (ValkeyCluster, cluster-controller): with
	// spec.primaryPlacement policy Spread, True when the primaries run as the placement
	// rule asks (reason Spread) or as evenly as the nodes the members run on allow
	// (BestPossible); False while a better spread exists (NotSpread): the message names
	// the shards and what the operator does or waits for to restore it. Unknown with
	// policy None (PlacementOff) and while a primary's node is not known (Unknown).
	ConditionPrimariesSpread = "PrimariesSpread"
	// ConditionPaused (ValkeyCluster, cluster-controller): the cluster is paused for
	// maintenance (annotation valkey.io/paused=true): no planned change starts, healing
	// goes on. The acl-, tls- and backup-controllers read it too (see Paused) and hold
	// their own rollouts while it is True.
	ConditionPaused = "Paused"
	// ConditionReconciling (ValkeyCluster, cluster-controller): the same status, reason
	// and message as Progressing, under the name kstatus (Flux, kpt, cli-utils) reads:
	// True while the spec is being applied; False while Stalled.
	ConditionReconciling = "Reconciling"
	// ConditionStalled (ValkeyCluster, cluster-controller): the operator cannot make
	// progress until a user acts (a spec that is invalid or changes an immutable field, a
	// roll blocked, members that cannot run); kstatus reads it as Failed.
	ConditionStalled = "Stalled"
	// ConditionACLReady (ValkeyCluster, acl-controller): the aclfile Secret holds the
	// current users and status.acl names it.
	ConditionACLReady = "ACLReady"
	// ConditionTLSReady (ValkeyCluster, tls-controller): the certificate Secret passed
	// every check and status.tls describes it.
	ConditionTLSReady = "TLSReady"
	// ConditionCertificateExpiring (ValkeyCluster, tls-controller): the certificate
	// expires within the warning window.
	ConditionCertificateExpiring = "CertificateExpiring"
	// ConditionInvalidSpec (ValkeyCluster and ValkeyNode, every controller): the spec
	// breaks a validation rule; controllers do not act on it.
	ConditionInvalidSpec = "InvalidSpec"

	// ConditionPodReady (ValkeyNode, node-controller): the server's pod runs.
	ConditionPodReady = "PodReady"
	// ConditionStorageReady (ValkeyNode, node-controller): the member's volume is bound
	// at the requested size (True without persistence).
	ConditionStorageReady = "StorageReady"
	// ConditionConfigApplied (ValkeyNode, node-controller): the live settings of the
	// spec are in effect on the server.
	ConditionConfigApplied = "ConfigApplied"
	// ConditionServerDown (ValkeyNode, node-controller): the kubelet reported that the
	// member's server process exited (its container terminated or restarted) and the
	// server has not answered since. Only a report of the process's own end sets it: a
	// node that stops reporting, a partition, a pod being deleted or a pod that is gone
	// never do, as the process may still run. The cluster-controller promotes a dead
	// primary's replica at once on it, instead of waiting for Valkey's gossip.
	ConditionServerDown = "ServerDown"
	// ConditionJoined (ValkeyNode, cluster-controller): the member is part of the Valkey
	// cluster in its intended role.
	ConditionJoined = "Joined"
	// ConditionSynced (ValkeyNode, cluster-controller): a replica's link is up and it
	// has caught up with its primary (True for a primary).
	ConditionSynced = "Synced"
	// ConditionACLApplied (ValkeyNode, acl-controller): the server runs the current ACL
	// revision.
	ConditionACLApplied = "ACLApplied"
	// ConditionTLSApplied (ValkeyNode, tls-controller): the server serves the current
	// certificate revision.
	ConditionTLSApplied = "TLSApplied"
	// ConditionOperatorLoginRefused (ValkeyNode and ValkeyCluster, acl-controller): the
	// member's server refuses the operator's own login (_operator: a wrong password, a
	// disabled or deleted user, or no permission for the commands the acl-controller
	// runs), as when a client granted ACL rights changed that user on the server. On a
	// member it is True while its server refuses and the operator cannot put the user
	// back live; the cluster-controller reads it and restarts the member, whose server
	// loads its aclfile at start. On the cluster it is True while any member refuses.
	ConditionOperatorLoginRefused = "OperatorLoginRefused"
)

// Condition reasons, grouped by the condition they explain.
const (
	// Shared.
	ReasonValid          = "Valid"
	ReasonInvalid        = "Invalid"
	ReasonReconcileError = "ReconcileError"
	ReasonWaiting        = "Waiting"
	ReasonUnknown        = "Unknown"
	// ReasonNameConflict (Ready and Progressing of the cluster-controller; ACLReady;
	// TLSReady): an object the operator would create for the cluster (a Service, a
	// PodDisruptionBudget, the NetworkPolicy, one of its Secrets) exists and is not the
	// cluster's. The operator never takes it over (a pre-created system users Secret
	// would give its author the operator's password); the message names it.
	ReasonNameConflict = "NameConflict"
	// ReasonReplyTooLarge (ACLReady; Ready and Progressing of the cluster-controller;
	// PodReady): a member answered a command the controller needs with more than the
	// controller reads from one member (8 MiB), for example ACL LIST after a client
	// created many users. The controller does not read it and retries on its usual
	// period; the message names the member and the command.
	ReasonReplyTooLarge = "ReplyTooLarge"

	// Ready, Progressing, Degraded, ClusterFormed, SlotsAssigned (cluster-controller).
	ReasonClusterReady       = "ClusterReady"
	ReasonCreatingMembers    = "CreatingMembers"
	ReasonWaitingForPods     = "WaitingForPods"
	ReasonWaitingForACL      = "WaitingForACL"
	ReasonWaitingForTLS      = "WaitingForTLS"
	ReasonMeetingMembers     = "MeetingMembers"
	ReasonAssigningSlots     = "AssigningSlots"
	ReasonReplicating        = "Replicating"
	ReasonWaitingForSync     = "WaitingForSync"
	ReasonRolling            = "Rolling"
	ReasonRollBlocked        = "RollBlocked"
	ReasonScalingOut         = "ScalingOut"
	ReasonScalingIn          = "ScalingIn"
	ReasonMigratingSlots     = "MigratingSlots"
	ReasonSlotsNotPropagated = "SlotsNotPropagated" // every slot served; some members' slot maps still name an old owner
	ReasonAddingReplicas     = "AddingReplicas"
	ReasonRemovingReplicas   = "RemovingReplicas"
	ReasonReplacingMember    = "ReplacingMember"
	ReasonFailingOver        = "FailingOver"
	// ReasonRecoveringLogin (Progressing): a member refuses the operator's login
	// (OperatorLoginRefused); the cluster-controller fails its shard over when it is the
	// primary, then restarts it so that its server loads the aclfile again.
	ReasonRecoveringLogin     = "RecoveringLogin"
	ReasonPartitioned         = "Partitioned"
	ReasonWaitingForMember    = "WaitingForMember"
	ReasonForgettingNodes     = "ForgettingNodes"
	ReasonReconciled          = "Reconciled"
	ReasonMissingReplicas     = "MissingReplicas"
	ReasonReplicaNotSynced    = "ReplicaNotSynced"
	ReasonPrimaryLost         = "PrimaryLost"
	ReasonSlotsUncovered      = "SlotsUncovered"
	ReasonQuorumLost          = "QuorumLost"
	ReasonDataLost            = "DataLost"
	ReasonAllSlotsAssigned    = "AllSlotsAssigned"
	ReasonOpenSlots           = "OpenSlots"
	ReasonAllMembersKnown     = "AllMembersKnown"
	ReasonMembersMissing      = "MembersMissing"
	ReasonGracePeriodTooShort = "GracePeriodTooShort"
	ReasonNoWarnings          = "NoWarnings"
	ReasonUnschedulable       = "Unschedulable"
	ReasonScheduled           = "Scheduled"
	ReasonDeleting            = "Deleting"
	ReasonImmutableField      = "ImmutableFieldChanged"
	ReasonPaused              = "Paused"
	ReasonNotPaused           = "NotPaused"
	ReasonNotStalled          = "NotStalled"
	// ReasonUnsupportedConfig (ConfigurationWarning): spec.config holds entries the key
	// table refuses (an unknown key, a value of the wrong type, a key the image's Valkey
	// lacks), admitted by an older operator or with the webhook off; the operator acts
	// on the cluster all the same, and a server may refuse them when a member restarts.
	ReasonUnsupportedConfig = "UnsupportedConfig"

	// PrimariesSpread (cluster-controller), and RestoringPlacement of Progressing: a
	// planned failover moves a shard's primary to restore the spread.
	ReasonSpread             = "Spread"
	ReasonBestPossible       = "BestPossible"
	ReasonNotSpread          = "NotSpread"
	ReasonPlacementOff       = "PlacementOff"
	ReasonRestoringPlacement = "RestoringPlacement"

	// ExternalAddressPending (cluster-controller).
	ReasonExternalAccessOff  = "ExternalAccessOff"
	ReasonAddressPending     = "AddressPending"
	ReasonAddressesAnnounced = "AddressesAnnounced"
	// ReasonAddressNotPropagated: every member announces its external address, and some
	// members do not show another's yet (gossip spreads it within seconds).
	ReasonAddressNotPropagated = "AddressNotPropagated"

	// PodReady, StorageReady, ConfigApplied (node-controller).
	ReasonPodRunning            = "Running"
	ReasonPodPending            = "Pending"
	ReasonPodUnschedulable      = "Unschedulable"
	ReasonImagePullBackOff      = "ImagePullBackOff"
	ReasonCrashLoop             = "CrashLoop"
	ReasonPodTerminated         = "Terminated"
	ReasonPodMissing            = "PodMissing"
	ReasonUpdatePending         = "UpdatePending"
	ReasonPriorityClassNotFound = "PriorityClassNotFound"
	ReasonFailedCreate          = "FailedCreate"
	ReasonStorageClassNotFound  = "StorageClassNotFound"
	ReasonStorageNotUsed        = "NotUsed"
	ReasonStoragePending        = "Pending"
	ReasonStorageBound          = "Bound"
	ReasonStorageResizing       = "Resizing"
	ReasonResizeInfeasible      = "ResizeInfeasible"
	ReasonConfigApplied         = "Applied"
	ReasonConfigRefused         = "Refused"
	ReasonServerUnreachable     = "ServerUnreachable"
	ReasonContainerExited       = "ContainerExited"
	ReasonServing               = "Serving"
	// ReasonUnsupportedServer (PodReady; Ready and Progressing of the cluster-controller):
	// the image's valkey-server is not Valkey 8.0 or later (an older Valkey, or Redis
	// under that name); the start command stopped before the server read its config.
	ReasonUnsupportedServer = "UnsupportedServer"

	// Joined, Synced (cluster-controller).
	ReasonJoined    = "Joined"
	ReasonNotJoined = "NotJoined"
	ReasonSynced    = "InSync"
	ReasonLinkDown  = "LinkDown"
	ReasonSyncing   = "Syncing"
	ReasonIsPrimary = "Primary"

	// ACLReady, ACLApplied (acl-controller).
	ReasonACLRendered     = "Rendered"
	ReasonPasswordMissing = "PasswordMissing"
	ReasonUserRefused     = "UserRefused"
	ReasonACLApplied      = "Applied"
	ReasonACLPending      = "Pending"
	ReasonRotating        = "Rotating"

	// OperatorLoginRefused (acl-controller). On a member: PasswordRefused (WRONGPASS or
	// NOAUTH: the password, or the user, is not the aclfile's), PermissionDenied (NOPERM
	// on a command the acl-controller runs) or LoginAccepted. On the cluster: LoginRefused
	// (some members refuse) or LoginAccepted.
	ReasonPasswordRefused  = "PasswordRefused"
	ReasonPermissionDenied = "PermissionDenied"
	ReasonLoginAccepted    = "LoginAccepted"
	ReasonLoginRefused     = "LoginRefused"

	// TLSReady, TLSApplied, CertificateExpiring (tls-controller).
	ReasonCertificateValid   = "CertificateValid"
	ReasonSecretMissing      = "SecretMissing"
	ReasonKeyMissing         = "KeyMissing"
	ReasonKeyMismatch        = "KeyMismatch"
	ReasonChainInvalid       = "ChainInvalid"
	ReasonUsageInvalid       = "UsageInvalid"
	ReasonExpired            = "Expired"
	ReasonNotYetValid        = "NotYetValid"
	ReasonNamesMissing       = "NamesMissing"
	ReasonExpiresSoon        = "ExpiresSoon"
	ReasonNotExpiring        = "NotExpiring"
	ReasonCertificateServed  = "Served"
	ReasonCertificatePending = "Pending"
	// ReasonMalformed (TLSReady): a key of the certificate Secret holds no readable PEM
	// certificate or unencrypted private key.
	ReasonMalformed = "Malformed"
	// ReasonSecretNameConflict (TLSReady): the operator cannot keep its copy of the
	// certificate ({cluster}-tls-accepted) because a Secret of that name is not its own (for
	// example spec.tls.certificate.secretName names it).
	ReasonSecretNameConflict = "SecretNameConflict"
	// ReasonCAShared (TLSReady, True): the certificate passed every check, but another
	// ValkeyCluster's members trust its CA too, so a member certificate of one may join
	// the other's bus.
	ReasonCAShared = "CAShared"
	// ReasonCertManagerNotInstalled (TLSReady): spec.tls.certManager asks cert-manager
	// for the certificate, but cert-manager's CRDs are not installed.
	ReasonCertManagerNotInstalled = "CertManagerNotInstalled"
	// ReasonCertificateIssuing (TLSReady): cert-manager has not written the Secret of the
	// cluster's Certificate yet; the message says what the Certificate reports.
	ReasonCertificateIssuing = "CertificateIssuing"
	// ReasonIssuingFailed (TLSReady): cert-manager tried to issue the cluster's
	// Certificate and failed; it retries with a back-off, and the message is its own.
	ReasonIssuingFailed = "IssuingFailed"
)
