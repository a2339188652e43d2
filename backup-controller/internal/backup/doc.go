// Package backup is the backup-controller: it runs the ValkeyBackups (one Job per shard,
// a manifest written last), the ValkeyBackupSchedules (a ValkeyBackup per tick, old ones
// removed by retention) and the restores of ValkeyClusters that name a data source (one
// Job per backed-up shard, the Restored condition).
//
// Invariants:
//   - A backup is complete when, and only when, its manifest exists; the manifest is
//     written after every shard's Job succeeded and names each object's size and SHA-256.
//     A failed backup never gets one, and a deleted one loses its manifest first.
//   - The controller keeps in status only the plan (the shards and their slots, fixed
//     once) and terminal results (Completed, Failed): a running backup's progress is its
//     Jobs (one per shard and attempt, named {backup}-s{shard}-{attempt}, the source
//     member in annotations), and a finished Job's outcome is its pod's termination
//     message, so a restarted controller resumes from what it finds.
//   - Snapshots are taken from a replica in sync; a shard without replicas in its spec is
//     taken from its primary, with a Warning event. A transfer that loses its source is
//     tried again on another member, at most MaxAttempts times.
//   - Jobs never reach the API server and never see the _operator password: a backup Job
//     mounts only the _backup key of {cluster}-system-users, a restore Job only _restore,
//     and the TLS Secret only as its ca.crt.
//   - On a ValkeyCluster it writes only the Restored condition (server-side apply, field
//     manager backup-controller). The cluster-controller does not report Ready and the
//     acl-controller does not load spec.users until Restored is True.
package backup
