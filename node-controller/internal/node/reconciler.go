package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/guard"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// FieldManager is the node-controller's field manager (status patches, and every
// object it writes).
const FieldManager = "node-controller"

// fieldOwner marks the controller's writes.
var fieldOwner = client.FieldOwner(FieldManager)

// Requeue intervals of a node whose pod runs. A node whose server answers is not
// requeued: see Progress in doc.go.
const (
	// unreachableRetry: a running server that did not answer (it is starting) is asked
	// again soon; nothing in Kubernetes changes when it starts answering.
	unreachableRetry = 3 * time.Second
	// missingPodRetry: a workload whose pod does not appear is looked at again, for the
	// cause its controller reports as an event.
	missingPodRetry = 2 * time.Second
)

// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes,verbs=list;watch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes/status,verbs=patch
// Owner references with blockOwnerDeletion need update on the owner's finalizers.
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes/finalizers,verbs=update
// ConfigMaps are watched as metadata and read by name (operator.ContentCache).
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update
// A workload is read whole (get) before its pod template is replaced: the cache holds
// none (operator.Trim).
// +kubebuilder:rbac:groups=apps,resources=statefulsets;deployments,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Leader election records its events with the core API, in the operator's namespace.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=operator
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=operator

// Reconciler turns each ValkeyNode into one running Valkey server.
type Reconciler struct {
	client.Client
	// APIReader reads what the cache does not hold: a workload whole before its
	// template is replaced, and StorageClasses, PriorityClasses and workload events,
	// only to say why a member cannot start.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	// Dialer reaches the nodes' servers.
	Dialer Dialer
	// DialWatched opens a TCP connection to a server's address for the watches that
	// prove its death (watchServer); nil dials with net.Dialer.
	DialWatched func(ctx context.Context, addr string) (net.Conn, error)
	// Clock is the clock of condition transition times (time.Now when nil).
	Clock func() time.Time

	// watches are the servers' watches (watchServer), set by register.
	watches *watches
}

// scope is everything one pass reads and decides.
type scope struct {
	node *v1alpha1.ValkeyNode
	// log carries the node and cluster keys.
	log logr.Logger
	// desiredConfig is the spec's config, normalised.
	desiredConfig map[string]string

	configMap *corev1.ConfigMap
	// applied is the config the ConfigMap was rendered from (nil when unknown).
	applied     map[string]string
	statefulSet *appsv1.StatefulSet
	deployment  *appsv1.Deployment
	pod         *corev1.Pod
	claim       *corev1.PersistentVolumeClaim

	// vacated, when set, is the proof that the server the node last ran is gone: its
	// address refuses connections (proof).
	vacated string

	// The running server, when it answered this pass.
	server        Server
	serverErr     error
	serverVersion valkey.Version
	role          v1alpha1.Role

	// workloadAnn are the gate annotations of the workload (the pod for workloadType
	// Pod); nil when there is none.
	workloadAnn map[string]string
	desiredHash string
	podMissing  bool

	storage storageState
	// podBlocker names why the workload does not create the pod (nil: nothing known).
	podBlocker *blocker
	configCond metav1.Condition
	validity   metav1.Condition
}

// deleting reports whether the node is being retired: nothing new is created for it.
func (s *scope) deleting() bool { return s.node.DeletionTimestamp != nil }

// podObservation gathers what PodReady needs.
func (s *scope) podObservation() podObservation {
	return podObservation{
		pod: s.pod, missing: s.podMissing, missingName: s.node.Status.PodName, blocker: s.podBlocker,
		answered: s.server != nil, serverErr: s.serverErr, role: s.role,
		pending: pendingMessage(s), gen: s.node.Generation,
	}
}

