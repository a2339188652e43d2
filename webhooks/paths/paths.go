// Package paths names the HTTP paths the webhooks binary serves, so the chart, the
// tests and the binary agree on them.
package paths

const (
	// ValidateValkeyCluster is the path of the ValkeyCluster validating webhook
	// (operations CREATE and UPDATE on valkeyclusters).
	ValidateValkeyCluster = "/validate-valkey-io-v1alpha1-valkeycluster"
	// ValidateValkeyNode is the path of the ValkeyNode validating webhook (operations
	// CREATE and UPDATE on valkeynodes; DELETE is always allowed, so it need not be
	// registered).
	ValidateValkeyNode = "/validate-valkey-io-v1alpha1-valkeynode"
	// ValidateValkeyBackup is the path of the ValkeyBackup validating webhook
	// (CREATE and UPDATE).
	ValidateValkeyBackup = "/validate-valkey-io-v1alpha1-valkeybackup"
	// ValidateValkeyBackupSchedule is the path of the ValkeyBackupSchedule validating
	// webhook (CREATE and UPDATE).
	ValidateValkeyBackupSchedule = "/validate-valkey-io-v1alpha1-valkeybackupschedule"
)
