package backup

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/robfig/cron/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/status"
	"github.com/valkey-operator/valkey-operator/internal/watches"
)

// keepFailed is how many failed backups newer than the newest completed one a
// schedule keeps, for inspection.
const keepFailed = 3

// ScheduleReconciler creates a schedule's backups and applies its retention.
type ScheduleReconciler struct{ *Env }

// SetupWithManager registers the controller: schedules, and the backups they made.
func (r *ScheduleReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("schedule").
		For(&v1alpha1.ValkeyBackupSchedule{}).
		Watches(&v1alpha1.ValkeyBackup{}, handler.EnqueueRequestsFromMapFunc(scheduleOf)).
		// A pause defers the backups; the resume serves the one that came due meanwhile.
		Watches(&v1alpha1.ValkeyCluster{}, handler.EnqueueRequestsFromMapFunc(r.schedulesOf),
			builder.WithPredicates(watches.PausedChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

func scheduleOf(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[v1alpha1.LabelSchedule]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

// tick is what a schedule does now.
type tick struct {
	// create, when set, is the scheduled time of the backup to create now.
	create *time.Time
	// skipped: a tick came while a backup of the schedule still ran (one at a time).
	skipped bool
	// last is the newest tick that came (created or skipped); next the one after.
	last, next time.Time
}

// nextTick decides from the last tick served (or the schedule's creation), now, and
// whether a backup of the schedule still runs. Missed ticks are not made up: only the
// newest one that came is served.
func nextTick(sched cron.Schedule, since, now time.Time, running, suspended bool) tick {
	t := tick{last: since}
	due := sched.Next(since)
	for i := 0; !due.After(now) && i < 100000; i++ {
		t.last = due
		due = sched.Next(due)
	}
	t.next = due
	if t.last.Equal(since) || suspended {
		return t
	}
	if running {
		t.skipped = true
		return t
	}
	at := t.last
	t.create = &at
	return t
}

// retentionVictims returns the backups retention deletes: completed ones beyond
// keepLast or older than maxAge (never the newest completed), and failed ones older
// than the newest completed or beyond the keepFailed newest.
func retentionVictims(backups []v1alpha1.ValkeyBackup, r v1alpha1.BackupRetention, now time.Time) []string {
	sorted := append([]v1alpha1.ValkeyBackup(nil), backups...)
	sort.Slice(sorted, func(i, j int) bool {
		return sorted[j].CreationTimestamp.Before(&sorted[i].CreationTimestamp) ||
			sorted[i].CreationTimestamp.Equal(&sorted[j].CreationTimestamp) && sorted[i].Name > sorted[j].Name
	})
	var out []string
	completed, failed := 0, 0
	var newestCompleted *metav1.Time
	for _, b := range sorted {
		if !b.DeletionTimestamp.IsZero() {
			continue
		}
		switch b.Status.Phase {
		case v1alpha1.BackupCompleted:
			completed++
			if newestCompleted == nil {
				t := b.CreationTimestamp
				newestCompleted = &t
				continue
			}
			if (r.KeepLast != nil && completed > int(*r.KeepLast)) ||
				(r.MaxAge != nil && now.Sub(b.CreationTimestamp.Time) > r.MaxAge.Duration) {
				out = append(out, b.Name)
			}
		case v1alpha1.BackupFailed:
			failed++
			if failed > keepFailed || (newestCompleted != nil && b.CreationTimestamp.Before(newestCompleted)) {
				out = append(out, b.Name)
			}
		}
	}
	return out
}

// Reconcile is one pass over a schedule: tick, retention, status.
func (r *ScheduleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vs := &v1alpha1.ValkeyBackupSchedule{}
	if err := r.Client.Get(ctx, req.NamespacedName, vs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !vs.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("schedule", req.NamespacedName.String()))
	want := *vs.Status.DeepCopy()
	want.ObservedGeneration = vs.Generation
	if errs := validation.ValidateBackupSchedule(vs); len(errs) > 0 {
		cond := conditions.New(v1alpha1.ConditionScheduled, false, v1alpha1.ReasonInvalidSchedule, errs.ToAggregate().Error(), vs.Generation)
		return ctrl.Result{}, r.writeScheduleStatus(ctx, vs, want, cond)
	}
	sched, _ := validation.ParseSchedule(vs.Spec.Schedule)
	var list v1alpha1.ValkeyBackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(vs.Namespace), client.MatchingLabels{v1alpha1.LabelSchedule: vs.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list backups: %w", err)
	}
	running := false
	for _, b := range list.Items {
		switch b.Status.Phase {
		case v1alpha1.BackupCompleted:
			if want.LastCompletedBackup == "" || newer(&b, list.Items, want.LastCompletedBackup) {
				want.LastCompletedBackup = b.Name
			}
		case v1alpha1.BackupFailed:
		default:
			running = true
		}
	}
	since := vs.CreationTimestamp.Time
	if want.LastScheduleTime != nil {
		since = want.LastScheduleTime.Time
	}
	now := r.now()
	paused, err := r.clusterPaused(ctx, vs)
	if err != nil {
		return ctrl.Result{}, err
	}
	// A paused cluster defers the schedule's backups: no tick is served and none is
	// recorded as served, so the newest one that came is served at the resume.
	deferred := paused && !vs.Spec.Suspend
	t := nextTick(sched, since, now, running, vs.Spec.Suspend || deferred)
	if t.create != nil {
		name, err := r.createBackup(ctx, vs, *t.create)
		if err != nil {
			return ctrl.Result{}, err
		}
		want.LastBackup = name
	}
	if t.skipped {
		r.event(vs, true, "Skipped", "Schedule", "the backup due at %s was skipped: the previous one still runs", t.last.UTC().Format(time.RFC3339))
	}
	if !t.last.Equal(since) && !deferred {
		last := metav1.NewTime(t.last)
		want.LastScheduleTime = &last
	}
	next := metav1.NewTime(t.next)
	want.NextScheduleTime = &next
	for _, victim := range retentionVictims(list.Items, vs.Spec.Retention, now) {
		b := &v1alpha1.ValkeyBackup{}
		b.Namespace, b.Name = vs.Namespace, victim
		if err := r.Client.Delete(ctx, b); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("delete backup %s: %w", victim, err)
		}
		log.FromContext(ctx).Info("retention deleted a backup", "backup", victim)
		r.event(vs, false, "Retention", "Delete", "ValkeyBackup %s deleted by retention", victim)
	}
	cond := conditions.New(v1alpha1.ConditionScheduled, true, v1alpha1.ReasonScheduleValid, "next backup at "+t.next.UTC().Format(time.RFC3339), vs.Generation)
	if vs.Spec.Suspend {
		cond = conditions.New(v1alpha1.ConditionScheduled, false, v1alpha1.ReasonSuspended, "suspended: no backup is created", vs.Generation)
	}
	if deferred {
		cond = deferredCondition(vs, since, t)
		if old := conditions.Get(vs.Status.Conditions, v1alpha1.ConditionScheduled); !t.last.Equal(since) && (old == nil || old.Message != cond.Message) {
			r.event(vs, false, "Deferred", "Schedule", "%s", cond.Message)
		}
	}
	if err := r.writeScheduleStatus(ctx, vs, want, cond); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: max(time.Until(t.next), time.Second)}, nil
}

// deferredCondition is Scheduled while the schedule's cluster is paused (pure): False,
// reason Paused, naming the backup that waits for the resume, if one came due.
func deferredCondition(vs *v1alpha1.ValkeyBackupSchedule, since time.Time, t tick) metav1.Condition {
	msg := fmt.Sprintf("cluster %s is paused: a backup that comes due (next at %s) is deferred until the cluster is resumed, then taken at once",
		vs.Spec.ClusterName, t.next.UTC().Format(time.RFC3339))
	if !t.last.Equal(since) {
		msg = fmt.Sprintf("cluster %s is paused: the backup due at %s is deferred until the cluster is resumed, then taken at once",
			vs.Spec.ClusterName, t.last.UTC().Format(time.RFC3339))
	}
	return conditions.New(v1alpha1.ConditionScheduled, false, v1alpha1.ReasonPaused, msg, vs.Generation)
}

// clusterPaused reports whether the cluster-controller reports the schedule's cluster
// Paused (a cluster that does not exist is not).
func (r *ScheduleReconciler) clusterPaused(ctx context.Context, vs *v1alpha1.ValkeyBackupSchedule) (bool, error) {
	vc := &v1alpha1.ValkeyCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: vs.Namespace, Name: vs.Spec.ClusterName}, vc); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("read cluster %s: %w", vs.Spec.ClusterName, err)
	}
	return v1alpha1.Paused(vc), nil
}

