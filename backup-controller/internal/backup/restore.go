package backup

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/layout"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/rdb"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/guard"
	"github.com/valkey-operator/valkey-operator/internal/membership"
	"github.com/valkey-operator/valkey-operator/internal/status"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// RestoreReconciler restores the data source of new ValkeyClusters.
type RestoreReconciler struct{ *Env }

// SetupWithManager registers the controller: clusters with a data source, their
// restore Jobs, and their members (whose ACL and versions gate the start).
func (r *RestoreReconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, workers int) error {
	hasSource := predicate.NewPredicateFuncs(func(o client.Object) bool {
		vc, ok := o.(*v1alpha1.ValkeyCluster)
		return ok && vc.Spec.DataSource != nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("restore").
		For(&v1alpha1.ValkeyCluster{}, builder.WithPredicates(hasSource)).
		Owns(&batchv1.Job{}).
		Watches(&v1alpha1.ValkeyNode{}, handler.EnqueueRequestsFromMapFunc(membership.ClusterOf)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// restoredStatus is the part of a ValkeyCluster's status this controller owns.
type restoredStatus struct {
	Conditions []metav1.Condition `json:"conditions"`
}

// restoreState is the Restored condition a pass decided, and whether it is final.
type restoreState struct {
	status  bool
	reason  string
	message string
	// final: nothing will change it (restored, or failed for good).
	final bool
	wait  time.Duration
}

func pending(reason, format string, args ...any) restoreState {
	return restoreState{reason: reason, message: fmt.Sprintf(format, args...), wait: requeueWait}
}

func failed(reason, format string, args ...any) restoreState {
	return restoreState{reason: reason, message: fmt.Sprintf(format, args...), final: true}
}

// finalRestored reports whether a cluster's Restored condition can no longer change.
func finalRestored(vc *v1alpha1.ValkeyCluster) bool {
	c := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionRestored)
	if c == nil {
		return false
	}
	if c.Status == metav1.ConditionTrue {
		return true
	}
	switch c.Reason {
	case v1alpha1.ReasonChecksumMismatch, v1alpha1.ReasonVersionTooNew, v1alpha1.ReasonRestoreFailed, v1alpha1.ReasonNotAtCreation:
		return true
	}
	return false
}

// Reconcile is one pass over a cluster with a data source.
func (r *RestoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vc := &v1alpha1.ValkeyCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, vc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if vc.Spec.DataSource == nil || !vc.DeletionTimestamp.IsZero() || finalRestored(vc) {
		return ctrl.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("cluster", req.NamespacedName.String()))
	st, err := r.pass(ctx, vc)
	if err != nil {
		st = pending(v1alpha1.ReasonRestoreInProgress, "the restore could not read its inputs: %s", err.Error())
	}
	if werr := r.writeRestored(ctx, vc, st); werr != nil {
		err = errors.Join(err, werr)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: st.wait}, nil
}

// restorePass is what one pass over a cluster with a data source read and decided.
type restorePass struct {
	vc *v1alpha1.ValkeyCluster
	// store and dir locate the data source; jobs are the cluster's restore Jobs; sum
	// is the manifest once read; nodes the cluster's members.
	store *v1alpha1.ObjectStoreSpec
	dir   string
	jobs  clusterJobs
	sum   layout.Summary
	nodes []v1alpha1.ValkeyNode
	// views are the shards' restore Jobs as this pass saw them.
	views map[int32]restoreJobView
}

// restorePhase is one step of a restore pass: it returns the state to report when the
// pass ends there (nil: go on).
type restorePhase struct {
	name string
	run  func(context.Context, *restorePass) (*restoreState, error)
}

// restorePhases are the steps of a pass, in order.
func (r *RestoreReconciler) restorePhases() []restorePhase {
	return []restorePhase{
		{"guard", r.guardRestore},
		{"source", r.findSource},
		{"manifest", r.driveManifest},
		{"members", r.checkMembers},
		{"shards", r.driveShards},
		{"outcome", r.decideOutcome},
	}
}

// pass decides the Restored condition and starts what is due: the first phase that
// decides ends it.
func (r *RestoreReconciler) pass(ctx context.Context, vc *v1alpha1.ValkeyCluster) (restoreState, error) {
	p := &restorePass{vc: vc}
	for _, ph := range r.restorePhases() {
		st, err := ph.run(ctx, p)
		if err != nil {
			return restoreState{}, fmt.Errorf("%s: %w", ph.name, err)
		}
		if st != nil {
			return *st, nil
		}
	}
	return restoreState{}, errors.New("no phase decided the restore")
}

// guardRestore stops on an invalid spec, and on a data source added to a cluster that
// already served.
func (r *RestoreReconciler) guardRestore(_ context.Context, p *restorePass) (*restoreState, error) {
	vc := p.vc
	if g := guard.Check(vc); !g.Valid() {
		return &restoreState{reason: v1alpha1.ReasonInvalid, message: "the spec is invalid (see InvalidSpec): nothing is restored"}, nil
	}
	if conditions.Get(vc.Status.Conditions, v1alpha1.ConditionRestored) == nil && conditions.IsTrue(vc.Status.Conditions, v1alpha1.ConditionReady) {
		st := failed(v1alpha1.ReasonNotAtCreation, "the data source was added to a cluster that already served: a data source is restored only into a new cluster")
		return &st, nil
	}
	return nil, nil
}

// findSource locates the data source and reads the cluster's restore Jobs.
func (r *RestoreReconciler) findSource(ctx context.Context, p *restorePass) (*restoreState, error) {
	var st *restoreState
	if p.store, p.dir, st = r.resolveSource(ctx, p.vc); st != nil {
		return st, nil
	}
	var err error
	p.jobs, err = r.restoreJobs(ctx, p.vc)
	return nil, err
}

// driveManifest reads the data source's manifest through its Jobs.
func (r *RestoreReconciler) driveManifest(ctx context.Context, p *restorePass) (*restoreState, error) {
	sum, st, err := r.readManifest(ctx, p.vc, p.store, p.dir, p.jobs)
	if err != nil || st != nil {
		out := namingEndpoint(deref(st), p.vc, p.store)
		return &out, err
	}
	p.sum = sum
	return nil, nil
}

// checkMembers waits for the cluster to be ready for the restore, and refuses data of
// a version its members cannot load.
func (r *RestoreReconciler) checkMembers(ctx context.Context, p *restorePass) (*restoreState, error) {
	var err error
	if p.nodes, err = membership.Of(ctx, r.Client, p.vc); err != nil {
		return nil, err
	}
	if ok, msg := clusterReadyForRestore(p.vc, p.nodes); !ok {
		st := pending(v1alpha1.ReasonWaitingForCluster, "%s", msg)
		return &st, nil
	}
	if ok, msg := versionsLoad(p.sum, p.nodes); !ok {
		st := failed(v1alpha1.ReasonVersionTooNew, "%s", msg)
		return &st, nil
	}
	return nil, nil
}

// driveShards starts the restore Job of each backed-up shard that has none, and reads
// the results of those that ended.
func (r *RestoreReconciler) driveShards(ctx context.Context, p *restorePass) (*restoreState, error) {
	p.views = map[int32]restoreJobView{}
	for i := range p.sum.Shards {
		j, ok := p.jobs.shards[i]
		if !ok {
			if err := r.createJob(ctx, p.vc, restoreJob(r.Jobs, p.vc, p.store, p.dir, i, p.sum)); err != nil {
				return nil, err
			}
			p.views[i] = restoreJobView{state: jobRunning}
			continue
		}
		v := restoreJobView{state: stateOf(j)}
		if v.state != jobRunning {
			pods, err := jobPods(ctx, r.APIReader, j)
			if err != nil {
				return nil, err
			}
			v.result, v.hasResult = resultOf(pods, containerFetch, containerLoad)
			if !v.hasResult && v.state == jobFailed {
				_, v.message = failureMessage(j)
			}
		}
		p.views[i] = v
	}
	return nil, nil
}

// decideOutcome decides Restored from the shards' Jobs, with an event when it is final.
func (r *RestoreReconciler) decideOutcome(_ context.Context, p *restorePass) (*restoreState, error) {
	out := namingEndpoint(restoreOutcome(p.sum, p.views, sourceName(p.vc), p.vc.Spec.ShardCount()), p.vc, p.store)
	switch {
	case out.status:
		r.normal(p.vc, "Restored", "Restore", "%s", out.message)
	case out.final:
		r.warn(p.vc, out.reason, "Restore", "%s", out.message)
	}
	return &out, nil
}

// resolveSource finds the store and folder of the data source.
func (r *RestoreReconciler) resolveSource(ctx context.Context, vc *v1alpha1.ValkeyCluster) (*v1alpha1.ObjectStoreSpec, string, *restoreState) {
	ds := vc.Spec.DataSource
	if ds.BackupName == "" {
		return ds.ObjectStore, ds.Path, nil
	}
	vb := &v1alpha1.ValkeyBackup{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: vc.Namespace, Name: ds.BackupName}, vb)
	var st restoreState
	switch {
	case apierrors.IsNotFound(err):
		st = pending(v1alpha1.ReasonNotFound, "ValkeyBackup %s does not exist", ds.BackupName)
	case err != nil:
		st = pending(v1alpha1.ReasonRestoreInProgress, "cannot read ValkeyBackup %s: %s", ds.BackupName, err.Error())
	case vb.Status.Phase == v1alpha1.BackupFailed:
		st = failed(v1alpha1.ReasonRestoreFailed, "ValkeyBackup %s failed: there is nothing to restore", ds.BackupName)
	case vb.Status.Phase != v1alpha1.BackupCompleted:
		st = pending(v1alpha1.ReasonBackupNotReady, "ValkeyBackup %s is %s, not Completed", ds.BackupName, orPending(vb.Status.Phase))
	default:
		return &vb.Spec.ObjectStore, vb.Status.Path, nil
	}
	return nil, "", &st
}

func orPending(p v1alpha1.BackupPhase) v1alpha1.BackupPhase {
	if p == "" {
		return v1alpha1.BackupPending
	}
	return p
}

func sourceName(vc *v1alpha1.ValkeyCluster) string {
	if vc.Spec.DataSource.BackupName != "" {
		return "ValkeyBackup " + vc.Spec.DataSource.BackupName
	}
	return vc.Spec.DataSource.Path
}

// namingEndpoint puts first, in a refusal by the endpoint policy, the field the data
// source's endpoint is written in: the cluster's, or its ValkeyBackup's.
func namingEndpoint(st restoreState, vc *v1alpha1.ValkeyCluster, store *v1alpha1.ObjectStoreSpec) restoreState {
	if st.reason != v1alpha1.ReasonEndpointRefused {
		return st
	}
	where := dataSourceEndpointField
	if name := vc.Spec.DataSource.BackupName; name != "" {
		where = "ValkeyBackup " + name + " " + backupEndpointField
	}
	st.message = endpointRefused(where, store, st.message)
	return st
}

func deref(st *restoreState) restoreState {
	if st == nil {
		return restoreState{}
	}
	return *st
}

// clusterJobs are a cluster's restore Jobs: per backed-up shard, and those reading the
// manifest, by attempt.
type clusterJobs struct {
	shards   map[int32]*batchv1.Job
	manifest []*batchv1.Job
}

// restoreJobs returns the cluster's restore Jobs.
func (r *RestoreReconciler) restoreJobs(ctx context.Context, vc *v1alpha1.ValkeyCluster) (clusterJobs, error) {
	var list batchv1.JobList
	if err := r.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelRestore: vc.Name}); err != nil {
		return clusterJobs{}, fmt.Errorf("list restore Jobs: %w", err)
	}
	out := clusterJobs{shards: map[int32]*batchv1.Job{}}
	var owned []batchv1.Job
	for i := range list.Items {
		j := &list.Items[i]
		if !metav1.IsControlledBy(j, vc) {
			continue
		}
		owned = append(owned, *j)
		if j.Labels[v1alpha1.LabelComponent] != "restore" {
			continue
		}
		var idx int32
		if _, err := fmt.Sscanf(j.Labels[v1alpha1.LabelShardIndex], "%d", &idx); err == nil {
			out.shards[idx] = j
		}
	}
	out.manifest = storeRuns(owned, componentReadManifest)
	return out, nil
}

