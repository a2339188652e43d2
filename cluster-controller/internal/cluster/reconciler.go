// Package cluster reconciles ValkeyClusters: it creates the members (ValkeyNodes), forms
// the Valkey cluster, assigns and moves slots, keeps replicas following their shard's
// primary, heals, rolls and scales, and reports it all in the cluster's status.
//
// It is the acting half: a pass reads the members and their servers into a scope, whose
// plan.Cluster the planners of package plan judge (what to roll, scale, take over,
// assign, move back); the phases here carry their plans out with the API server and the
// servers, and write events, metrics and status.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/membership"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// FieldManager is the field manager of everything this controller writes.
const FieldManager = "cluster-controller"

// Pass sizes and the requeue intervals the planners do not choose (plan.RequeueFast and
// the like are theirs).
const (
	// createBatch is the default CreateBatch: a cluster of up to 32 members (10 shards
	// with 2 replicas) is created in one pass.
	createBatch = 32
	// requeueNameConflict: an object that is not the cluster's is looked at again (it is
	// not watched: the cluster does not own it).
	requeueNameConflict = 10 * time.Second
)

// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters/status,verbs=patch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes,verbs=list;watch;create;patch;delete
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes/status,verbs=patch
// Services, budgets and the NetworkPolicy are also read from the API server (get) before
// one is created: the cache holds the operator's own only, and another of that name
// must be reported (NameConflict), not taken over.
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// Secrets are watched as metadata and read by name (operator.ContentCache).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=list
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=operator
// Leader election records its events with the core API, in the operator's namespace.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=operator

// Reconciler reconciles ValkeyClusters.
type Reconciler struct {
	client.Client
	// APIReader reads from the API server itself, bypassing the cache, for decisions a
	// stale cache would make twice (creating members, a cluster whose cache lags behind
	// the controller's own status write: latest).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	Pool      *valkeyconn.Pool
	Metrics   *Metrics
	// Clock is the clock (tests replace it).
	Clock func() time.Time
	// Addr returns the client address of a member's server (default: its pod IP, port
	// 6379). The integration suite maps members to servers on loopback addresses.
	Addr func(*v1alpha1.ValkeyNode) string
	// NetworkPolicy holds the operator's defaults for the clusters' NetworkPolicies.
	NetworkPolicy NetworkPolicyDefaults
	// RestPeriod is how often a cluster at rest is looked at (rest.go); plan.RequeueSteady
	// when zero.
	RestPeriod time.Duration
	// CreateBatch is the most members one pass creates (createBatch when zero): a large
	// cluster is created over several passes, each started by the watch on the members
	// the previous one created, so other clusters' passes run in between.
	CreateBatch int
	// FastFailover promotes a primary's replica as soon as the primary's ValkeyNode says
	// Kubernetes saw its server exit (ServerDown), without waiting for Valkey's gossip.
	FastFailover bool
	// FailbackHold is how long a member must have been in sync before failback makes it
	// its shard's primary again (failback.go); DefaultFailbackHold when zero.
	FailbackHold time.Duration
	// LoginRecoveryPeriod is the least time between two restarts of a member whose server
	// refuses the operator's login (login.go); DefaultLoginRecoveryPeriod when zero.
	LoginRecoveryPeriod time.Duration

	// draining remembers, per leaving member (UID), when its wait for its clients began.
	draining sync.Map
	// causes remembers, per cluster (UID), the member causes told on it (causes.go).
	causes sync.Map
	// stalls remembers, per cluster (UID), the step its change is on and since when
	// (stall.go).
	stalls sync.Map
	// rest remembers, per cluster (UID), what its last pass at rest saw (rest.go).
	rest sync.Map
	// nodeLabels caches the labels of the Kubernetes nodes members run on (failback.go).
	nodeLabels nodeLabelCache
	// primariesSeen remembers, per cluster (UID), each shard's primary and since when
	// (failback.go).
	primariesSeen sync.Map
	// known remembers, per cluster (UID), the resource version of the newest version of
	// the cluster the controller has seen: its own last status write, or its last read
	// from the API server (latest).
	known sync.Map
	// exits remembers, per cluster, the servers' exits its members reported (exits.go).
	exits exits
}

func (r *Reconciler) createBatch() int {
	if r.CreateBatch > 0 {
		return r.CreateBatch
	}
	return createBatch
}

