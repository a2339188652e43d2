// Package backup is the backup-controller: it runs the ValkeyBackups (a probe of the
// store, one Job per shard, a manifest written last), the ValkeyBackupSchedules (a
// ValkeyBackup per tick, old ones removed by retention) and the restores of
// ValkeyClusters that name a data source (a Job reading the manifest, one Job per
// backed-up shard, the Restored condition).
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
//   - The controller never talks to an object store: the probe before a backup, the
//     manifest written last, the manifest read for a restore and the deletion of a
//     backup's objects each run in a Job of the backup's or cluster's namespace, with the
//     tenant's credentials from the tenant's Secret (storejobs.go). This package does not
//     depend on a store SDK (an import rule of hack/devtools/importrules checks it); it
//     reads only Jobs' Results, each a termination message of at most 4 KiB whose message
//     is cut to 256 characters, and a restore needs no more of a manifest than the
//     summary that fits one.
//   - Every Job is bounded in time (activeDeadlineSeconds) and retried a bounded number
//     of times; a deleted backup whose objects cannot be deleted is let go after
//     MaxDeleteAttempts failed Jobs, with an ObjectsLeft Warning event.
//   - Jobs never reach the API server and never see the _operator password: a backup Job
//     mounts only the _backup key of {cluster}-system-users, a restore Job only _restore,
//     and the TLS Secret only as its ca.crt; a store Job mounts nothing of the cluster.
//   - On a ValkeyCluster it writes only the Restored condition (server-side apply, field
//     manager backup-controller). The cluster-controller does not report Ready and the
//     acl-controller does not load spec.users until Restored is True.
package backup