// readManifest drives the Jobs that read the data source's manifest and returns its
// summary once one succeeded, or else the state to report.
func (r *RestoreReconciler) readManifest(ctx context.Context, vc *v1alpha1.ValkeyCluster, store *v1alpha1.ObjectStoreSpec, dir string, jobs clusterJobs) (layout.Summary, *restoreState, error) {
	var runs []storeRun
	for _, j := range jobs.manifest {
		run, err := readRun(ctx, r.APIReader, j)
		if err != nil {
			return layout.Summary{}, nil, err
		}
		runs = append(runs, run)
	}
	d := decideManifestRead(runs, dir, r.storeRetryDelay(), r.now())
	if d.summary != nil {
		return *d.summary, nil, nil
	}
	if d.start > 0 {
		if err := checkCredentials(ctx, r.APIReader, vc.Namespace, store); err != nil {
			var se *storeError
			if !errors.As(err, &se) {
				return layout.Summary{}, nil, err
			}
			st := pending(se.reason, "%s", se.Error())
			return layout.Summary{}, &st, nil
		}
		if err := r.createJob(ctx, vc, readManifestJob(r.Jobs, vc, store, dir, d.start)); err != nil {
			return layout.Summary{}, nil, err
		}
		for _, old := range d.remove {
			if err := r.Client.Delete(ctx, old, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				return layout.Summary{}, nil, fmt.Errorf("delete Job %s: %w", old.Name, err)
			}
		}
	}
	return layout.Summary{}, &d.state, nil
}

