package backup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/layout"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/membership"
	"github.com/valkey-operator/valkey-operator/internal/status"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// FieldManager is the field manager of everything this controller writes.
const FieldManager = "backup-controller"

// +kubebuilder:rbac:groups=valkey.io,resources=valkeybackups,verbs=get;list;watch;create;delete;update;patch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeybackups/status,verbs=get;patch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeybackups/finalizers,verbs=update
// +kubebuilder:rbac:groups=valkey.io,resources=valkeybackupschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeybackupschedules/status,verbs=get;patch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters/status,verbs=get;patch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=create
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=operator
// Leader election records its events with the core API, in the operator's namespace.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=operator

// Timing of the backup controller.
const (
	// pendingTimeout is how long a backup waits for its cluster to have every shard
	// served with slots assigned before it fails (ClusterNotReady).
	pendingTimeout = 10 * time.Minute
	// requeueWait is the next look while something is expected without an event (a
	// replica to sync).
	requeueWait = 5 * time.Second
	// requeueStore is the pause before a store Job that failed (a deletion, a
	// manifest read) is tried again.
	requeueStore = 30 * time.Second
	// maxJobPods bounds the pods of a Job a pass reads: a Job of this controller runs
	// one pod (backoffLimit 0).
	maxJobPods = 4
)

// Env is what the reconcilers share.
type Env struct {
	Client client.Client
	// APIReader reads Secrets and pods from the API server, uncached.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	Jobs      JobSettings
	// StoreRetryDelay is the pause before a failed store Job is tried again (0:
	// requeueStore; tests shorten it).
	StoreRetryDelay time.Duration
	// Clock returns the time (default time.Now; tests replace it). Every decision of
	// the reconcilers reads the time from it.
	Clock func() time.Time
}

func (e *Env) storeRetryDelay() time.Duration {
	if e.StoreRetryDelay > 0 {
		return e.StoreRetryDelay
	}
	return requeueStore
}

func (e *Env) now() time.Time {
	if e.Clock != nil {
		return e.Clock()
	}
	return time.Now()
}

// normal records a Normal event about obj.
func (e *Env) normal(obj runtime.Object, reason, action, format string, args ...any) {
	e.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, reason, action, format, args...)
}

// warn records a Warning event about obj.
func (e *Env) warn(obj runtime.Object, reason, action, format string, args ...any) {
	e.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, action, format, args...)
}

// BackupReconciler runs ValkeyBackups.
type BackupReconciler struct{ *Env }

// SetupWithManager registers the controller: backups and their Jobs.
func (r *BackupReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("backup").
		For(&v1alpha1.ValkeyBackup{}).
		Owns(&batchv1.Job{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// backupScope is what one pass read and decided.
type backupScope struct {
	vb    *v1alpha1.ValkeyBackup
	vc    *v1alpha1.ValkeyCluster
	nodes []v1alpha1.ValkeyNode
	jobs  []batchv1.Job
	want  v1alpha1.ValkeyBackupStatus
	// reason, message explain a backup that is not finished yet.
	reason, message string
	// stop ends the pass without a requeue: a watched change wakes the next.
	stop bool
}

// fail ends the backup. A refusal by the endpoint policy names the field first.
func (s *backupScope) fail(reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if reason == v1alpha1.ReasonEndpointRefused {
		msg = endpointRefused(backupEndpointField, &s.vb.Spec.ObjectStore, msg)
	}
	s.want.Phase, s.reason, s.message = v1alpha1.BackupFailed, reason, msg
}

func (s *backupScope) waiting(reason, format string, args ...any) {
	s.reason, s.message = reason, fmt.Sprintf(format, args...)
}

func (s *backupScope) done() bool {
	return s.want.Phase == v1alpha1.BackupCompleted || s.want.Phase == v1alpha1.BackupFailed
}

// Reconcile is one pass over a backup: deletion, finalizer, then the phases.
func (r *BackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vb := &v1alpha1.ValkeyBackup{}
	if err := r.Client.Get(ctx, req.NamespacedName, vb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("backup", req.NamespacedName.String()))
	if !vb.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, vb)
	}
	if vb.Spec.DeletionPolicyOrDefault() == v1alpha1.BackupDelete && !controllerutil.ContainsFinalizer(vb, v1alpha1.FinalizerBackupObjects) {
		controllerutil.AddFinalizer(vb, v1alpha1.FinalizerBackupObjects)
		if err := r.Client.Update(ctx, vb); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
	}
	if vb.Status.Phase == v1alpha1.BackupCompleted || vb.Status.Phase == v1alpha1.BackupFailed {
		return ctrl.Result{}, nil
	}
	s := &backupScope{vb: vb, want: *vb.Status.DeepCopy()}
	if s.want.Phase == "" {
		s.want.Phase = v1alpha1.BackupPending
	}
	wait, runErr := r.run(ctx, s)
	if err := r.writeBackupStatus(ctx, s); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if runErr != nil {
		return ctrl.Result{}, runErr
	}
	return ctrl.Result{RequeueAfter: wait}, nil
}

// run executes the phases in order; one that must wait stops the pass.
func (r *BackupReconciler) run(ctx context.Context, s *backupScope) (time.Duration, error) {
	phases := []struct {
		name string
		fn   func(context.Context, *backupScope) (time.Duration, error)
	}{
		{"validate", r.validate},
		{"cluster", r.readCluster},
		{"store", r.checkStore},
		{"plan", r.plan},
		{"transfers", r.transfers},
		{"manifest", r.writeManifest},
	}
	for _, p := range phases {
		wait, err := p.fn(ctx, s)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", p.name, err)
		}
		if wait > 0 || s.done() || s.stop {
			return wait, nil
		}
	}
	return 0, nil
}

