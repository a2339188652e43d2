// Package acl is the acl-controller: for each ValkeyCluster it keeps the Secret of the
// operator's own users' passwords ({cluster}-system-users), renders the aclfile of the
// system users and spec.users into {cluster}-acl, applies it live to every member,
// rotates the system passwords on request, and reports ACLReady on the cluster and
// ACLApplied on each member.
package acl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/guard"
	"github.com/valkey-operator/valkey-operator/internal/membership"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/internal/watches"
)

// A pass during a rotation reads the cluster from the API server (readRotation).
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters/status,verbs=patch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes,verbs=list;watch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=operator
// Leader election records its events with the core API, in the operator's namespace.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=operator

// Defaults of the Reconciler's settings.
const (
	// DefaultResync is how often a cluster whose members all run the current revision
	// is checked again (ACL USERS and ACL LIST per member, no API write): a user changed
	// on a server by a client with +acl|setuser is put back within this period.
	DefaultResync = time.Minute
	// retryPending is the requeue while a member does not run the current revision.
	retryPending = 10 * time.Second
	// nameConflictRetry: a Secret of someone else's that holds a name of the cluster's is
	// looked at again this often (its deletion is seen by the Secret watch too).
	nameConflictRetry = 10 * time.Second
)

// Reconciler reconciles the ACL of ValkeyClusters.
type Reconciler struct {
	Client client.Client
	// Namespaces are the namespaces watched (all when empty).
	Namespaces []string
	// APIReader reads users' password Secrets (and Secrets of the cluster's names the
	// label-selected cache does not hold) from the API server; nil: Client.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	Pool      *valkeyconn.Pool
	// PropagationDelay is how long mounted Secrets may lag (default
	// operator.DefaultSecretPropagationDelay).
	PropagationDelay time.Duration
	// Resync is the requeue of a settled cluster (default DefaultResync).
	Resync time.Duration
	// Addr returns the client address of a member (default: its pod IP, port 6379).
	Addr func(*v1alpha1.ValkeyNode) string
	// ExporterURL returns the reload URL of a member's exporter.
	ExporterURL func(*v1alpha1.ValkeyNode) string
	// HTTPClient calls the exporters (default http.DefaultClient).
	HTTPClient *http.Client
	// Clock returns the time (default time.Now).
	Clock func() time.Time

	verdicts verdictCache
	// applied is what each member listed for the file's users when the controller last
	// applied it (see drift).
	appliedMu sync.Mutex
	applied   map[string]appliedLines
}

// secrets reads users' Secrets: from the API server (they are not cached).
func (r *Reconciler) secrets() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// ownSecrets reads the cluster's Secrets: from the cache, or from the API server when the
// cache has none of that name (a Secret the operator did not make is not cached).
func (r *Reconciler) ownSecrets() client.Reader {
	return operator.CacheFirst{Primary: r.Client, Secondary: r.APIReader}
}

func (r *Reconciler) addr(vn *v1alpha1.ValkeyNode) string {
	if r.Addr != nil {
		return r.Addr(vn)
	}
	return valkeyconn.Addr(vn.Status.PodIP)
}

func (r *Reconciler) exporterURL(vn *v1alpha1.ValkeyNode) string {
	if r.ExporterURL != nil {
		return r.ExporterURL(vn)
	}
	return defaultExporterURL(vn)
}

func (r *Reconciler) httpClient() *http.Client {
	if r.HTTPClient != nil {
		return r.HTTPClient
	}
	return http.DefaultClient
}

func (r *Reconciler) delay() time.Duration {
	if r.PropagationDelay > 0 {
		return r.PropagationDelay
	}
	return operator.DefaultSecretPropagationDelay
}

func (r *Reconciler) resync() time.Duration {
	if r.Resync > 0 {
		return r.Resync
	}
	return DefaultResync
}