// manifestRead is what a pass does about a data source's manifest.
type manifestRead struct {
	// summary, when set: the manifest was read.
	summary *layout.Summary
	// start > 0: start that attempt, and delete the Jobs in remove.
	start  int
	remove []*batchv1.Job
	state  restoreState
}

// decideManifestRead decides from the attempts at reading the manifest of dir (oldest
// first) at now. The newest finished attempt speaks while the next one runs, so the
// condition does not flap between retries. A failed attempt is tried again delay after
// it ended (a missing manifest may appear), except for an unreadable manifest, which is
// final; the attempts before the newest are then deleted, so a cluster keeps at most two
// such Jobs.
func decideManifestRead(runs []storeRun, dir string, delay time.Duration, now time.Time) manifestRead {
	if len(runs) == 0 {
		return manifestRead{start: 1, state: waitJobs(pending(v1alpha1.ReasonRestoreInProgress, "reading the manifest of %s", dir))}
	}
	last := runs[len(runs)-1]
	if last.ok && last.result.Manifest != nil && last.result.Manifest.Shards > 0 {
		sum := *last.result.Manifest
		return manifestRead{summary: &sum}
	}
	if last.ok {
		last.reason, last.message = v1alpha1.ReasonTransferFailed, "the Job reported no manifest"
	}
	spoke := last
	if last.state == jobRunning {
		if len(runs) == 1 {
			return manifestRead{state: waitJobs(pending(v1alpha1.ReasonRestoreInProgress, "reading the manifest of %s (Job %s)", dir, last.job.Name))}
		}
		spoke = runs[len(runs)-2]
	}
	var st restoreState
	switch spoke.reason {
	case jobapi.ReasonChecksumMismatch:
		return manifestRead{state: failed(v1alpha1.ReasonChecksumMismatch, "the manifest of %s is unreadable: %s", dir, spoke.message)}
	case jobapi.ReasonNotFound:
		st = pending(v1alpha1.ReasonNotFound, "no complete backup at %s (its manifest is missing): %s", dir, spoke.message)
	case jobapi.ReasonAccessDenied, jobapi.ReasonStoreUnreachable, jobapi.ReasonEndpointRefused:
		st = pending(spoke.reason, "cannot read the manifest of %s: %s", dir, spoke.message)
	default:
		st = pending(v1alpha1.ReasonRestoreInProgress, "cannot read the manifest of %s: %s", dir, spoke.message)
	}
	if last.state == jobRunning {
		return manifestRead{state: waitJobs(st)}
	}
	if w := retryIn(last, delay, now); w > 0 {
		st.wait = w
		return manifestRead{state: st}
	}
	d := manifestRead{start: last.n + 1, state: waitJobs(st)}
	for _, run := range runs[:len(runs)-1] {
		d.remove = append(d.remove, run.job)
	}
	return d
}