func (r *Reconciler) restPeriod() time.Duration {
	if r.RestPeriod > 0 {
		return r.RestPeriod
	}
	return plan.RequeueSteady
}

// addr is the client address of a member's server.
func (r *Reconciler) addr(vn *v1alpha1.ValkeyNode) string {
	if r.Addr != nil {
		return r.Addr(vn)
	}
	return valkeyconn.Addr(vn.Status.PodIP)
}

// SetupWithManager registers the controller: ValkeyClusters, and the objects it owns,
// whose changes (a member's pod becoming ready, a member deleted) drive the next pass.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Clock == nil {
		r.Clock = time.Now
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ValkeyCluster{}).
		Watches(&v1alpha1.ValkeyNode{}, handler.EnqueueRequestsFromMapFunc(r.exits.mapAndNote(r.Clock))).
		Owns(&corev1.Service{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.NetworkPolicy{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers, RateLimiter: errorBackoff()}).
		Complete(r)
}

// maxErrorBackoff caps how long a cluster whose passes keep failing waits for the next
// one when no event comes. controller-runtime's default doubles up to 1000 s: a dozen
// transient failures in a row (a member restarting during a slot move) then left a
// cluster untouched for minutes after the cause was gone.
const maxErrorBackoff = 30 * time.Second

// errorBackoff is controller-runtime's default rate limiter with the per-cluster
// backoff capped at maxErrorBackoff: 5 ms doubling per failure, and 10 retries a second
// (bursts of 100) over all clusters.
func errorBackoff() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, maxErrorBackoff),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// Reconcile runs one pass over a cluster.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vc := &v1alpha1.ValkeyCluster{}
	if err := r.Get(ctx, req.NamespacedName, vc); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forget(req.NamespacedName)
			r.exits.forget(req.NamespacedName)
			return ctrl.Result{}, r.releaseOrphans(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	logger := log.FromContext(ctx).WithValues("cluster", req.NamespacedName.String())
	ctx = log.IntoContext(ctx, logger)
	if !vc.DeletionTimestamp.IsZero() {
		r.Metrics.forget(req.NamespacedName)
		r.causes.Delete(vc.UID)
		r.stalls.Delete(vc.UID)
		r.rest.Delete(vc.UID)
		r.primariesSeen.Delete(vc.UID)
		r.known.Delete(vc.UID)
		r.exits.forget(req.NamespacedName)
		return ctrl.Result{}, r.releaseOrphans(ctx, req.NamespacedName)
	}
	vc, err := r.latest(ctx, vc)
	if err != nil || vc == nil {
		return ctrl.Result{}, err // gone: the watch brings the deletion
	}

	if r.stillAtRest(ctx, vc) {
		r.Metrics.restChecked(req.NamespacedName, r.Clock())
		return ctrl.Result{RequeueAfter: r.restPeriod()}, nil
	}

	// The shards as the previous pass reported them (writing the status replaces them).
	prevShards := r.Metrics.previousShards(req.NamespacedName, vc.DeepCopy().Status.Shards)
	s, err := r.newScope(ctx, vc)
	var inputs string
	if err == nil {
		inputs = r.passInputs(ctx, s)
	}
	if err != nil {
		r.Metrics.reconcileError(req.NamespacedName, "observe")
		return ctrl.Result{}, err
	}
	res, runErr := r.run(ctx, s)
	if runErr != nil {
		r.Metrics.reconcileError(req.NamespacedName, s.failedPhase)
	}
	if err := r.writeStatus(ctx, s, runErr); err != nil {
		if runErr == nil {
			r.Metrics.reconcileError(req.NamespacedName, "status")
		}
		runErr = errors.Join(runErr, err)
	}
	for _, sh := range electedFailovers(prevShards, s, r.Metrics.withPromotions(req.NamespacedName, s.requested, s.Topo.Now)) {
		r.Metrics.failover(vc, sh, kindElected)
	}
	r.Metrics.observe(s, s.reported, runErr == nil)
	r.Metrics.zeroCounters(req.NamespacedName, s.Shards(), r.errorPhases())
	nodes := make([]*v1alpha1.ValkeyNode, 0, len(s.Topo.Members))
	for _, m := range s.Topo.Members {
		nodes = append(nodes, m.Node)
	}
	if wait := r.reportMemberCauses(ctx, vc, nodes); wait > 0 && (res.RequeueAfter == 0 || wait < res.RequeueAfter) {
		res.RequeueAfter = wait
	}
	r.rememberRest(s, inputs, runErr == nil && s.atRest && res.RequeueAfter == r.restPeriod())
	if runErr != nil {
		logger.Error(runErr, "reconcile pass failed")
		if res.RequeueAfter == 0 || res.RequeueAfter > plan.RequeueWait {
			res.RequeueAfter = plan.RequeueWait
		}
	}
	return res, nil
}

