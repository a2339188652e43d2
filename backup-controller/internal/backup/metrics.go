package backup

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/internal/statemetrics"
)

var (
	descBackups = statemetrics.Desc("backups",
		"ValkeyBackups by cluster and phase (Pending, Running, Completed, Failed): the outcomes of the backups that exist.",
		"namespace", "cluster", "phase")
	descLastCompleted = statemetrics.Desc("backup_schedule_last_completed_timestamp_seconds",
		"When the schedule's newest completed backup completed (Unix seconds); the schedule's creation while none has completed yet.",
		"namespace", "cluster", "schedule")
	descLastFailed = statemetrics.Desc("backup_schedule_last_failed",
		"1 when the newest backup the schedule created failed.",
		"namespace", "cluster", "schedule")
	descInterval = statemetrics.Desc("backup_schedule_interval_seconds",
		"The time between the schedule's last run and the next one its cron expression gives.",
		"namespace", "cluster", "schedule")

	phases = []v1alpha1.BackupPhase{v1alpha1.BackupPending, v1alpha1.BackupRunning, v1alpha1.BackupCompleted, v1alpha1.BackupFailed}
)

// NewCollector returns the backup-controller's metrics, read from the status it wrote.
func NewCollector(r client.Reader) prometheus.Collector {
	return &statemetrics.Collector{Reader: r,
		Descs: []*prometheus.Desc{descBackups, descLastCompleted, descLastFailed, descInterval}, Gather: gather}
}

func gather(ctx context.Context, r client.Reader, emit statemetrics.Emit) error {
	var vbs v1alpha1.ValkeyBackupList
	if err := r.List(ctx, &vbs); err != nil {
		return err
	}
	type key struct{ ns, cluster string }
	counts := map[key]map[v1alpha1.BackupPhase]int{}
	byName := map[string]*v1alpha1.ValkeyBackup{}
	for i := range vbs.Items {
		vb := &vbs.Items[i]
		byName[vb.Namespace+"/"+vb.Name] = vb
		k := key{vb.Namespace, vb.Spec.ClusterName}
		if counts[k] == nil {
			counts[k] = map[v1alpha1.BackupPhase]int{}
		}
		phase := vb.Status.Phase
		if phase == "" {
			phase = v1alpha1.BackupPending
		}
		counts[k][phase]++
	}
	for k, byPhase := range counts {
		for _, p := range phases {
			emit(descBackups, float64(byPhase[p]), k.ns, k.cluster, string(p))
		}
	}
	var schedules v1alpha1.ValkeyBackupScheduleList
	if err := r.List(ctx, &schedules); err != nil {
		return err
	}
	for _, vs := range schedules.Items {
		labels := []string{vs.Namespace, vs.Spec.ClusterName, vs.Name}
		completed := vs.CreationTimestamp.Time
		if vb := byName[vs.Namespace+"/"+vs.Status.LastCompletedBackup]; vb != nil && vb.Status.CompletionTime != nil {
			completed = vb.Status.CompletionTime.Time
		}
		emit(descLastCompleted, statemetrics.Timestamp(completed), labels...)
		last := byName[vs.Namespace+"/"+vs.Status.LastBackup]
		emit(descLastFailed, statemetrics.Bool(last != nil && last.Status.Phase == v1alpha1.BackupFailed), labels...)
		if sched, err := validation.ParseSchedule(vs.Spec.Schedule); err == nil {
			from := vs.CreationTimestamp.Time
			if vs.Status.LastScheduleTime != nil {
				from = vs.Status.LastScheduleTime.Time
			}
			emit(descInterval, scheduleInterval(sched.Next, from).Seconds(), labels...)
		}
	}
	return nil
}

// scheduleInterval is the time between two runs of a schedule after from.
func scheduleInterval(next func(time.Time) time.Time, from time.Time) time.Duration {
	a := next(from)
	return next(a).Sub(a)
}