func (r *BackupReconciler) validate(_ context.Context, s *backupScope) (time.Duration, error) {
	if errs := validation.ValidateBackup(s.vb); len(errs) > 0 {
		s.fail(v1alpha1.ReasonInvalid, "the spec is invalid: %s", errs.ToAggregate().Error())
	}
	return 0, nil
}

func (r *BackupReconciler) readCluster(ctx context.Context, s *backupScope) (time.Duration, error) {
	vc := &v1alpha1.ValkeyCluster{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: s.vb.Namespace, Name: s.vb.Spec.ClusterName}, vc)
	if apierrors.IsNotFound(err) {
		s.fail(v1alpha1.ReasonClusterNotFound, "ValkeyCluster %s does not exist", s.vb.Spec.ClusterName)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	s.vc = vc
	nodes, err := membership.Of(ctx, r.Client, vc)
	if err != nil {
		return 0, err
	}
	s.nodes = nodes
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelBackup: s.vb.Name}); err != nil {
		return 0, fmt.Errorf("list Jobs: %w", err)
	}
	for _, j := range jobs.Items {
		if metav1.IsControlledBy(&j, s.vb) {
			s.jobs = append(s.jobs, j)
		}
	}
	return 0, nil
}

// checkStore runs the probe Job before anything else (once): a store that refuses the
// credentials or does not answer fails the backup before any server forks.
func (r *BackupReconciler) checkStore(ctx context.Context, s *backupScope) (time.Duration, error) {
	if len(s.want.Shards) > 0 {
		return 0, nil
	}
	probes := storeRuns(s.jobs, componentProbe)
	if len(probes) == 0 {
		if err := checkCredentials(ctx, r.APIReader, s.vb.Namespace, &s.vb.Spec.ObjectStore); err != nil {
			return 0, s.failStore(err, "")
		}
		j := probeJob(r.Jobs, s.vb, s.vc.Spec.ImagePullSecrets)
		if err := r.createJob(ctx, s.vb, j); err != nil {
			return 0, err
		}
		s.waiting(v1alpha1.ReasonBackupInProgress, "checking the object store (Job %s)", j.Name)
		s.stop = true
		return 0, nil
	}
	run, err := readRun(ctx, r.APIReader, probes[len(probes)-1])
	if err != nil {
		return 0, err
	}
	switch {
	case run.state == jobRunning:
		s.waiting(v1alpha1.ReasonBackupInProgress, "checking the object store (Job %s)", run.job.Name)
		s.stop = true
	case !run.ok && run.reason == jobapi.ReasonEndpointRefused:
		s.fail(v1alpha1.ReasonEndpointRefused, "%s", run.message)
	case !run.ok:
		s.fail(failedReason(run.reason), "the object store refused or did not answer: %s", run.message)
	}
	return 0, nil
}