// phase is one step of a pass.
type phase struct {
	name string
	fn   func(context.Context, *scope) (time.Duration, error)
	// planned: a change the spec asks for, held while the spec is invalid or the
	// cluster is paused.
	planned bool
}

// phases are the steps of a pass, in order; their names label
// valkey_operator_cluster_reconcile_errors_total.
func (r *Reconciler) phases() []phase {
	return []phase{
		{"services", r.reconcileServices, false},
		{"external access", r.reconcileExternal, false},
		{"network policy", r.reconcileNetworkPolicy, false},
		{"disruption budgets", r.reconcilePDBs, false},
		{"failovers", r.settleFailovers, false},
		{"leaving members", r.reconcileLeaving, false},
		{"login recovery", r.reconcileLoginRecovery, false},
		{"published secrets", r.awaitPublished, false},
		{"members", r.reconcileMembers, false},
		{"stale members", r.reconcileStaleMembers, false},
		{"meet", r.reconcileMeet, false},
		{"slots", r.reconcileSlots, false},
		{"replicas", r.reconcileReplicas, false},
		{"heal", r.reconcileHeal, false},
		{"forget", r.reconcileStrangers, false},
		{"failover request", r.reconcileFailoverRequest, false},
		{"config", r.reconcileLiveConfig, true},
		{"roll", r.reconcileRoll, true},
		{"scale", r.reconcileScale, true},
		{"placement", r.reconcilePlacement, true},
		{"slot maps", r.awaitSlotMaps, false},
	}
}

// errorPhases are the values of valkey_operator_cluster_reconcile_errors_total's phase
// label: reading the cluster (observe), each phase, and writing the status.
func (r *Reconciler) errorPhases() []string {
	names := []string{"observe"}
	for _, p := range r.phases() {
		names = append(names, p.name)
	}
	return append(names, "status")
}