// Reconcile runs one pass for a ValkeyNode: read, act through the phases, then write
// the status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var vn v1alpha1.ValkeyNode
	if err := r.Get(ctx, req.NamespacedName, &vn); err != nil {
		if apierrors.IsNotFound(err) {
			r.watches.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	logger := log.FromContext(ctx).WithValues("node", vn.Name, "cluster", vn.Spec.ClusterName)
	ctx = log.IntoContext(ctx, logger)

	g := guard.CheckNode(&vn)
	if g.Valid() {
		g = guard.NodeResult(&vn, renderedPodErrors(&vn))
	}
	if !g.Valid() {
		logger.Info("spec is invalid; not acting", "errors", g.Errs.ToAggregate().Error())
		return ctrl.Result{}, r.writeStatus(ctx, &vn, invalidStatus(&vn, g.Condition, r.now()))
	}
	return r.pass(ctx, &vn, g.Condition)
}

// pass runs the phases of a valid node and writes its status.
func (r *Reconciler) pass(ctx context.Context, vn *v1alpha1.ValkeyNode, validity metav1.Condition) (ctrl.Result, error) {
	s := &scope{node: vn, log: log.FromContext(ctx), desiredConfig: normaliseConfig(vn.Spec.Config), validity: validity}
	s.configCond = configAppliedCond(vn)
	if err := r.load(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	r.observeServer(ctx, s)
	r.probeVacated(ctx, s)
	r.proof(s)
	r.watchRunning(ctx, s)
	var errs []error
	for _, phase := range []func(context.Context, *scope) error{
		r.reconcileStorage, r.ensureConfigMap, r.reconcileLiveConfig, r.reconcileWorkload, r.reconcileRoleLabels,
		r.reconcileMountRefresh, r.diagnose,
	} {
		if err := phase(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	prev := currentStatus(vn)
	want := desiredStatus(s, r.now())
	if err := r.writeStatus(ctx, vn, want); err != nil {
		errs = append(errs, err)
	}
	r.reportTransitions(s, prev, want)
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	return requeue(s), nil
}

// requeue schedules the next pass of a node that waits for something no watch
// announces; a node whose server answered waits for its next event.
func requeue(s *scope) ctrl.Result {
	switch {
	case s.pod == nil && s.workloadAnn != nil && !s.deleting():
		// The workload exists and its pod does not: a refusal to create it comes as an
		// event of the workload's controller, which no watch here announces.
		return ctrl.Result{RequeueAfter: missingPodRetry}
	case !serverRunning(s.pod):
		return ctrl.Result{}
	case s.server == nil:
		return ctrl.Result{RequeueAfter: unreachableRetry}
	}
	return ctrl.Result{}
}

// load reads the node's objects from the cache.
func (r *Reconciler) load(ctx context.Context, s *scope) error {
	vn := s.node
	key := types.NamespacedName{Namespace: vn.Namespace, Name: vn.Name}
	var err error
	if s.configMap, err = getOptional(ctx, r.Client, key, &corev1.ConfigMap{}); err != nil {
		return err
	}
	if s.configMap != nil {
		if cfg, ok := appliedConfig(s.configMap); ok {
			s.applied = normaliseConfig(cfg)
		}
	}
	switch vn.Spec.WorkloadType {
	case v1alpha1.WorkloadDeployment:
		s.deployment, err = getOptional(ctx, r.Client, key, &appsv1.Deployment{})
	case v1alpha1.WorkloadStatefulSet:
		s.statefulSet, err = getOptional(ctx, r.Client, key, &appsv1.StatefulSet{})
	}
	if err != nil {
		return err
	}
	if usesClaim(vn) {
		ck := types.NamespacedName{Namespace: vn.Namespace, Name: claimName(vn)}
		if s.claim, err = getOptional(ctx, r.Client, ck, &corev1.PersistentVolumeClaim{}); err != nil {
			return err
		}
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(vn.Namespace), client.MatchingLabels{v1alpha1.LabelNode: vn.Name}); err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	s.pod = choosePod(vn, pods.Items)
	return nil
}

// getOptional reads an object, returning nil when it does not exist.
func getOptional[T client.Object](ctx context.Context, c client.Reader, key types.NamespacedName, obj T) (T, error) {
	var zero T
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return zero, nil
		}
		return zero, fmt.Errorf("read %T %s: %w", obj, key.Name, err)
	}
	return obj, nil
}

// ensureConfigMap creates the ConfigMap from the spec when it is missing, or rebuilds
// it when it lost the record of its config (edited by hand).
func (r *Reconciler) ensureConfigMap(ctx context.Context, s *scope) error {
	if s.deleting() || (s.configMap != nil && s.applied != nil) {
		return nil
	}
	next := nextConfig(s.desiredConfig, nil, refusedBefore(s.node), liveVersion(s.node, s.serverVersion))
	existed := s.configMap != nil
	written, err := r.writeConfigMap(ctx, s, next)
	if err != nil || !written {
		return err
	}
	if existed {
		log.FromContext(ctx).Info("rebuilt the ConfigMap from the spec: it had no readable record of its config")
	}
	r.event(s, s.configMap, corev1.EventTypeNormal, "ConfigMapCreated", "Create",
		fmt.Sprintf("wrote ConfigMap %s from the spec", s.configMap.Name))
	return nil
}

// reconcileRoleLabels keeps the role label of the pod (and of its workload) equal to
// the role the server reports. Only the live objects are patched, never a template,
// so a failover never rolls a pod.
func (r *Reconciler) reconcileRoleLabels(ctx context.Context, s *scope) error {
	if s.server == nil || (s.role != v1alpha1.RolePrimary && s.role != v1alpha1.RoleReplica) {
		return nil
	}
	objs := []client.Object{s.pod}
	if s.statefulSet != nil {
		objs = append(objs, s.statefulSet)
	}
	if s.deployment != nil {
		objs = append(objs, s.deployment)
	}
	for _, obj := range objs {
		if obj.GetLabels()[v1alpha1.LabelRole] == string(s.role) {
			continue
		}
		patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, v1alpha1.LabelRole, s.role))
		if err := r.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), fieldOwner); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("label %s %s with role %s: %w", kindOf(obj), obj.GetName(), s.role, err)
		}
	}
	return nil
}

