package acl

import (
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// The users of the backup-controller's Jobs (docs/backup.md). They are system users:
// generated passwords in {cluster}-system-users, rotated with the others.
var (
	// backupCommands: a backup Job takes a snapshot over the replication protocol
	// (REPLCONF, SYNC; PSYNC for completeness) after reading INFO (role, link, version).
	// No key access.
	backupCommands = []string{"+psync", "+replconf", "+sync", "+ping", "+info"}
	// restoreCommands: a restore Job writes keys with RESTORE through a cluster client,
	// which reads the topology and follows redirects.
	restoreCommands = []string{"+restore", "+asking", "+ping", "+cluster|slots", "+cluster|shards", "~*"}
)

// backupUsers renders _backup, and _restore, which is on only while the cluster's data
// source is being restored (restoring).
func backupUsers(pw systemPasswords, restoring bool) []User {
	restore := systemUser(v1alpha1.UserRestore, pw[v1alpha1.UserRestore], restoreCommands)
	if !restoring {
		restore.Rules[0] = "off"
	}
	return []User{systemUser(v1alpha1.UserBackup, pw[v1alpha1.UserBackup], backupCommands), restore}
}

// withheldUntilRestored returns the spec users to publish: none while the cluster's
// data source is being restored, so no client reads or writes a cluster that holds part
// of its data.
func withheldUntilRestored(vc *v1alpha1.ValkeyCluster, users []User) []User {
	if v1alpha1.RestorePending(vc) {
		return nil
	}
	return users
}

// restoredChanged passes cluster updates whose Restored condition changed status: the
// users are published then.
func restoredChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, ok1 := e.ObjectOld.(*v1alpha1.ValkeyCluster)
			b, ok2 := e.ObjectNew.(*v1alpha1.ValkeyCluster)
			if !ok1 || !ok2 || b.Spec.DataSource == nil {
				return false
			}
			return conditions.IsTrue(a.Status.Conditions, v1alpha1.ConditionRestored) != conditions.IsTrue(b.Status.Conditions, v1alpha1.ConditionRestored)
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
