package handlers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
)

var (
	backupKind   = schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "ValkeyBackup"}
	scheduleKind = schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "ValkeyBackupSchedule"}
)

// BackupValidator admits ValkeyBackups that pass the validation package; the spec is
// immutable (the CRD says so too, with CEL).
type BackupValidator struct{}

var _ admission.Validator[*v1alpha1.ValkeyBackup] = BackupValidator{}

// ValidateCreate checks a new backup.
func (BackupValidator) ValidateCreate(_ context.Context, b *v1alpha1.ValkeyBackup) (admission.Warnings, error) {
	return nil, invalid(backupKind, b.Name, validation.ValidateBackup(b))
}

// ValidateUpdate refuses spec changes; an update that leaves the spec as it is
// (finalizers, labels) is always admitted, so a backup accepted under older rules or a
// looser policy can still lose its finalizer and be deleted.
func (BackupValidator) ValidateUpdate(_ context.Context, old, b *v1alpha1.ValkeyBackup) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(old.Spec, b.Spec) {
		return nil, nil
	}
	return nil, invalid(backupKind, b.Name, validation.ValidateBackupUpdate(old, b))
}

// ValidateDelete admits every deletion.
func (BackupValidator) ValidateDelete(context.Context, *v1alpha1.ValkeyBackup) (admission.Warnings, error) {
	return nil, nil
}

// ScheduleValidator admits ValkeyBackupSchedules that pass the validation package.
type ScheduleValidator struct{}

var _ admission.Validator[*v1alpha1.ValkeyBackupSchedule] = ScheduleValidator{}

// ValidateCreate checks a new schedule.
func (ScheduleValidator) ValidateCreate(_ context.Context, s *v1alpha1.ValkeyBackupSchedule) (admission.Warnings, error) {
	return nil, invalid(scheduleKind, s.Name, validation.ValidateBackupSchedule(s))
}

// ValidateUpdate checks a changed schedule; an update that leaves the spec as it is
// is always admitted, like a cluster's.
func (ScheduleValidator) ValidateUpdate(_ context.Context, old, s *v1alpha1.ValkeyBackupSchedule) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(old.Spec, s.Spec) {
		return nil, nil
	}
	return nil, invalid(scheduleKind, s.Name, validation.ValidateBackupSchedule(s))
}

// ValidateDelete admits every deletion.
func (ScheduleValidator) ValidateDelete(context.Context, *v1alpha1.ValkeyBackupSchedule) (admission.Warnings, error) {
	return nil, nil
}