// waitJobs: the Jobs' own changes wake the next pass.
func waitJobs(st restoreState) restoreState {
	st.wait = 0
	return st
}

// clusterReadyForRestore: the cluster is formed with every slot assigned, and every
// member runs the aclfile that enables the restore user.
func clusterReadyForRestore(vc *v1alpha1.ValkeyCluster, nodes []v1alpha1.ValkeyNode) (bool, string) {
	switch {
	case !conditions.IsTrue(vc.Status.Conditions, v1alpha1.ConditionClusterFormed):
		return false, "waiting for the cluster to form"
	case !conditions.IsTrue(vc.Status.Conditions, v1alpha1.ConditionSlotsAssigned):
		return false, "waiting for every slot to be assigned"
	case publishedSecrets(vc) != nil:
		return false, publishedSecrets(vc).Error()
	case len(nodes) == 0:
		return false, "waiting for members"
	}
	for _, vn := range nodes {
		if !vn.DeletionTimestamp.IsZero() {
			continue
		}
		if !conditions.IsTrue(vn.Status.Conditions, v1alpha1.ConditionACLApplied) {
			return false, fmt.Sprintf("waiting for member %s to run the current users (with the restore user)", vn.Name)
		}
		if vn.Status.Version == "" {
			return false, fmt.Sprintf("waiting for member %s to report its version", vn.Name)
		}
	}
	return true, ""
}