// run executes the phases of a pass in order; a phase that must wait for the cluster to
// settle stops the pass and says when to look again.
func (r *Reconciler) run(ctx context.Context, s *scope) (ctrl.Result, error) {
	if msg := s.heldMessage(); msg != "" {
		reason := v1alpha1.ReasonInvalid
		if s.guard.Valid() {
			reason = v1alpha1.ReasonImmutableField
		}
		s.progress(reason, "%s", msg)
	}
	if !s.mayAct() && !s.healOnly {
		return ctrl.Result{}, nil
	}
	for _, p := range r.phases() {
		if p.planned && (s.healOnly || s.paused) {
			continue
		}
		wait, err := p.fn(ctx, s)
		if nc := (*NameConflictError)(nil); errors.As(err, &nc) {
			// Someone else's object holds a name of the cluster's: nothing is done to it,
			// and nothing after it, until it is renamed or deleted.
			s.progress(v1alpha1.ReasonNameConflict, "%s", nc.Error())
			return ctrl.Result{RequeueAfter: requeueNameConflict}, nil
		}
		if s.stopTooLarge(p.name, err) {
			return ctrl.Result{RequeueAfter: plan.RequeueSteady}, nil
		}
		if err != nil {
			s.failedPhase = p.name
			return ctrl.Result{}, fmt.Errorf("%s: %w", p.name, err)
		}
		if wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	after := plan.RequeueWait
	switch {
	case s.applied() && !s.recheck:
		after, s.atRest = r.restPeriod(), true
	case s.step.reason == "":
		// Nothing left to do but wait for the servers (replicas syncing, the cluster
		// state spreading): no Kubernetes event announces that, so look again soon.
		after = plan.RequeueSync
	}
	if s.within > 0 && s.within < after {
		after = s.within
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// releaseOrphans lets go of the members of a cluster that is deleted: nothing is left to
// hand over to.
func (r *Reconciler) releaseOrphans(ctx context.Context, key client.ObjectKey) error {
	list, err := membership.Labelled(ctx, r.Client, key)
	if err != nil {
		return err
	}
	var errs []error
	for i := range list {
		vn := &list[i]
		if !vn.DeletionTimestamp.IsZero() {
			errs = append(errs, r.releaseFinalizer(ctx, vn))
		}
	}
	return errors.Join(errs...)
}

// latest returns vc, or the cluster as the API server holds it when vc is not the newest
// version the controller has seen, nil when it is gone. The cache shows the controller's
// own status writes late when the API server or the process is slow, and a pass carries
// what it started from one pass to the next in status (status.failover's target, the
// applied spec): a pass that read the status before the last write would decide again
// what the pass before it decided, and ask a second failover for one request. Costs one
// read of the API server per pass that finds the cache behind (or ahead, after another
// controller's write: that read makes the cache's next version the known one).
func (r *Reconciler) latest(ctx context.Context, vc *v1alpha1.ValkeyCluster) (*v1alpha1.ValkeyCluster, error) {
	known, ok := r.known.Load(vc.UID)
	if !ok || known == vc.ResourceVersion || r.APIReader == nil {
		return vc, nil
	}
	live := &v1alpha1.ValkeyCluster{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(vc), live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	r.known.Store(live.UID, live.ResourceVersion)
	return live, nil
}

// observe asks every member with a running pod for its view of the cluster, all members
// at once, each bounded by its own timeout, so one dead pod costs one timeout, not a
// worker.
func (r *Reconciler) observe(ctx context.Context, nodes []*v1alpha1.ValkeyNode, cred valkeyconn.Credentials) []*plan.Member {
	members := make([]*plan.Member, len(nodes))
	var wg sync.WaitGroup
	for i, vn := range nodes {
		m := &plan.Member{Node: vn, Addr: r.addr(vn)}
		members[i] = m
		if m.Err = unobservable(vn); m.Err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.observeMember(ctx, m, cred)
		}()
	}
	wg.Wait()
	return members
}

// unobservable says why a member is not asked for its view this pass, nil when it is:
// its pod is not ready, or its server is down (ServerDown=True: the kubelet saw it exit,
// or its address refused a connection). A pod stays ready for a readiness probe period
// after its server died, and a bare pod's address may stop answering at all once the
// kubelet tears it down: a dial there would hold the pass for its whole timeout, while
// the takeover it should decide waits. The node-controller clears ServerDown once the
// server answers again.
func unobservable(vn *v1alpha1.ValkeyNode) error {
	switch {
	case vn.Status.PodIP == "" || !conditions.IsTrue(vn.Status.Conditions, v1alpha1.ConditionPodReady):
		return errors.New("pod not ready")
	case conditions.IsTrue(vn.Status.Conditions, v1alpha1.ConditionServerDown):
		return errors.New("server down")
	}
	return nil
}

func (r *Reconciler) observeMember(ctx context.Context, m *plan.Member, cred valkeyconn.Credentials) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := r.Pool.Client(ctx, m.Addr, cred)
	if err != nil {
		m.Err = err
		return
	}
	fail := func(err error) {
		m.Err = err
		r.Pool.Drop(c)
	}
	view, err := c.ClusterNodes(ctx)
	if err != nil {
		fail(err)
		return
	}
	info, err := c.Info(ctx, "replication", "server", "cluster", "keyspace")
	if err != nil {
		fail(err)
		return
	}
	ci, err := c.ClusterInfo(ctx)
	if err != nil {
		fail(err)
		return
	}
	m.View = view
	for _, n := range view {
		if n.Myself {
			m.Self = n
		}
	}
	m.Repl = valkey.ParseReplication(info)
	m.Keys, m.KeysKnown = valkey.KeyCount(info)
	m.Version, _ = valkey.VersionFromInfo(info)
	m.State = ci["cluster_state"]
	m.Reachable = m.Self.ID != ""
	if !m.Reachable {
		m.Err = errors.New("CLUSTER NODES has no line for the server itself")
	}
}

// client returns the client of a reachable member.
func (r *Reconciler) client(ctx context.Context, s *scope, m *plan.Member) (*valkey.Client, error) {
	return r.Pool.Client(ctx, m.Addr, s.cred)
}