// failStore fails the backup on a credentials problem (a storeError), with what it
// says after prefix; any other error is returned.
func (s *backupScope) failStore(err error, prefix string) error {
	var se *storeError
	if !errors.As(err, &se) {
		return err
	}
	s.fail(se.reason, "%s%s", prefix, se.Error())
	return nil
}

// createJob creates a Job owned by owner (one that exists already is left as it is).
func (e *Env) createJob(ctx context.Context, owner client.Object, j *batchv1.Job) error {
	if err := controllerutil.SetControllerReference(owner, j, e.Scheme); err != nil {
		return err
	}
	if err := e.Client.Create(ctx, j); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Job %s: %w", j.Name, err)
	}
	log.FromContext(ctx).Info("created a Job", "job", j.Name, "component", j.Labels[v1alpha1.LabelComponent])
	return nil
}

// plan fixes the shards to back up, from the cluster's status, once every shard has
// a primary and the slots are settled. The plan lives in status.shards.
func (r *BackupReconciler) plan(_ context.Context, s *backupScope) (time.Duration, error) {
	if len(s.want.Shards) > 0 {
		return 0, nil
	}
	vc := s.vc
	ready := len(vc.Status.Shards) == int(vc.Spec.ShardCount()) && conditions.IsTrue(vc.Status.Conditions, v1alpha1.ConditionSlotsAssigned)
	for _, sh := range vc.Status.Shards {
		ready = ready && sh.Primary != "" && len(sh.Slots) > 0
	}
	if !ready {
		if r.now().Sub(s.vb.CreationTimestamp.Time) > pendingTimeout {
			s.fail(v1alpha1.ReasonClusterNotReady, "ValkeyCluster %s has not had every shard served with its slots settled for %s", vc.Name, pendingTimeout)
			return 0, nil
		}
		s.waiting(v1alpha1.ReasonClusterNotReady, "waiting for every shard of %s to have a primary and the slots to be settled", vc.Name)
		return requeueWait, nil
	}
	s.want.Path = layout.BackupPath(s.vb.Spec.ObjectStore.Prefix, s.vb.Namespace, vc.Name, s.vb.Name, string(s.vb.UID))
	for _, sh := range vc.Status.Shards {
		s.want.Shards = append(s.want.Shards, v1alpha1.BackupShardStatus{
			Index: sh.Index, Object: layout.ShardObject(sh.Index), Slots: slices.Clone(sh.Slots), Phase: v1alpha1.BackupPending,
		})
	}
	s.want.Phase = v1alpha1.BackupRunning
	s.waiting(v1alpha1.ReasonBackupInProgress, "planned %d shards", len(s.want.Shards))
	// The plan is written first; the next pass starts the Jobs.
	return time.Millisecond, nil
}

