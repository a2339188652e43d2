// Package publish is the frame of the controllers that render something from a
// ValkeyCluster's spec, publish it in a Secret of the operator's and apply it live to the
// cluster's members: the acl-controller (the aclfile) and the tls-controller (the
// accepted certificate). A pass over a cluster is the same for both, and lives here:
//
//   - the cluster is gone or going: Gone (what the controller holds for it is let go);
//   - the controller has nothing to do for the cluster (Wants): what it wrote on the
//     cluster and its members is given up;
//   - the spec is invalid (internal/guard): InvalidSpec, and the controller's own
//     conditions stay as they are (Unknown when never set); nothing else happens;
//   - otherwise the phases run in order, each a method of the controller's Steps:
//     read, render, hold (only on a paused cluster), publish (not when held), apply,
//     settle, report. The first error stops the pass; a NameConflictError is reported
//     as the controller's readiness condition False NameConflict and looked at again
//     later, any other error keeps the conditions (Unknown when never set) and is
//     returned, prefixed with the phase's name.
//
// The next pass comes after the shortest wait a phase asked for (Pass.Requeue), at the
// latest after the resync period. Pause handling is the frame's: a controller only says,
// when the cluster is paused, whether its rendered result waits (Steps.Hold); the
// frame then skips publish, and apply keeps the members on what was published.
package publish

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/guard"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
)

// nameConflictRetry: a Secret of someone else's that holds a name of the cluster's is
// looked at again this often (its deletion is seen by the Secret watch too).
const nameConflictRetry = 10 * time.Second

// Base is what every controller in the frame is configured with.
type Base struct {
	Client client.Client
	// Namespaces are the namespaces watched (all when empty).
	Namespaces []string
	// APIReader reads users' Secrets (and Secrets of the cluster's names the
	// label-selected cache does not hold) from the API server; nil: Client.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	Pool      *valkeyconn.Pool
	// PropagationDelay is how long mounted Secrets may lag (default
	// operator.DefaultSecretPropagationDelay).
	PropagationDelay time.Duration
	// Resync is the requeue of a settled cluster (default: the controller's).
	Resync time.Duration
	// Addr returns the client address of a member (default: its pod IP, port 6379).
	Addr func(*v1alpha1.ValkeyNode) string
	// Clock returns the time (default time.Now).
	Clock func() time.Time
}

// Now is the time on the controller's clock.
func (b *Base) Now() time.Time {
	if b.Clock != nil {
		return b.Clock()
	}
	return time.Now()
}

// Delay is how long mounted Secrets may lag.
func (b *Base) Delay() time.Duration {
	return orDefault(b.PropagationDelay, operator.DefaultSecretPropagationDelay)
}

// MemberAddr is the client address of a member's server.
func (b *Base) MemberAddr(vn *v1alpha1.ValkeyNode) string {
	if b.Addr != nil {
		return b.Addr(vn)
	}
	return valkeyconn.Addr(vn.Status.PodIP)
}