// SetupWithManager registers the controller, its field indexes and watches.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr manager.Manager, maxConcurrent int) error {
	if err := passwordSecrets.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	// Users' Secrets are watched by name only, in a cache of their own.
	secrets, err := operator.SecretNames(mgr, r.Namespaces, handler.TypedEnqueueRequestsFromMapFunc(
		func(ctx context.Context, o *metav1.PartialObjectMetadata) []reconcile.Request {
			return r.clustersOfSecret(ctx, o)
		}))
	if err != nil {
		return err
	}
	return builder.ControllerManagedBy(mgr).
		Named("acl").
		For(&v1alpha1.ValkeyCluster{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, restoredChanged(), watches.PausedChanged()))).
		Owns(&corev1.Secret{}, builder.OnlyMetadata).
		WatchesRawSource(secrets).
		Watches(&v1alpha1.ValkeyNode{}, handler.EnqueueRequestsFromMapFunc(membership.ClusterOf),
			builder.WithPredicates(nodeChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(r)
}

// Reconcile is one pass over a cluster: guard, system users, render, publish, apply,
// rotate, status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var vc v1alpha1.ValkeyCluster
	if err := r.Client.Get(ctx, req.NamespacedName, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.releaseSystemUsers(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, err
	}
	if !vc.DeletionTimestamp.IsZero() {
		// Owner references delete the Secrets; the system users one waits for this.
		return reconcile.Result{}, r.releaseSystemUsers(ctx, req.NamespacedName)
	}
	if g := guard.Check(&vc); !g.Valid() {
		log.FromContext(ctx).Info("not acting on an invalid spec", "errors", len(g.Errs))
		return reconcile.Result{}, r.writeClusterStatus(ctx, &vc, vc.Status.ACL, g.Condition, keepOrUnknown(&vc, v1alpha1.ConditionACLReady, "the spec is invalid"))
	}
	res, err := r.pass(ctx, &vc)
	if nc := (*NameConflictError)(nil); errors.As(err, &nc) {
		cond := conditions.New(v1alpha1.ConditionACLReady, false, v1alpha1.ReasonNameConflict, nc.Error(), vc.Generation)
		if cur := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionACLReady); cur == nil || cur.Reason != v1alpha1.ReasonNameConflict {
			r.Recorder.Eventf(&vc, nil, corev1.EventTypeWarning, v1alpha1.ReasonNameConflict, "Publish", "%s", nc.Error())
		}
		return reconcile.Result{RequeueAfter: nameConflictRetry}, r.writeClusterStatus(ctx, &vc, vc.Status.ACL, cond)
	}
	if err != nil {
		if serr := r.writeClusterStatus(ctx, &vc, vc.Status.ACL, keepOrUnknown(&vc, v1alpha1.ConditionACLReady, "the controller could not read its inputs")); serr != nil {
			err = errors.Join(err, serr)
		}
		return reconcile.Result{}, err
	}
	return res, nil
}

// keepOrUnknown returns the cluster's current condition typ, or Unknown when there is
// none yet.
func keepOrUnknown(vc *v1alpha1.ValkeyCluster, typ, why string) metav1.Condition {
	if cur := conditions.Get(vc.Status.Conditions, typ); cur != nil {
		return *cur
	}
	return conditions.Unknown(typ, v1alpha1.ReasonUnknown, why, vc.Generation)
}

// scope is what one pass over a cluster read, and what it learnt on the way.
type scope struct {
	vc *v1alpha1.ValkeyCluster
	// system is the system users' Secret; aclSecret the published aclfile (nil before
	// the first).
	system, aclSecret *corev1.Secret
	// rotation is the state of a rotation of the system passwords, token the value of
	// the cluster's rotation annotation it was read with.
	rotation Rotation
	token    string
	// nodes are the cluster's members, withIP those with a pod IP, conns the servers
	// reached among them.
	nodes, withIP []v1alpha1.ValkeyNode
	conns         []*memberConn

	// Learnt by the pass: the rendered file, what rendering found, each member's result.
	file    File
	outcome renderOutcome
	results map[string]MemberResult
	// hold is what the pass holds because the cluster is paused: then file is the
	// published file, not the rendered one.
	hold hold
}