// transfers starts, watches and retries each shard's Job.
func (r *BackupReconciler) transfers(ctx context.Context, s *backupScope) (time.Duration, error) {
	byShard := map[int32][]attempt{}
	for i := range s.jobs {
		j := &s.jobs[i]
		sh, err := strconv.Atoi(j.Labels[v1alpha1.LabelShardIndex])
		if err != nil {
			continue
		}
		a, err := r.readAttempt(ctx, j)
		if err != nil {
			return 0, err
		}
		if s.want.StartTime == nil || j.CreationTimestamp.Before(s.want.StartTime) {
			t := j.CreationTimestamp
			s.want.StartTime = &t
		}
		byShard[int32(sh)] = append(byShard[int32(sh)], a)
	}
	var waiting, done int
	var notes []string
	for i := range s.want.Shards {
		sh := &s.want.Shards[i]
		d := decideShard(byShard[sh.Index])
		if d.last != nil {
			sh.Attempts, sh.Source, sh.SourceRole = int32(d.last.n), d.last.node, d.last.role
		}
		switch d.action {
		case actDone:
			r.recordShard(sh, d)
			done++
		case actWait:
			sh.Phase = v1alpha1.BackupRunning
			waiting++
		case actFail:
			sh.Phase, sh.Message = v1alpha1.BackupFailed, d.message
			s.fail(d.reason, "shard %d failed after %d attempts: %s", sh.Index, sh.Attempts, d.message)
			r.warn(s.vb, "Failed", "Backup", "shard %d: %s", sh.Index, d.message)
			return 0, nil
		case actStart:
			if d.last != nil {
				sh.Message = d.message
				r.warn(s.vb, "Retrying", "Backup", "shard %d attempt %d failed (%s: %s); trying another member", sh.Index, d.last.n, d.reason, d.message)
			}
			started, note, err := r.startAttempt(ctx, s, sh, d)
			if err != nil {
				return 0, err
			}
			if started {
				sh.Phase = v1alpha1.BackupRunning
			} else {
				notes = append(notes, note)
			}
			waiting++
		}
	}
	if done == len(s.want.Shards) {
		return 0, nil
	}
	msg := fmt.Sprintf("%d of %d shards in the store", done, len(s.want.Shards))
	if len(notes) > 0 {
		msg += "; " + strings.Join(notes, "; ")
		s.waiting(v1alpha1.ReasonBackupInProgress, "%s", msg)
		return requeueWait, nil
	}
	s.waiting(v1alpha1.ReasonBackupInProgress, "%s", msg)
	// Jobs report through their own status changes (watched).
	s.stop = true
	return 0, nil
}

func (r *BackupReconciler) recordShard(sh *v1alpha1.BackupShardStatus, d shardDecision) {
	res := d.result
	sh.Phase, sh.Message = v1alpha1.BackupCompleted, ""
	sh.Size, sh.Checksum, sh.Keys = res.Size, "sha256:"+res.SHA256, res.Keys
	sh.RDBVersion, sh.ValkeyVersion = int32(res.RDBVersion), res.ValkeyVersion
	if res.Role != "" {
		sh.SourceRole = res.Role
	}
}

// startAttempt creates the Job of a shard's next attempt on a member other than the
// failed ones; it returns false with a note when no member fits yet.
func (r *BackupReconciler) startAttempt(ctx context.Context, s *backupScope, sh *v1alpha1.BackupShardStatus, d shardDecision) (bool, string, error) {
	if err := publishedSecrets(s.vc); err != nil {
		return false, fmt.Sprintf("shard %d waits: %s", sh.Index, err.Error()), nil
	}
	src, fromPrimary, ok := chooseSource(s.nodes, sh.Index, s.vc.Spec.ReplicaCount(), d.exclude)
	if !ok {
		return false, fmt.Sprintf("shard %d waits for a replica in sync", sh.Index), nil
	}
	j := backupJob(r.Jobs, s.vb, s.vc, sh.Index, d.next, src, s.want.Path)
	if err := r.createJob(ctx, s.vb, j); err != nil {
		return false, "", err
	}
	sh.Attempts, sh.Source, sh.SourceRole = int32(d.next), src.node, string(src.role)
	log.FromContext(ctx).Info("started a shard transfer", "shard", sh.Index, "attempt", d.next, "source", src.node, "role", src.role)
	if fromPrimary {
		r.warn(s.vb, "BackupFromPrimary", "Backup",
			"shard %d has no replica: its snapshot is taken from primary %s, which forks and sends it while serving", sh.Index, src.node)
	}
	return true, "", nil
}

// readAttempt reads a shard Job and, once it finished, its pod's Result.
func (r *BackupReconciler) readAttempt(ctx context.Context, j *batchv1.Job) (attempt, error) {
	n, _ := strconv.Atoi(j.Annotations[annotationAttempt])
	a := attempt{n: n, node: j.Annotations[annotationSource], role: j.Annotations[annotationSourceRole], state: stateOf(j)}
	if a.state == jobRunning {
		return a, nil
	}
	pods, err := jobPods(ctx, r.APIReader, j)
	if err != nil {
		return a, err
	}
	a.result, a.hasResult = resultOf(pods, containerBackup)
	if a.state == jobFailed {
		a.failReason, a.failMessage = failureMessage(j)
	}
	return a, nil
}

