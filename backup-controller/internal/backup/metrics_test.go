package backup

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/testsuite"
)

func TestCollector(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	backup := func(name string, phase v1alpha1.BackupPhase, done time.Time) *v1alpha1.ValkeyBackup {
		vb := &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		vb.Spec.ClusterName = "vk"
		vb.Status.Phase = phase
		if !done.IsZero() {
			vb.Status.CompletionTime = &metav1.Time{Time: done}
		}
		return vb
	}
	hourly := &v1alpha1.ValkeyBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hourly", CreationTimestamp: metav1.NewTime(t0.Add(-24 * time.Hour))}}
	hourly.Spec.ClusterName, hourly.Spec.Schedule = "vk", "0 * * * *"
	hourly.Status.LastScheduleTime = &metav1.Time{Time: t0}
	hourly.Status.LastBackup, hourly.Status.LastCompletedBackup = "b3", "b2"
	fresh := &v1alpha1.ValkeyBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fresh", CreationTimestamp: metav1.NewTime(t0)}}
	fresh.Spec.ClusterName, fresh.Spec.Schedule = "vk", "@every 20m"
	c := testsuite.FakeClient(
		backup("b1", v1alpha1.BackupCompleted, t0.Add(-2*time.Hour)), backup("b2", v1alpha1.BackupCompleted, t0.Add(-time.Hour)),
		backup("b3", v1alpha1.BackupFailed, t0), backup("b4", "", time.Time{}), hourly, fresh)
	want := `
# HELP valkey_operator_backup_schedule_interval_seconds The time between the schedule's last run and the next one its cron expression gives.
# TYPE valkey_operator_backup_schedule_interval_seconds gauge
valkey_operator_backup_schedule_interval_seconds{cluster="vk",namespace="ns",schedule="fresh"} 1200
valkey_operator_backup_schedule_interval_seconds{cluster="vk",namespace="ns",schedule="hourly"} 3600
# HELP valkey_operator_backup_schedule_last_completed_timestamp_seconds When the schedule's newest completed backup completed (Unix seconds); the schedule's creation while none has completed yet.
# TYPE valkey_operator_backup_schedule_last_completed_timestamp_seconds gauge
valkey_operator_backup_schedule_last_completed_timestamp_seconds{cluster="vk",namespace="ns",schedule="fresh"} 1.7961192e+09
valkey_operator_backup_schedule_last_completed_timestamp_seconds{cluster="vk",namespace="ns",schedule="hourly"} 1.7961156e+09
# HELP valkey_operator_backup_schedule_last_failed 1 when the newest backup the schedule created failed.
# TYPE valkey_operator_backup_schedule_last_failed gauge
valkey_operator_backup_schedule_last_failed{cluster="vk",namespace="ns",schedule="fresh"} 0
valkey_operator_backup_schedule_last_failed{cluster="vk",namespace="ns",schedule="hourly"} 1
# HELP valkey_operator_backups ValkeyBackups by cluster and phase (Pending, Running, Completed, Failed): the outcomes of the backups that exist.
# TYPE valkey_operator_backups gauge
valkey_operator_backups{cluster="vk",namespace="ns",phase="Completed"} 2
valkey_operator_backups{cluster="vk",namespace="ns",phase="Failed"} 1
valkey_operator_backups{cluster="vk",namespace="ns",phase="Pending"} 1
valkey_operator_backups{cluster="vk",namespace="ns",phase="Running"} 0
`
	if err := testutil.CollectAndCompare(NewCollector(c), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
