package handlers

import (
	"context"
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