// jobPods lists a Job's pods from the API server: at most maxJobPods, selected by the
// Job's UID and controlled by it, so pods that only carry its labels cost nothing.
func jobPods(ctx context.Context, r client.Reader, j *batchv1.Job) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(j.Namespace), client.Limit(maxJobPods),
		client.MatchingLabels{batchv1.JobNameLabel: j.Name, batchv1.ControllerUidLabel: string(j.UID)}); err != nil {
		return nil, fmt.Errorf("list pods of Job %s: %w", j.Name, err)
	}
	out := pods.Items[:0]
	for _, p := range pods.Items {
		if metav1.IsControlledBy(&p, j) {
			out = append(out, p)
		}
	}
	return out, nil
}

// writeManifest completes a backup whose shards are all in the store: the manifest
// goes into a ConfigMap of the backup, which a Job writes into the store; the backup
// is Completed when that Job succeeded. A failed Job is tried again, at most
// MaxManifestAttempts times; then the backup fails (at once when the endpoint policy
// refused the store's address: that does not change between attempts).
func (r *BackupReconciler) writeManifest(ctx context.Context, s *backupScope) (time.Duration, error) {
	m := manifestOf(s.vb, s.want, r.now())
	runs := storeRuns(s.jobs, componentManifest)
	var last storeRun
	if len(runs) > 0 {
		var err error
		if last, err = readRun(ctx, r.APIReader, runs[len(runs)-1]); err != nil {
			return 0, err
		}
	}
	switch {
	case len(runs) > 0 && last.state == jobRunning:
		s.waiting(v1alpha1.ReasonBackupInProgress, "every shard is in the store; writing the manifest (Job %s)", last.job.Name)
		s.stop = true
		return 0, nil
	case len(runs) > 0 && last.ok:
		done := metav1.NewTime(r.now())
		if c := last.job.Status.CompletionTime; c != nil {
			done = *c
		}
		s.want.Phase, s.want.CompletionTime = v1alpha1.BackupCompleted, &done
		s.want.Size, s.want.Keys, s.want.ValkeyVersion = sumSize(m), sumKeys(m), m.ValkeyVersion
		s.message = fmt.Sprintf("%d shards, %d keys, %d bytes in %s", len(m.Shards), s.want.Keys, s.want.Size, s.want.Path)
		r.normal(s.vb, "Completed", "Backup", "backup of %s completed: %s", s.vb.Spec.ClusterName, s.message)
		return 0, nil
	case len(runs) > 0 && (last.n >= MaxManifestAttempts || last.reason == jobapi.ReasonEndpointRefused):
		s.fail(failedReason(last.reason), "the snapshots are in the store, but the manifest could not be written (%d attempts): %s", last.n, last.message)
		return 0, nil
	case len(runs) > 0:
		r.warn(s.vb, "Retrying", "Backup", "writing the manifest failed (%s: %s); trying again", last.reason, last.message)
	}
	if err := checkCredentials(ctx, r.APIReader, s.vb.Namespace, &s.vb.Spec.ObjectStore); err != nil {
		return 0, s.failStore(err, "the snapshots are in the store, but the manifest cannot be written: ")
	}
	body, err := layout.EncodeManifest(m)
	if err != nil {
		s.fail(v1alpha1.ReasonTransferFailed, "the snapshots are in the store, but the manifest cannot be written: %s", err.Error())
		return 0, nil
	}
	if err := r.ensureManifestConfigMap(ctx, s.vb, body); err != nil {
		return 0, err
	}
	j := manifestJob(r.Jobs, s.vb, s.want.Path, s.vc.Spec.ImagePullSecrets, last.n+1)
	if err := r.createJob(ctx, s.vb, j); err != nil {
		return 0, err
	}
	s.waiting(v1alpha1.ReasonBackupInProgress, "every shard is in the store; writing the manifest (Job %s)", j.Name)
	s.stop = true
	return 0, nil
}