// schedulesOf maps a ValkeyCluster to the schedules of its namespace that back it up.
func (r *ScheduleReconciler) schedulesOf(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.ValkeyBackupScheduleList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, vs := range list.Items {
		if vs.Spec.ClusterName == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&vs)})
		}
	}
	return out
}

// newer reports whether b was created after the backup named other.
func newer(b *v1alpha1.ValkeyBackup, all []v1alpha1.ValkeyBackup, other string) bool {
	for _, o := range all {
		if o.Name == other {
			return o.CreationTimestamp.Before(&b.CreationTimestamp)
		}
	}
	return true
}

// createBackup creates the backup of the tick at (idempotent: the name is the tick's).
// It is not owned by the schedule: deleting a schedule leaves its backups.
func (r *ScheduleReconciler) createBackup(ctx context.Context, vs *v1alpha1.ValkeyBackupSchedule, at time.Time) (string, error) {
	name := vs.Name + "-" + strconv.FormatInt(at.Unix(), 10)
	b := &v1alpha1.ValkeyBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: vs.Namespace,
			Labels: map[string]string{v1alpha1.LabelSchedule: vs.Name, v1alpha1.LabelInstance: vs.Spec.ClusterName}},
		Spec: v1alpha1.ValkeyBackupSpec{ClusterName: vs.Spec.ClusterName, ObjectStore: vs.Spec.ObjectStore,
			DeletionPolicy: vs.Spec.BackupDeletionPolicyOrDefault()},
	}
	err := r.Client.Create(ctx, b)
	if apierrors.IsAlreadyExists(err) {
		return name, nil
	}
	if err != nil {
		return "", fmt.Errorf("create backup %s: %w", name, err)
	}
	r.event(vs, false, "Created", "Schedule", "ValkeyBackup %s created", name)
	return name, nil
}

func (r *ScheduleReconciler) writeScheduleStatus(ctx context.Context, vs *v1alpha1.ValkeyBackupSchedule, want v1alpha1.ValkeyBackupScheduleStatus, cond metav1.Condition) error {
	want.Conditions = conditions.Resolve(vs.Status.Conditions, r.now(), cond)
	if status.Equal(vs.Status, want) {
		return nil
	}
	return status.Apply(ctx, r.Client, FieldOwner, vs, v1alpha1.GroupVersion.WithKind("ValkeyBackupSchedule"), want)
}