// allApplied reports whether every member reached runs the file.
func (s *scope) allApplied() bool {
	for _, res := range s.results {
		if !res.Applied {
			return false
		}
	}
	return true
}

// pending reports whether a member does not run the file for a reason that passes
// with a little time (a server catching up, a lost connection). A reply too large to
// read does not pass that way: its member is looked at again at the resync period.
func (s *scope) pending() bool {
	for _, res := range s.results {
		if !res.Applied && res.TooLarge == nil {
			return true
		}
	}
	return false
}

// newScope reads what a pass needs: the system users (created if missing), the
// published aclfile, the members, and a connection to each member that has a pod IP.
func (r *Reconciler) newScope(ctx context.Context, vc *v1alpha1.ValkeyCluster) (*scope, error) {
	s := &scope{vc: vc}
	system, created, err := r.ensureSystemUsers(ctx, vc)
	if err != nil {
		return nil, err
	}
	if err := r.readRotation(ctx, s, system, created); err != nil {
		return nil, err
	}
	if s.aclSecret, err = r.readACLSecret(ctx, vc); err != nil {
		return nil, err
	}
	if s.nodes, err = membership.Of(ctx, r.Client, vc); err != nil {
		return nil, err
	}
	s.withIP, _ = members(s.nodes)
	s.conns = r.reach(ctx, s.withIP, r.credentials(ctx, vc, s.system))
	return s, nil
}

// readRotation sets the system users Secret and the rotation state of the scope. While a
// rotation may run, both are read from the API server, not the cache: a step writes the
// Secret, then the status, and a pass must not read one older than the other (it would
// render an aclfile without passwords clients use). The state is then settled with the
// Secret's keys. A Secret just created answers a rotation requested before: its
// passwords are new. The legacy annotations are removed once the status holds the state.
func (r *Reconciler) readRotation(ctx context.Context, s *scope, system *corev1.Secret, created bool) error {
	vc := s.vc
	s.system, s.token = system, vc.Annotations[v1alpha1.AnnotationRotateSystemPasswords]
	rot := rotationOf(vc, system)
	if created && rot == (Rotation{}) && s.token != "" {
		s.rotation = Rotation{Completed: s.token, Finished: r.now()}
		return nil
	}
	if rot.mayRun(s.token, system.Data) && r.APIReader != nil {
		var fresh v1alpha1.ValkeyCluster
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(vc), &fresh); err != nil {
			return fmt.Errorf("read cluster %s: %w", vc.Name, err)
		}
		var sec corev1.Secret
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(system), &sec); err != nil {
			return fmt.Errorf("read Secret %s: %w", system.Name, err)
		}
		// The status write of this pass compares with what the API server holds.
		vc.Status.ACL = fresh.Status.ACL
		s.system, s.token = &sec, fresh.Annotations[v1alpha1.AnnotationRotateSystemPasswords]
		rot = rotationOf(&fresh, &sec)
	}
	s.rotation = settle(rot, s.system.Data, s.token, r.now())
	if vc.Status.ACL != nil && vc.Status.ACL.Rotation != nil && hasLegacyAnnotations(s.system) {
		return r.dropLegacyAnnotations(ctx, s)
	}
	return nil
}

// dropLegacyAnnotations removes the legacy rotation annotations from the system users
// Secret.
func (r *Reconciler) dropLegacyAnnotations(ctx context.Context, s *scope) error {
	sec := s.system.DeepCopy()
	patch := client.MergeFromWithOptions(s.system.DeepCopy(), client.MergeFromWithOptimisticLock{})
	for _, k := range legacyKeys() {
		delete(sec.Annotations, k)
	}
	if err := r.Client.Patch(ctx, sec, patch); err != nil {
		return fmt.Errorf("remove the rotation annotations of Secret %s: %w", sec.Name, err)
	}
	log.FromContext(ctx).Info("removed the rotation annotations of an earlier version; the cluster's status holds the rotation", "secret", sec.Name)
	s.system = sec
	return nil
}

