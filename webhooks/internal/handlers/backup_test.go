package handlers

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func TestBackupValidators(t *testing.T) {
	store := v1alpha1.ObjectStoreSpec{S3: &v1alpha1.S3Spec{Bucket: "backups", Credentials: v1alpha1.S3Credentials{SecretName: "creds"}}}
	b := &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: v1alpha1.ValkeyBackupSpec{ClusterName: "demo", ObjectStore: store}}
	if _, err := (BackupValidator{}).ValidateCreate(context.Background(), b); err != nil {
		t.Fatalf("valid backup refused: %v", err)
	}
	changed := b.DeepCopy()
	changed.Spec.ClusterName = "other"
	if _, err := (BackupValidator{}).ValidateUpdate(context.Background(), b, changed); err == nil {
		t.Error("a spec change was admitted")
	}
	s := &v1alpha1.ValkeyBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Spec: v1alpha1.ValkeyBackupScheduleSpec{ClusterName: "demo", Schedule: "every day", ObjectStore: store}}
	if _, err := (ScheduleValidator{}).ValidateCreate(context.Background(), s); err == nil {
		t.Error("a bad schedule was admitted")
	}
}

// A backup or schedule stored under a looser policy keeps taking metadata updates (the
// backup-controller removes its finalizer with one), while a spec change is checked
// against the policy in force.
func TestBackupUpdatesUnderAStricterPolicy(t *testing.T) {
	ctx := context.Background()
	store := v1alpha1.ObjectStoreSpec{S3: &v1alpha1.S3Spec{Bucket: "backups", Endpoint: "http://127.0.0.1:9000",
		Credentials: v1alpha1.S3Credentials{SecretName: "creds"}}}
	b := &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Finalizers: []string{v1alpha1.FinalizerBackupObjects}},
		Spec: v1alpha1.ValkeyBackupSpec{ClusterName: "demo", ObjectStore: store}}
	if _, err := (BackupValidator{}).ValidateCreate(ctx, b); err == nil || !strings.Contains(err.Error(), "loopback address") {
		t.Fatalf("a loopback endpoint: %v", err)
	}
	gone := b.DeepCopy()
	gone.Finalizers = nil
	if _, err := (BackupValidator{}).ValidateUpdate(ctx, b, gone); err != nil {
		t.Errorf("removing the finalizer was refused: %v", err)
	}

	s := &v1alpha1.ValkeyBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Spec: v1alpha1.ValkeyBackupScheduleSpec{ClusterName: "demo", Schedule: "@every 1m", ObjectStore: store}}
	labelled := s.DeepCopy()
	labelled.Labels = map[string]string{"team": "a"}
	if _, err := (ScheduleValidator{}).ValidateUpdate(ctx, s, labelled); err != nil {
		t.Errorf("a label was refused: %v", err)
	}
	suspended := s.DeepCopy()
	suspended.Spec.Suspend = true
	_, err := (ScheduleValidator{}).ValidateUpdate(ctx, s, suspended)
	for _, want := range []string{"spec.schedule: Invalid value", "policy.minBackupInterval", "spec.objectStore.s3.endpoint: Invalid value"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a spec change: got %v, want %q", err, want)
		}
	}
}
