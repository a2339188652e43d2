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

// gate is what stands before serving a tick that came.
type gate int

const (
	// open: the tick is served (a backup is created).
	open gate = iota
	// held: the schedule is suspended or its cluster paused; the tick is neither served
	// nor skipped.
	held
	// busy: a backup of the schedule still runs; the tick is skipped.
	busy
)

// nextTick decides from the last tick served (or the schedule's creation), now, and
// what stands before serving it. Missed ticks are not made up: only the newest one
// that came is served.
func nextTick(sched cron.Schedule, since, now time.Time, g gate) tick {
	t := tick{last: since}
	due := sched.Next(since)
	for i := 0; !due.After(now) && i < 100000; i++ {
		t.last = due
		due = sched.Next(due)
	}
	t.next = due
	switch {
	case t.last.Equal(since) || g == held:
		return t
	case g == busy:
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

// schedulePass is what one pass over a schedule read and decided.
type schedulePass struct {
	vs   *v1alpha1.ValkeyBackupSchedule
	now  time.Time
	want v1alpha1.ValkeyBackupScheduleStatus
	// backups are the schedule's backups; running says one of them still runs.
	backups []v1alpha1.ValkeyBackup
	running bool
	// since is the last tick served (or the schedule's creation), t what is due now.
	since time.Time
	t     tick
	// deferred: the schedule's cluster is paused, so the tick waits for the resume.
	deferred bool
}

// schedulePhase is one step of a schedule pass.
type schedulePhase struct {
	name string
	run  func(context.Context, *schedulePass) error
}

// schedulePhases are the steps of a pass over a valid schedule, in order.
func (r *ScheduleReconciler) schedulePhases() []schedulePhase {
	return []schedulePhase{
		{"backups", r.readBackups},
		{"tick", r.serveTick},
		{"retention", r.applyRetention},
		{"status", r.reportSchedule},
	}
}

// Reconcile is one pass over a schedule: backups, tick, retention, status.
func (r *ScheduleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vs := &v1alpha1.ValkeyBackupSchedule{}
	if err := r.Client.Get(ctx, req.NamespacedName, vs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !vs.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("schedule", req.NamespacedName.String()))
	p := &schedulePass{vs: vs, now: r.now(), want: *vs.Status.DeepCopy()}
	p.want.ObservedGeneration = vs.Generation
	if errs := validation.ValidateBackupSchedule(vs); len(errs) > 0 {
		cond := conditions.New(v1alpha1.ConditionScheduled, false, v1alpha1.ReasonInvalidSchedule, errs.ToAggregate().Error(), vs.Generation)
		return ctrl.Result{}, r.writeScheduleStatus(ctx, vs, p.want, cond)
	}
	for _, ph := range r.schedulePhases() {
		if err := ph.run(ctx, p); err != nil {
			return ctrl.Result{}, fmt.Errorf("%s: %w", ph.name, err)
		}
	}
	return ctrl.Result{RequeueAfter: max(p.t.next.Sub(p.now), time.Second)}, nil
}

// readBackups lists the schedule's backups: the newest completed one, and whether one
// still runs.
func (r *ScheduleReconciler) readBackups(ctx context.Context, p *schedulePass) error {
	var list v1alpha1.ValkeyBackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(p.vs.Namespace), client.MatchingLabels{v1alpha1.LabelSchedule: p.vs.Name}); err != nil {
		return fmt.Errorf("list backups: %w", err)
	}
	p.backups = list.Items
	for _, b := range list.Items {
		switch b.Status.Phase {
		case v1alpha1.BackupCompleted:
			if p.want.LastCompletedBackup == "" || newer(&b, list.Items, p.want.LastCompletedBackup) {
				p.want.LastCompletedBackup = b.Name
			}
		case v1alpha1.BackupFailed:
		default:
			p.running = true
		}
	}
	return nil
}

// serveTick creates the backup of the newest tick that came, unless the schedule is
// suspended, its cluster paused (the tick is deferred, and not recorded as served), or
// a backup of it still runs (the tick is skipped).
func (r *ScheduleReconciler) serveTick(ctx context.Context, p *schedulePass) error {
	vs := p.vs
	sched, _ := validation.ParseSchedule(vs.Spec.Schedule)
	p.since = vs.CreationTimestamp.Time
	if p.want.LastScheduleTime != nil {
		p.since = p.want.LastScheduleTime.Time
	}
	paused, err := r.clusterPaused(ctx, vs)
	if err != nil {
		return err
	}
	p.deferred = paused && !vs.Spec.Suspend
	g := open
	switch {
	case vs.Spec.Suspend || p.deferred:
		g = held
	case p.running:
		g = busy
	}
	p.t = nextTick(sched, p.since, p.now, g)
	if p.t.create != nil {
		name, err := r.createBackup(ctx, vs, *p.t.create)
		if err != nil {
			return err
		}
		p.want.LastBackup = name
	}
	if p.t.skipped {
		r.warn(vs, "Skipped", "Schedule", "the backup due at %s was skipped: the previous one still runs", p.t.last.UTC().Format(time.RFC3339))
	}
	if !p.t.last.Equal(p.since) && !p.deferred {
		last := metav1.NewTime(p.t.last)
		p.want.LastScheduleTime = &last
	}
	next := metav1.NewTime(p.t.next)
	p.want.NextScheduleTime = &next
	return nil
}

// applyRetention deletes the backups the schedule's retention no longer keeps.
func (r *ScheduleReconciler) applyRetention(ctx context.Context, p *schedulePass) error {
	for _, victim := range retentionVictims(p.backups, p.vs.Spec.Retention, p.now) {
		b := &v1alpha1.ValkeyBackup{}
		b.Namespace, b.Name = p.vs.Namespace, victim
		if err := r.Client.Delete(ctx, b); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete backup %s: %w", victim, err)
		}
		log.FromContext(ctx).Info("retention deleted a backup", "backup", victim)
		r.normal(p.vs, "Retention", "Delete", "ValkeyBackup %s deleted by retention", victim)
	}
	return nil
}