// mountRefreshEvery is how often the pod is nudged again while the wait lasts: the
// kubelet's cache of the Secret may have lagged behind the first nudge.
const mountRefreshEvery = 15 * time.Second

// reconcileMountRefresh shortens the wait for a new certificate. The tls-controller
// reloads a member once its mounted files show the new certificate, reporting
// TLSApplied=False CertificatePending meanwhile; the kubelet refreshes mounted Secrets
// only at its periodic sync (up to about a minute), but at once when the pod is updated.
// So while that condition holds, the pod carries an annotation naming the wait, renewed
// every mountRefreshEvery.
func (r *Reconciler) reconcileMountRefresh(ctx context.Context, s *scope) error {
	c := conditions.Get(s.node.Status.Conditions, v1alpha1.ConditionTLSApplied)
	if s.pod == nil || !serverRunning(s.pod) || c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonCertificatePending {
		return nil
	}
	since := c.LastTransitionTime.Time
	token := fmt.Sprintf("%s+%d", since.UTC().Format(time.RFC3339), int64(r.now().Sub(since)/mountRefreshEvery))
	if s.pod.Annotations[v1alpha1.AnnotationRefreshMounts] == token {
		return nil
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationRefreshMounts, token))
	if err := r.Patch(ctx, s.pod, client.RawPatch(types.MergePatchType, patch), fieldOwner); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("annotate pod %s to refresh its mounted Secrets: %w", s.pod.Name, err)
	}
	s.log.V(1).Info("asked the kubelet to refresh the pod's mounted Secrets", "pod", s.pod.Name, "waitingSince", since)
	return nil
}

// reportTransitions emits events for pod states a user must hear about once.
func (r *Reconciler) reportTransitions(s *scope, prev, next ownedStatus) {
	was := reasonOf(prev.Conditions, v1alpha1.ConditionPodReady)
	now := conditions.Get(next.Conditions, v1alpha1.ConditionPodReady)
	if now == nil || now.Reason == was {
		return
	}
	switch now.Reason {
	case v1alpha1.ReasonPodTerminated, v1alpha1.ReasonPodMissing, v1alpha1.ReasonCrashLoop,
		v1alpha1.ReasonPodUnschedulable, v1alpha1.ReasonImagePullBackOff, v1alpha1.ReasonPriorityClassNotFound,
		v1alpha1.ReasonFailedCreate, v1alpha1.ReasonReplyTooLarge, v1alpha1.ReasonUnsupportedServer:
		var related runtime.Object
		if s.pod != nil {
			related = s.pod
		}
		r.event(s, related, corev1.EventTypeWarning, now.Reason, "Observe", now.Message)
	}
}

// reasonOf returns the reason of a condition in a list, or "".
func reasonOf(list []metav1.Condition, typ string) string {
	if c := conditions.Get(list, typ); c != nil {
		return c.Reason
	}
	return ""
}

// event records an event about the node (related is the object acted on, or nil) and
// logs it: every action of the controller leaves both.
func (r *Reconciler) event(s *scope, related runtime.Object, eventType, reason, action, note string) {
	s.log.Info(note, "reason", reason, "type", eventType)
	if r.Recorder == nil {
		return
	}
	r.Recorder.Eventf(s.node, related, eventType, reason, action, "%s", note)
}

// now is the reconciler's clock.
func (r *Reconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock()
	}
	return time.Now()
}