// versionsLoad refuses a backup whose snapshots are of a newer RDB format than the
// oldest member (and so the restore's private server, of the cluster's image) loads.
func versionsLoad(sum layout.Summary, nodes []v1alpha1.ValkeyNode) (bool, string) {
	var oldest *valkey.Version
	for _, vn := range nodes {
		v, err := valkey.ParseVersion(vn.Status.Version)
		if err != nil {
			continue
		}
		if oldest == nil || versionLess(v, *oldest) {
			oldest = &v
		}
	}
	if oldest == nil {
		return true, ""
	}
	max := rdb.MaxLoadableVersion(oldest.Major, oldest.Minor)
	if sum.RDBVersion > max {
		return false, fmt.Sprintf("shard %d was taken by Valkey %s (RDB format %d); this cluster runs Valkey %s, which loads RDB formats up to %d: restore into a cluster of Valkey %s or later",
			sum.RDBShard, sum.ValkeyVersion, sum.RDBVersion, oldest, max, sum.ValkeyVersion)
	}
	return true, ""
}

// restoreJobView is a restore Job as a pass reads it.
type restoreJobView struct {
	state     jobState
	result    jobapi.Result
	hasResult bool
	message   string
}

// restoreOutcome decides Restored from the shard Jobs of a backup of sum.Shards shards.
func restoreOutcome(sum layout.Summary, views map[int32]restoreJobView, source string, shards int32) restoreState {
	var done int32
	var restored, expired int64
	for i := range sum.Shards {
		v := views[i]
		switch v.state {
		case jobRunning:
			continue
		case jobSucceeded:
			if v.hasResult && v.result.Reason == "" {
				done++
				restored += v.result.Restored
				expired += v.result.Expired
				continue
			}
			return failed(v1alpha1.ReasonRestoreFailed, "the restore of shard %d ended without a result", i)
		default:
			reason, msg := v1alpha1.ReasonRestoreFailed, v.message
			if v.hasResult {
				msg = v.result.Message
				switch v.result.Reason {
				case jobapi.ReasonChecksumMismatch:
					reason = v1alpha1.ReasonChecksumMismatch
				case jobapi.ReasonNotFound:
					reason = v1alpha1.ReasonNotFound
				case jobapi.ReasonEndpointRefused:
					reason = v1alpha1.ReasonEndpointRefused
				}
			}
			return failed(reason, "the restore of shard %d failed: %s (the cluster keeps what was restored and is not reported Ready; delete it and create it again)", i, msg)
		}
	}
	if done < sum.Shards {
		return waitJobs(pending(v1alpha1.ReasonRestoreInProgress, "%d of %d shards of %s restored", done, sum.Shards, source))
	}
	return restoreState{status: true, reason: v1alpha1.ReasonRestored, final: true,
		message: fmt.Sprintf("%d keys of %s (%d shards) restored into %d shards; %d expired meanwhile; the backup counted %d", restored, source, sum.Shards, shards, expired, sum.Keys)}
}

// writeRestored applies the Restored condition when it changed.
func (r *RestoreReconciler) writeRestored(ctx context.Context, vc *v1alpha1.ValkeyCluster, st restoreState) error {
	c := conditions.New(v1alpha1.ConditionRestored, st.status, st.reason, st.message, vc.Generation)
	if st.reason == v1alpha1.ReasonInvalid {
		c = conditions.Unknown(v1alpha1.ConditionRestored, st.reason, st.message, vc.Generation)
	}
	want := restoredStatus{Conditions: conditions.Resolve(vc.Status.Conditions, r.now(), c)}
	have := conditions.Owned(vc.Status.Conditions, v1alpha1.ConditionRestored)
	if !conditions.Changed(have, want.Conditions) {
		return nil
	}
	return status.Apply(ctx, r.Client, FieldManager, vc, v1alpha1.GroupVersion.WithKind("ValkeyCluster"), want)
}