// pass does the work of a valid cluster: render, publish, apply, prune, rotate, report.
func (r *Reconciler) pass(ctx context.Context, vc *v1alpha1.ValkeyCluster) (reconcile.Result, error) {
	s, err := r.newScope(ctx, vc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.render(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	s.hold = decideHold(vc, s.aclSecret, s.file, s.rotation)
	if s.hold.file {
		// The members keep the published file (see pause.go).
		s.file = publishedFile(s.aclSecret)
		s.results = r.applyAll(ctx, s.conns, s.file, decodeRemoved(s.aclSecret).names())
		r.reportDrift(ctx, vc, s.results)
	} else {
		published, removed, err := r.publish(ctx, vc, s.aclSecret, s.file)
		if err != nil {
			return reconcile.Result{}, err
		}
		s.results = r.applyAll(ctx, s.conns, s.file, removed.names())
		r.reportDrift(ctx, vc, s.results)
		if s.allApplied() {
			if err := r.pruneRemoved(ctx, vc, published, s.file, removed); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	var rotRes rotationResult
	if !s.hold.rotation {
		if rotRes, err = r.rotate(ctx, s); err != nil {
			return reconcile.Result{}, err
		}
	}
	s.outcome.Rotation = rotRes.describe
	s.outcome.TooLarge = tooLargeReplies(s.results)
	if err := r.report(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	return r.requeue(s.pending(), rotRes), nil
}

// reportDrift says, once per member and pass that found it, which users had been
// changed on a server and were put back (names only: the rules may hold hashes).
func (r *Reconciler) reportDrift(ctx context.Context, vc *v1alpha1.ValkeyCluster, results map[string]MemberResult) {
	for node, res := range results {
		if len(res.Corrected) == 0 {
			continue
		}
		log.FromContext(ctx).Info("users changed on a member were put back", "node", node, "users", res.Corrected)
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, "ACLDriftCorrected", "Apply",
			"member %s: users %s had been changed on the server (a client with ACL rights?) and were put back as the aclfile says",
			node, strings.Join(res.Corrected, ", "))
	}
}

// requeue picks the next pass: soon while a member is behind, when the rotation needs
// it, or after the resync period.
func (r *Reconciler) requeue(pending bool, rot rotationResult) reconcile.Result {
	after := r.resync()
	if pending {
		after = retryPending
	}
	if rot.after > 0 && rot.after < after {
		after = rot.after
	}
	return reconcile.Result{RequeueAfter: after}
}

// credentials returns the _operator credentials to try on members: the current
// password, then those of a running rotation. It returns nil when they are not
// readable (for example the TLS Secret is missing): members are then not reached.
func (r *Reconciler) credentials(ctx context.Context, vc *v1alpha1.ValkeyCluster, system *corev1.Secret) []valkeyconn.Credentials {
	base, err := valkeyconn.ForCluster(ctx, r.Client, vc)
	if err != nil {
		log.FromContext(ctx).Info("cannot build the operator's credentials; members are not reached this pass", "reason", err.Error())
		return nil
	}
	var out []valkeyconn.Credentials
	for _, pw := range operatorPasswords(system.Data) {
		out = append(out, base.WithPassword(pw))
	}
	return out
}

// render builds the aclfile: system users for the members' version, and each spec user
// with its passwords, checked; a user whose passwords are missing or whose rules are
// refused keeps its previous line (or is left out when it has none).
//
// It sets s.file and s.outcome.
func (r *Reconciler) render(ctx context.Context, s *scope) error {
	previous := map[string]User{}
	if s.aclSecret != nil {
		for _, u := range ParseFile(string(s.aclSecret.Data[v1alpha1.ACLFileKey])) {
			previous[u.Name] = u
		}
	}
	out := &s.outcome
	*out = renderOutcome{Refused: Refusals{}, Kept: map[string]bool{}}
	accepted := acceptedPasswords(s.system.Data, s.rotation.Phase)
	sys := append(SystemUsers(accepted, minVersion(s.conns)), backupUsers(accepted, v1alpha1.RestorePending(s.vc))...)
	var users []User
	for _, spec := range s.vc.Spec.Users {
		pws, problem, err := r.userPasswords(ctx, s.vc.Namespace, spec)
		if err != nil {
			return err
		}
		if problem != nil {
			prev, ok := previous[spec.Name]
			if ok {
				users = append(users, prev)
			}
			problem.Kept = ok
			out.Missing = append(out.Missing, *problem)
			continue
		}
		users = append(users, RenderSpecUser(spec, pws))
	}
	refused, err := r.validate(ctx, s.conns, append(append([]User(nil), sys...), users...))
	if err != nil {
		return err
	}
	for _, u := range sys {
		if msg := refused[u.Name]; msg != "" {
			return fmt.Errorf("the servers refuse the system user %s: %s", u.Name, msg)
		}
	}
	users, err = r.fallBack(ctx, s.conns, users, refused, previous, out)
	if err != nil {
		return err
	}
	s.file = NewFile(sys, withheldUntilRestored(s.vc, users))
	out.Revision, out.Users = s.file.Revision, len(s.file.Users)
	return nil
}

// fallBack replaces each refused user by its previous line when that one is accepted,
// and leaves it out otherwise.
func (r *Reconciler) fallBack(ctx context.Context, conns []*memberConn, users []User, refused Refusals, previous map[string]User, out *renderOutcome) ([]User, error) {
	kept := make([]User, 0, len(users))
	for _, u := range users {
		msg := refused[u.Name]
		if msg == "" {
			kept = append(kept, u)
			continue
		}
		out.Refused[u.Name] = msg
		prev, ok := previous[u.Name]
		if !ok || prev.Line() == u.Line() {
			continue
		}
		again, err := r.validate(ctx, conns, []User{prev})
		if err != nil {
			return nil, err
		}
		if again[prev.Name] == "" {
			kept = append(kept, prev)
			out.Kept[u.Name] = true
		}
	}
	return kept, nil
}

// validate checks users on every reachable member (the server's verdict), or locally
// when none is reachable.
func (r *Reconciler) validate(ctx context.Context, conns []*memberConn, users []User) (Refusals, error) {
	out := Refusals{}
	live := false
	for _, mc := range conns {
		if mc.client == nil {
			continue
		}
		ref, err := r.checkOn(ctx, mc, users)
		if err != nil {
			log.FromContext(ctx).Info("cannot check users on a member", "node", mc.node.Name, "reason", err.Error())
			continue
		}
		live = true
		for name, msg := range ref {
			if _, seen := out[name]; !seen {
				out[name] = msg
			}
		}
	}
	if !live {
		return CheckLocal(users), nil
	}
	return out, nil
}

// publish writes the aclfile Secret and returns it with the users to delete from
// members.
func (r *Reconciler) publish(ctx context.Context, vc *v1alpha1.ValkeyCluster, aclSecret *corev1.Secret, f File) (*corev1.Secret, removedUsers, error) {
	var previous []User
	if aclSecret != nil {
		previous = ParseFile(string(aclSecret.Data[v1alpha1.ACLFileKey]))
	}
	removed := nextRemoved(decodeRemoved(aclSecret), previous, f, r.now(), false, r.delay())
	changed := aclSecret == nil || aclSecret.Annotations[annotationRevision] != f.Revision
	published, err := r.publishACL(ctx, vc, aclSecret, f, removed)
	if err != nil {
		return nil, nil, err
	}
	if changed {
		log.FromContext(ctx).Info("published aclfile", "revision", f.Revision, "users", len(f.Users))
		r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, "Published", "Publish",
			"aclfile revision %s with %d users published in Secret %s", f.Revision, len(f.Users), v1alpha1.ACLSecretName(vc.Name))
	}
	return published, removed, nil
}

// pruneRemoved forgets removed users once every member runs a revision without them
// and mounted files had time to follow.
func (r *Reconciler) pruneRemoved(ctx context.Context, vc *v1alpha1.ValkeyCluster, published *corev1.Secret, f File, removed removedUsers) error {
	pruned := nextRemoved(removed, nil, f, r.now(), true, r.delay())
	if len(pruned) == len(removed) {
		return nil
	}
	_, err := r.publishACL(ctx, vc, published, f, pruned)
	return err
}

// rotationResult is what the rotation step tells the pass.
type rotationResult struct {
	describe string
	// after, when set, is when the rotation needs the next pass.
	after time.Duration
}

// rotate advances a requested rotation and saves its state on the system users Secret.
func (r *Reconciler) rotate(ctx context.Context, s *scope) (rotationResult, error) {
	now, delay := r.now(), r.delay()
	rot := s.rotation
	in := RotationInput{Requested: s.token, AllApplied: s.allApplied(), Now: now, Delay: delay}
	if rot.PropagationDue(now, delay) {
		in.ClientsMoved = r.moveClients(ctx, s)
	}
	data := copyData(s.system.Data)
	next, changed, err := Step(rot, data, in, GeneratePassword)
	if err != nil {
		return rotationResult{}, err
	}
	if changed {
		if err := r.saveRotation(ctx, s, data, next); err != nil {
			return rotationResult{}, err
		}
		s.rotation = next // reported in status.acl.rotation at the end of the pass
	}
	res := rotationResult{describe: next.Describe(now, delay)}
	switch {
	case changed && next.Phase != PhaseIdle:
		res.after = time.Millisecond // the next phase renders a new aclfile
	case next.Phase == PhasePropagating && !next.PropagationDue(now, delay):
		res.after = next.Since.Add(delay).Sub(now)
	case next.Phase != PhaseIdle:
		res.after = retryPending
	}
	return res, nil
}

// moveClients switches the clients that do not read the Secret themselves: the primary
// auth of every member, and the exporters (best effort). It reports whether every
// member took the new primary auth.
func (r *Reconciler) moveClients(ctx context.Context, s *scope) bool {
	vc := s.vc
	logger := log.FromContext(ctx)
	failed := r.setPrimaryAuth(ctx, s.conns, string(s.system.Data[v1alpha1.UserReplication]))
	for node, why := range failed {
		logger.Info("cannot set the primary auth on a member; retrying", "node", node, "reason", why)
	}
	if vc.Spec.Exporter.IsEnabled() {
		for node, why := range r.reloadExporters(ctx, s.withIP) {
			logger.Info("cannot reload the exporter's password file; it keeps the old password until it restarts", "node", node, "reason", why)
			r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, "ExporterReloadFailed", "Rotate",
				"the exporter of member %s did not reload its password file: %s", node, why)
		}
	}
	return len(failed) == 0
}

// saveRotation writes the rotation's data to the system users Secret (its next state
// goes to the status after it).
func (r *Reconciler) saveRotation(ctx context.Context, s *scope, data map[string][]byte, next Rotation) error {
	vc, prev := s.vc, s.rotation
	secret := s.system.DeepCopy()
	secret.Data = data
	for _, k := range legacyKeys() {
		delete(secret.Annotations, k)
	}
	if err := r.Client.Update(ctx, secret); err != nil {
		return fmt.Errorf("save the rotation's passwords in Secret %s: %w", secret.Name, err)
	}
	s.system = secret
	log.FromContext(ctx).Info("rotation of the system passwords advanced", "from", string(prev.Phase), "to", string(next.Phase), "request", next.Token)
	switch {
	case prev.Phase == PhaseIdle && next.Phase != PhaseIdle:
		r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, "RotationStarted", "Rotate", "rotation of the system users' passwords started")
	case prev.Phase != PhaseIdle && next.Phase == PhaseIdle:
		r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, "RotationCompleted", "Rotate", "rotation of the system users' passwords completed")
	}
	return nil
}

func copyData(in map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(in))
	for k, v := range in {
		out[k] = append([]byte(nil), v...)
	}
	return out
}
