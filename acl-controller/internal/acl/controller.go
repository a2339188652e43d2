// Package acl is the acl-controller: for each ValkeyCluster it keeps the Secret of the
// operator's own users' passwords ({cluster}-system-users), renders the aclfile of the
// system users and spec.users into {cluster}-acl, applies it live to every member,
// rotates the system passwords on request, and reports ACLReady on the cluster and
// ACLApplied on each member.
package acl

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/membership"
	"github.com/valkey-operator/valkey-operator/internal/publish"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
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
)

// Reconciler reconciles the ACL of ValkeyClusters: its steps run in the frame of
// internal/publish.
type Reconciler struct {
	publish.Base
	// ExporterURL returns the reload URL of a member's exporter.
	ExporterURL func(*v1alpha1.ValkeyNode) string
	// HTTPClient calls the exporters (default http.DefaultClient).
	HTTPClient *http.Client

	verdicts verdictCache
	// applied is what each member listed for the file's users when the controller last
	// applied it (see drift).
	appliedMu sync.Mutex
	applied   map[string]appliedLines
}

var _ publish.Steps[*scope] = (*Reconciler)(nil)

// secrets reads users' Secrets: from the API server (they are not cached).
func (r *Reconciler) secrets() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
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

// frame is the controller in the frame: its steps, status, watches and what it lets go
// of when a cluster goes.
func (r *Reconciler) frame() *publish.Frame[*scope] {
	return &publish.Frame[*scope]{
		Base:          &r.Base,
		Steps:         r,
		Status:        r.status(),
		DefaultResync: DefaultResync,
		// Owner references delete the Secrets; the system users one waits for this.
		Gone: r.releaseSystemUsers,
		Watches: publish.Watches{
			Name: "acl",
			Cluster: predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{},
				restoredChanged()),
			SecretRefs: passwordSecrets,
			Owns:       []client.Object{&corev1.Secret{}},
			Member:     versionChanged,
		},
	}
}

// SetupWithManager registers the controller, its field indexes and watches.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr manager.Manager, maxConcurrent int) error {
	return r.frame().SetupWithManager(ctx, mgr, maxConcurrent)
}

// scope is what one pass over a cluster read, and what it learnt on the way.
type scope struct {
	*publish.Pass
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
	// published is the aclfile Secret after publish, removed the users to delete from
	// members.
	published *corev1.Secret
	removed   removedUsers
	// rotated is what the rotation step told.
	rotated rotationResult
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

// Read reads what a pass needs: the system users (created if missing), the published
// aclfile, the members, and a connection to each member that has a pod IP.
func (r *Reconciler) Read(ctx context.Context, p *publish.Pass) (*scope, error) {
	vc := p.Cluster
	s := &scope{Pass: p}
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
	vc := s.Cluster
	s.system, s.token = system, vc.Annotations[v1alpha1.AnnotationRotateSystemPasswords]
	rot := rotationOf(vc, system)
	if created && rot == (Rotation{}) && s.token != "" {
		s.rotation = Rotation{Completed: s.token, Finished: r.Now()}
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
	s.rotation = settle(rot, s.system.Data, s.token, r.Now())
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

// Hold holds, on a paused cluster, a rendered file that differs from the published
// one (the members keep the published file) and a rotation (see pause.go).
func (r *Reconciler) Hold(_ context.Context, s *scope) bool {
	s.hold = decideHold(s.Cluster, s.aclSecret, s.file, s.rotation)
	if s.hold.file {
		s.file = publishedFile(s.aclSecret)
		s.removed = decodeRemoved(s.aclSecret)
	}
	return s.hold.file
}

// Publish writes the aclfile Secret and keeps it with the users to delete from members.
func (r *Reconciler) Publish(ctx context.Context, s *scope) error {
	var err error
	s.published, s.removed, err = r.publish(ctx, s.Cluster, s.aclSecret, s.file)
	return err
}

// Apply brings every member reached to the file, and says which users changed on a
// server were put back.
func (r *Reconciler) Apply(ctx context.Context, s *scope) error {
	s.results = r.applyAll(ctx, s.conns, s.file, s.removed.names())
	r.reportDrift(ctx, s.Cluster, s.results)
	return nil
}

// Settle forgets removed users once every member runs a file without them, and
// advances a requested rotation unless the cluster holds it.
func (r *Reconciler) Settle(ctx context.Context, s *scope) error {
	if !s.Held && s.allApplied() {
		if err := r.pruneRemoved(ctx, s.Cluster, s.published, s.file, s.removed); err != nil {
			return err
		}
	}
	if !s.hold.rotation {
		var err error
		if s.rotated, err = r.rotate(ctx, s); err != nil {
			return err
		}
	}
	s.outcome.Rotation = s.rotated.describe
	s.outcome.TooLarge = tooLargeReplies(s.results)
	s.Requeue(requeue(s.pending(), s.rotated))
	return nil
}

// Field is status.acl as a pass that stops leaves it: as it was.
func (r *Reconciler) Field(s *scope) any { return s.Cluster.Status.ACL }

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

// requeue is the wait the members' results and the rotation ask for: short while a
// member is behind, when the rotation needs it; 0 when neither asks (the resync
// period).
func requeue(pending bool, rot rotationResult) time.Duration {
	after := rot.after
	if pending && (after == 0 || retryPending < after) {
		after = retryPending
	}
	return after
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
func (r *Reconciler) Render(ctx context.Context, s *scope) error {
	previous := map[string]User{}
	if s.aclSecret != nil {
		for _, u := range ParseFile(string(s.aclSecret.Data[v1alpha1.ACLFileKey])) {
			previous[u.Name] = u
		}
	}
	out := &s.outcome
	*out = renderOutcome{Refused: Refusals{}, Kept: map[string]bool{}}
	accepted := acceptedPasswords(s.system.Data, s.rotation.Phase)
	sys := append(SystemUsers(accepted, minVersion(s.conns)), backupUsers(accepted, v1alpha1.RestorePending(s.Cluster))...)
	var users []User
	for _, spec := range s.Cluster.Spec.Users {
		pws, problem, err := r.userPasswords(ctx, s.Cluster.Namespace, spec)
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
	s.file = NewFile(sys, withheldUntilRestored(s.Cluster, users))
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
	removed := nextRemoved(decodeRemoved(aclSecret), previous, f, r.Now(), false, r.Delay())
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
	pruned := nextRemoved(removed, nil, f, r.Now(), true, r.Delay())
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
	now, delay := r.Now(), r.Delay()
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
	vc := s.Cluster
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
	vc, prev := s.Cluster, s.rotation
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
