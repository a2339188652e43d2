package handlers

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/webhooks/paths"
)

// Setup registers the validating webhooks with the manager's webhook server, at the
// paths of the paths package.
func Setup(mgr ctrl.Manager, operators Identities) error {
	err := ctrl.NewWebhookManagedBy(mgr, &v1alpha1.ValkeyCluster{}).
		WithValidator(ClusterValidator{}).
		WithValidatorCustomPath(paths.ValidateValkeyCluster).
		Complete()
	if err != nil {
		return fmt.Errorf("register the ValkeyCluster webhook: %w", err)
	}
	err = ctrl.NewWebhookManagedBy(mgr, &v1alpha1.ValkeyNode{}).
		WithValidator(NodeValidator{Operators: operators}).
		WithValidatorCustomPath(paths.ValidateValkeyNode).
		Complete()
	if err != nil {
		return fmt.Errorf("register the ValkeyNode webhook: %w", err)
	}
	return setupBackups(mgr)
}

// setupBackups registers the ValkeyBackup and ValkeyBackupSchedule webhooks.
func setupBackups(mgr ctrl.Manager) error {
	err := ctrl.NewWebhookManagedBy(mgr, &v1alpha1.ValkeyBackup{}).
		WithValidator(BackupValidator{}).
		WithValidatorCustomPath(paths.ValidateValkeyBackup).
		Complete()
	if err != nil {
		return fmt.Errorf("register the ValkeyBackup webhook: %w", err)
	}
	err = ctrl.NewWebhookManagedBy(mgr, &v1alpha1.ValkeyBackupSchedule{}).
		WithValidator(ScheduleValidator{}).
		WithValidatorCustomPath(paths.ValidateValkeyBackupSchedule).
		Complete()
	if err != nil {
		return fmt.Errorf("register the ValkeyBackupSchedule webhook: %w", err)
	}
	return nil
}