// manifestOf is the manifest of a backup whose shards are all in the store (st).
func manifestOf(vb *v1alpha1.ValkeyBackup, st v1alpha1.ValkeyBackupStatus, now time.Time) layout.Manifest {
	m := layout.Manifest{Namespace: vb.Namespace, Cluster: vb.Spec.ClusterName, Backup: vb.Name, CompletedAt: now.UTC()}
	if st.StartTime != nil {
		m.StartedAt = st.StartTime.UTC()
	}
	var version valkey.Version
	for _, sh := range st.Shards {
		m.Shards = append(m.Shards, layout.ManifestShard{
			Index: sh.Index, Object: sh.Object, Size: sh.Size, SHA256: strings.TrimPrefix(sh.Checksum, "sha256:"), Keys: sh.Keys,
			Slots: sh.Slots, RDBVersion: int(sh.RDBVersion), ValkeyVersion: sh.ValkeyVersion, Source: sh.Source, SourceRole: sh.SourceRole,
		})
		if v, err := valkey.ParseVersion(sh.ValkeyVersion); err == nil && versionLess(version, v) {
			version = v
		}
	}
	if version.Major > 0 {
		m.ValkeyVersion = version.String()
	}
	return m
}

func sumSize(m layout.Manifest) (n int64) {
	for _, sh := range m.Shards {
		n += sh.Size
	}
	return n
}

func sumKeys(m layout.Manifest) (n int64) {
	for _, sh := range m.Shards {
		n += sh.Keys
	}
	return n
}

// ensureManifestConfigMap creates the ConfigMap that carries the manifest to its Job,
// owned by the backup and immutable: the manifest a retried Job writes is the one the
// first attempt had.
func (r *BackupReconciler) ensureManifestConfigMap(ctx context.Context, vb *v1alpha1.ValkeyBackup, body []byte) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: manifestConfigMapName(vb), Namespace: vb.Namespace, Labels: jobLabels(vb.Spec.ClusterName, componentManifest)},
		Data:       map[string]string{manifestKey: string(body)},
		Immutable:  ptr.To(true),
	}
	cm.Labels[v1alpha1.LabelBackup] = vb.Name
	if err := controllerutil.SetControllerReference(vb, cm, r.Scheme); err != nil {
		return err
	}
	if err := r.Client.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ConfigMap %s: %w", cm.Name, err)
	}
	return nil
}

func versionLess(a, b valkey.Version) bool {
	if a.Major != b.Major {
		return a.Major < b.Major
	}
	if a.Minor != b.Minor {
		return a.Minor < b.Minor
	}
	return a.Patch < b.Patch
}

// writeBackupStatus applies the status when it changed.
func (r *BackupReconciler) writeBackupStatus(ctx context.Context, s *backupScope) error {
	st := s.want
	if st.Phase == v1alpha1.BackupFailed && st.CompletionTime == nil {
		now := metav1.NewTime(r.now())
		st.CompletionTime = &now
		r.warn(s.vb, "Failed", "Backup", "%s", s.message)
	}
	st.ObservedGeneration = s.vb.Generation
	st.Conditions = conditions.Resolve(s.vb.Status.Conditions, r.now(), backupConditions(st.Phase, s.reason, s.message, s.vb.Generation)...)
	if status.Equal(s.vb.Status, st) {
		return nil
	}
	return status.Apply(ctx, r.Client, FieldManager, s.vb, v1alpha1.GroupVersion.WithKind("ValkeyBackup"), st)
}

// finalize deletes a Delete-policy backup's objects through a Job, manifest first, then
// lets the backup go. The finalizer is held while a deletion Job runs, and released
// once one succeeded, once MaxDeleteAttempts failed or one was refused by the endpoint
// policy (an ObjectsLeft Warning says the objects stay), when the store's credentials
// are gone, or when the namespace goes.
func (r *BackupReconciler) finalize(ctx context.Context, vb *v1alpha1.ValkeyBackup) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(vb, v1alpha1.FinalizerBackupObjects) {
		return ctrl.Result{}, nil
	}
	if vb.Spec.DeletionPolicyOrDefault() == v1alpha1.BackupDelete && vb.Status.Path != "" {
		done, wait, err := r.deleteObjects(ctx, vb)
		if err != nil || !done {
			return ctrl.Result{RequeueAfter: wait}, err
		}
	}
	controllerutil.RemoveFinalizer(vb, v1alpha1.FinalizerBackupObjects)
	if err := r.Client.Update(ctx, vb); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	return ctrl.Result{}, nil
}