// reportSchedule writes Scheduled and the schedule's status.
func (r *ScheduleReconciler) reportSchedule(ctx context.Context, p *schedulePass) error {
	vs := p.vs
	cond := conditions.New(v1alpha1.ConditionScheduled, true, v1alpha1.ReasonScheduleValid, "next backup at "+p.t.next.UTC().Format(time.RFC3339), vs.Generation)
	if vs.Spec.Suspend {
		cond = conditions.New(v1alpha1.ConditionScheduled, false, v1alpha1.ReasonSuspended, "suspended: no backup is created", vs.Generation)
	}
	if p.deferred {
		cond = deferredCondition(vs, p.since, p.t)
		if old := conditions.Get(vs.Status.Conditions, v1alpha1.ConditionScheduled); !p.t.last.Equal(p.since) && (old == nil || old.Message != cond.Message) {
			r.normal(vs, "Deferred", "Schedule", "%s", cond.Message)
		}
	}
	return r.writeScheduleStatus(ctx, vs, p.want, cond)
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
	r.normal(vs, "Created", "Schedule", "ValkeyBackup %s created", name)
	return name, nil
}

func (r *ScheduleReconciler) writeScheduleStatus(ctx context.Context, vs *v1alpha1.ValkeyBackupSchedule, want v1alpha1.ValkeyBackupScheduleStatus, cond metav1.Condition) error {
	want.Conditions = conditions.Resolve(vs.Status.Conditions, r.now(), cond)
	if status.Equal(vs.Status, want) {
		return nil
	}
	return status.Apply(ctx, r.Client, FieldManager, vs, v1alpha1.GroupVersion.WithKind("ValkeyBackupSchedule"), want)
}
