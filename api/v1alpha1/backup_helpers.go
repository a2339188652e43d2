package v1alpha1

import "k8s.io/apimachinery/pkg/api/meta"

// RestorePending reports whether a cluster names a data source that is not restored yet
// (its Restored condition, written by the backup-controller, is not True). While it is,
// the acl-controller publishes only the system users and the cluster-controller does
// not report Ready, so no client sees a cluster with part of its data.
func RestorePending(vc *ValkeyCluster) bool {
	return vc != nil && vc.Spec.DataSource != nil && !meta.IsStatusConditionTrue(vc.Status.Conditions, ConditionRestored)
}

// Defaults of the object store fields, for objects that did not go through the API
// server's defaulting.
const (
	DefaultS3Region           = "us-east-1"
	DefaultAccessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	DefaultSecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY"
	DefaultCABundleKey        = "ca.crt"
)

// RegionOrDefault returns the region, or DefaultS3Region.
func (s *S3Spec) RegionOrDefault() string {
	if s.Region == "" {
		return DefaultS3Region
	}
	return s.Region
}

// AccessKeyID returns the key of the access key ID.
func (c S3Credentials) AccessKeyID() string {
	if c.AccessKeyIDKey == "" {
		return DefaultAccessKeyIDKey
	}
	return c.AccessKeyIDKey
}

// SecretAccessKey returns the key of the secret access key.
func (c S3Credentials) SecretAccessKey() string {
	if c.SecretAccessKeyKey == "" {
		return DefaultSecretAccessKeyKey
	}
	return c.SecretAccessKeyKey
}

// KeyOrDefault returns the key, or DefaultCABundleKey.
func (s *SecretKeySelector) KeyOrDefault() string {
	if s.Key == "" {
		return DefaultCABundleKey
	}
	return s.Key
}

// DeletionPolicyOrDefault returns the backup's deletion policy (Retain by default).
func (s ValkeyBackupSpec) DeletionPolicyOrDefault() BackupDeletionPolicy {
	if s.DeletionPolicy == "" {
		return BackupRetain
	}
	return s.DeletionPolicy
}

// BackupDeletionPolicyOrDefault returns the deletion policy of a schedule's backups
// (Delete by default, so retention frees the store).
func (s ValkeyBackupScheduleSpec) BackupDeletionPolicyOrDefault() BackupDeletionPolicy {
	if s.BackupDeletionPolicy == "" {
		return BackupDelete
	}
	return s.BackupDeletionPolicy
}