// Secrets reads Secrets by name: the operator's own from the cache first, and what the
// cache does not hold (users' Secrets, a stranger's of one of the cluster's names) from
// the API server.
func (b *Base) Secrets() client.Reader {
	if b.APIReader == nil {
		return b.Client
	}
	return operator.CacheFirst{Primary: b.Client, Secondary: b.APIReader}
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Pass is what the frame knows of one pass over a cluster; the controller's scope
// holds it.
type Pass struct {
	Cluster *v1alpha1.ValkeyCluster
	// Now is the time of the pass, on the controller's clock.
	Now time.Time
	// Paused: the cluster-controller reports the cluster Paused.
	Paused bool
	// Held: the cluster is paused and the rendered result waits for the resume (the
	// controller's Hold said so): nothing is published, members keep what was.
	Held bool
	// after is the shortest wait asked for (0: none).
	after time.Duration
}

// Requeue asks for the next pass within d (the shortest positive wait wins).
func (p *Pass) Requeue(d time.Duration) {
	if d > 0 && (p.after == 0 || d < p.after) {
		p.after = d
	}
}

// Steps are what a controller brings to the frame, one method per phase, in the order
// they run. S is the controller's scope: what its pass read and learnt.
type Steps[S any] interface {
	// Read reads what the pass works on: the published Secret, the members, the
	// controller's own state. The scope it returns holds p.
	Read(ctx context.Context, p *Pass) (S, error)
	// Render builds what the spec asks for and checks it.
	Render(ctx context.Context, s S) error
	// Hold, called only on a paused cluster, reports whether the rendered result waits
	// for the resume.
	Hold(ctx context.Context, s S) bool
	// Publish writes the rendered result into the operator's Secret (not when held).
	Publish(ctx context.Context, s S) error
	// Apply brings every member to what is published.
	Apply(ctx context.Context, s S) error
	// Settle does what follows from the members' results (forget what every member
	// dropped, record a complete rollout, advance a rotation).
	Settle(ctx context.Context, s S) error
	// Report writes the controller's conditions and status field on the cluster and
	// its members.
	Report(ctx context.Context, s S) error
	// Field is the controller's status field as a pass that stops now leaves it.
	Field(s S) any
}

// Frame runs a controller's Steps over ValkeyClusters: it is the controller's
// reconcile.Reconciler.
type Frame[S any] struct {
	*Base
	Steps   Steps[S]
	Status  Status
	Watches Watches
	// DefaultResync is the resync period when Base.Resync is zero.
	DefaultResync time.Duration
	// Wants reports whether the controller has anything to do for a cluster (nil:
	// every cluster). What it wrote on one it does not want is given up.
	Wants func(*v1alpha1.ValkeyCluster) bool
	// Gone lets go of what the controller holds for a cluster that is deleted, being
	// deleted, or not wanted (nil: nothing; owner references delete the rest).
	Gone func(context.Context, types.NamespacedName) error
}

// Reconcile is one pass over a cluster.
func (f *Frame[S]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var vc v1alpha1.ValkeyCluster
	if err := f.Client.Get(ctx, req.NamespacedName, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, f.gone(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, err
	}
	if !vc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, f.gone(ctx, req.NamespacedName)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("cluster", vc.Name, "namespace", vc.Namespace))
	if f.Wants != nil && !f.Wants(&vc) {
		if err := f.gone(ctx, req.NamespacedName); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, f.Status.Forget(ctx, &vc)
	}
	if g := guard.Check(&vc); !g.Valid() {
		log.FromContext(ctx).Info("not acting on an invalid spec", "errors", len(g.Errs))
		return reconcile.Result{}, f.Status.Keep(ctx, &vc, f.Status.Current(&vc), "the spec is invalid (see InvalidSpec)", g.Condition)
	}
	p := &Pass{Cluster: &vc, Now: f.Now(), Paused: v1alpha1.Paused(&vc)}
	s, err := f.Steps.Read(ctx, p)
	if err != nil {
		return f.failed(ctx, &vc, f.Status.Current(&vc), fmt.Errorf("%s: %w", PhaseRead, err))
	}
	if err := run(ctx, f.Steps, p, s); err != nil {
		return f.failed(ctx, &vc, f.Steps.Field(s), err)
	}
	p.Requeue(orDefault(f.Resync, f.DefaultResync))
	return reconcile.Result{RequeueAfter: p.after}, nil
}

func (f *Frame[S]) gone(ctx context.Context, key types.NamespacedName) error {
	if f.Gone == nil {
		return nil
	}
	return f.Gone(ctx, key)
}

// failed reports a pass that stopped on err, with the status field as field.
func (f *Frame[S]) failed(ctx context.Context, vc *v1alpha1.ValkeyCluster, field any, err error) (reconcile.Result, error) {
	if nc := (*NameConflictError)(nil); errors.As(err, &nc) {
		ready := f.Status.Conditions[0]
		if cur := conditions.Get(vc.Status.Conditions, ready); cur == nil || cur.Reason != v1alpha1.ReasonNameConflict {
			f.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, v1alpha1.ReasonNameConflict, "Publish", "%s", nc.Error())
		}
		cond := conditions.New(ready, false, v1alpha1.ReasonNameConflict, nc.Error(), vc.Generation)
		return reconcile.Result{RequeueAfter: nameConflictRetry}, f.Status.Keep(ctx, vc, field, nc.Error(), cond)
	}
	why := "the controller could not complete its pass: " + err.Error()
	return reconcile.Result{}, errors.Join(err, f.Status.Keep(ctx, vc, field, why))
}

// The names of the phases, as errors name them.
const (
	PhaseRead    = "read"
	PhaseRender  = "render"
	PhaseHold    = "hold"
	PhasePublish = "publish"
	PhaseApply   = "apply"
	PhaseSettle  = "settle"
	PhaseReport  = "report"
)

// phase is one step of a pass after read.
type phase[S any] struct {
	name string
	run  func(context.Context, S) error
	// skip reports whether the pass goes without this phase.
	skip func(*Pass) bool
}

func never(*Pass) bool       { return false }
func notPaused(p *Pass) bool { return !p.Paused }
func held(p *Pass) bool      { return p.Held }

// phases are the steps of a pass after read, in order.
func phases[S any](st Steps[S], p *Pass) []phase[S] {
	hold := func(ctx context.Context, s S) error {
		p.Held = st.Hold(ctx, s)
		return nil
	}
	return []phase[S]{
		{PhaseRender, st.Render, never},
		{PhaseHold, hold, notPaused},
		{PhasePublish, st.Publish, held},
		{PhaseApply, st.Apply, never},
		{PhaseSettle, st.Settle, never},
		{PhaseReport, st.Report, never},
	}
}

// run runs the phases after read over the scope s of pass p, in order; the first error
// stops it, prefixed with its phase's name.
func run[S any](ctx context.Context, st Steps[S], p *Pass, s S) error {
	for _, ph := range phases(st, p) {
		if ph.skip(p) {
			continue
		}
		if err := ph.run(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", ph.name, err)
		}
	}
	return nil
}

// NameConflictError says that an object the controller would create for the cluster (a
// Secret, unless Kind says otherwise) exists and is not the cluster's. It is never taken
// over (a Secret written by someone else would give them what the operator puts in it):
// the cluster reports the controller's readiness condition False, reason NameConflict,
// until the object is renamed or deleted.
type NameConflictError struct {
	Name string
	// Kind of the object ("": Secret).
	Kind string
}

func (e *NameConflictError) Error() string {
	kind := e.Kind
	if kind == "" {
		kind = "Secret"
	}
	return fmt.Sprintf("%s %s exists and is not this cluster's; the operator does not take it over: delete or rename it", kind, e.Name)
}