// deleteObjects drives the deletion Jobs of a backup; done says the finalizer may go.
func (r *BackupReconciler) deleteObjects(ctx context.Context, vb *v1alpha1.ValkeyBackup) (done bool, wait time.Duration, err error) {
	var list batchv1.JobList
	if err := r.Client.List(ctx, &list, client.InNamespace(vb.Namespace), client.MatchingLabels{v1alpha1.LabelBackup: vb.Name}); err != nil {
		return false, 0, fmt.Errorf("list Jobs: %w", err)
	}
	var owned []batchv1.Job
	for _, j := range list.Items {
		if metav1.IsControlledBy(&j, vb) {
			owned = append(owned, j)
		}
	}
	var last storeRun
	if runs := storeRuns(owned, componentDelete); len(runs) > 0 {
		if last, err = readRun(ctx, r.APIReader, runs[len(runs)-1]); err != nil {
			return false, 0, err
		}
	}
	switch {
	case last.job != nil && last.state == jobRunning:
		return false, 0, nil
	case last.job != nil && last.ok:
		r.normal(vb, "Deleted", "Delete", "the %d objects of %s were deleted", last.result.Objects, vb.Status.Path)
		return true, 0, nil
	case last.job != nil && last.reason == jobapi.ReasonEndpointRefused:
		r.warn(vb, "ObjectsLeft", "Delete", "the objects of %s cannot be deleted: %s: they stay in the store",
			vb.Status.Path, endpointRefused(backupEndpointField, &vb.Spec.ObjectStore, last.message))
		return true, 0, nil
	case last.job != nil && last.n >= MaxDeleteAttempts:
		r.warn(vb, "ObjectsLeft", "Delete", "deleting the objects of %s failed %d times (%s: %s): they stay in the store", vb.Status.Path, last.n, last.reason, last.message)
		return true, 0, nil
	}
	if r.namespaceDeleted(ctx, vb.Namespace) {
		// No Job starts in a namespace that goes (perhaps with the store): do not hold it.
		r.warn(vb, "ObjectsLeft", "Delete", "the objects of %s cannot be deleted while the namespace goes: they stay in the store", vb.Status.Path)
		return true, 0, nil
	}
	if last.job != nil {
		if w := retryIn(last, r.storeRetryDelay(), r.now()); w > 0 {
			return false, w, nil
		}
		r.warn(vb, "DeleteFailed", "Delete", "deleting the objects of %s failed (%s: %s); attempt %d of %d", vb.Status.Path, last.reason, last.message, last.n+1, MaxDeleteAttempts)
	}
	if err := checkCredentials(ctx, r.APIReader, vb.Namespace, &vb.Spec.ObjectStore); err != nil {
		var se *storeError
		if !errors.As(err, &se) {
			return false, 0, err
		}
		r.warn(vb, "ObjectsLeft", "Delete", "the objects of %s cannot be deleted (%s): they stay in the store", vb.Status.Path, se.Error())
		return true, 0, nil
	}
	var pullSecrets []corev1.LocalObjectReference
	vc := &v1alpha1.ValkeyCluster{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: vb.Namespace, Name: vb.Spec.ClusterName}, vc); err == nil {
		pullSecrets = vc.Spec.ImagePullSecrets
	}
	if err := r.createJob(ctx, vb, deleteJob(r.Jobs, vb, vb.Status.Path, pullSecrets, last.n+1)); err != nil {
		if apierrors.IsForbidden(err) && r.namespaceDeleted(ctx, vb.Namespace) {
			return false, time.Millisecond, nil
		}
		return false, 0, err
	}
	return false, 0, nil
}

// namespaceDeleted reports whether namespace is being deleted.
func (r *BackupReconciler) namespaceDeleted(ctx context.Context, namespace string) bool {
	var ns corev1.Namespace
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: namespace}, &ns); err != nil {
		return apierrors.IsNotFound(err)
	}
	return !ns.DeletionTimestamp.IsZero()
}
