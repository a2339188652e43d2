// Package certs is the tls-controller: for each ValkeyCluster with spec.tls it checks
// the user's certificate Secret, copies it once it passes into the operator's own Secret
// {cluster}-tls-accepted (the one the pods mount), reloads the certificate live on every member
// and confirms with a new handshake that the member serves it, and warns before the
// certificate expires. It reports TLSReady, CertificateExpiring and status.tls on the
// cluster and TLSApplied on each member.
//
// A refused Secret never reaches a running member: the copy keeps the last accepted
// certificate, and TLSReady=False says why the new one was refused.
package certs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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
	"github.com/valkey-operator/valkey-operator/internal/status"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/internal/watches"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// A copy newer than the cached status makes a pass read the cluster from the API server
// (readServed).
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters/status,verbs=patch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes,verbs=list;watch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=operator
// Leader election records its events with the core API, in the operator's namespace.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=operator

// Defaults of the Reconciler's settings.
const (
	// DefaultResync is how often a settled cluster is checked again (one TLS handshake
	// per member, no API write).
	DefaultResync = 10 * time.Minute
	// DefaultClusterDomain is the DNS domain of the Kubernetes cluster.
	DefaultClusterDomain = "cluster.local"
	// DefaultProbeTimeout bounds each TLS handshake with a member.
	DefaultProbeTimeout = 2 * time.Second
	// retryPending is the requeue while a member does not serve the current revision.
	retryPending = 5 * time.Second
)

// Reconciler reconciles the certificates of ValkeyClusters.
type Reconciler struct {
	Client client.Client
	// Namespaces are the namespaces watched (all when empty).
	Namespaces []string
	// APIReader reads the users' certificate Secrets (and a Secret of the copy's name
	// that the label-selected cache does not hold) from the API server; nil: Client.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	Pool      *valkeyconn.Pool
	// ExpiryWarning is how long before its end a certificate is reported as expiring
	// (default DefaultExpiryWarning).
	ExpiryWarning time.Duration
	// PropagationDelay is how long mounted Secrets may lag (default
	// operator.DefaultSecretPropagationDelay).
	PropagationDelay time.Duration
	// Resync is the requeue of a settled cluster (default DefaultResync).
	Resync time.Duration
	// ClusterDomain completes the client names (default DefaultClusterDomain).
	ClusterDomain string
	// ProbeTimeout bounds each handshake with a member (default DefaultProbeTimeout).
	ProbeTimeout time.Duration
	// Addr returns the client address of a member (default: its pod IP, port 6379).
	Addr func(*v1alpha1.ValkeyNode) string
	// Files returns a member's certificate file paths (default DefaultFiles).
	Files func(*v1alpha1.ValkeyNode) valkey.TLSFiles
	// Clock returns the time (default time.Now).
	Clock func() time.Time

	// reloads remembers, by ValkeyNode UID, the revision this process reloaded a member
	// for after the revision's reloadAfter time.
	reloads sync.Map
}

func (r *Reconciler) addr(vn *v1alpha1.ValkeyNode) string {
	if r.Addr != nil {
		return r.Addr(vn)
	}
	return valkeyconn.Addr(vn.Status.PodIP)
}

func (r *Reconciler) files(vn *v1alpha1.ValkeyNode) valkey.TLSFiles {
	if r.Files != nil {
		return r.Files(vn)
	}
	return DefaultFiles(vn)
}

func (r *Reconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock()
	}
	return time.Now()
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// The settings, with their defaults.
func (r *Reconciler) delay() time.Duration {
	return orDefault(r.PropagationDelay, operator.DefaultSecretPropagationDelay)
}

func (r *Reconciler) resync() time.Duration {
	return orDefault(r.Resync, DefaultResync)
}

func (r *Reconciler) expiryWarning() time.Duration {
	return orDefault(r.ExpiryWarning, DefaultExpiryWarning)
}

func (r *Reconciler) dialTimeout() time.Duration {
	return orDefault(r.ProbeTimeout, DefaultProbeTimeout)
}

func (r *Reconciler) clusterDomain() string {
	return orDefault(r.ClusterDomain, DefaultClusterDomain)
}

// SetupWithManager registers the controller, its field indexes and watches.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr manager.Manager, maxConcurrent int) error {
	if err := certificateSecrets.Register(ctx, mgr.GetFieldIndexer()); err != nil {
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
		Named("tls").
		For(&v1alpha1.ValkeyCluster{}, builder.WithPredicates(predicate.Or(clusterChanged(), watches.PausedChanged()))).
		WatchesRawSource(secrets).
		Watches(&v1alpha1.ValkeyNode{}, handler.EnqueueRequestsFromMapFunc(membership.ClusterOf),
			builder.WithPredicates(nodeChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(r)
}

// scope holds what one pass read and decided.
type scope struct {
	vc  *v1alpha1.ValkeyCluster
	now time.Time
	// names are the client names the certificate should cover.
	names []string
	// source is the user's Secret (nil when missing or in conflict).
	source  *corev1.Secret
	outcome checkOutcome
	// served is the operator's copy (nil when none).
	served  *served
	nodes   []v1alpha1.ValkeyNode
	results map[string]memberResult
	// held is the accepted certificate a paused cluster holds (nil: none held).
	held *Certificate
	// after is the shortest requeue asked for (0: none).
	after time.Duration
}

// requeue keeps the shortest positive wait.
func (s *scope) requeue(d time.Duration) {
	if d > 0 && (s.after == 0 || d < s.after) {
		s.after = d
	}
}

// servedCert is the certificate members serve, nil when none was accepted.
func (s *scope) servedCert() *Certificate {
	if s.served == nil {
		return nil
	}
	return s.served.cert
}

// Reconcile is one pass over a cluster: guard, read, publish the accepted certificate,
// roll it out to the members, report.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var vc v1alpha1.ValkeyCluster
	if err := r.Client.Get(ctx, req.NamespacedName, &vc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !vc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil // the owner reference deletes the copy
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("cluster", vc.Name, "namespace", vc.Namespace))
	if vc.Spec.TLS == nil {
		return reconcile.Result{}, r.forget(ctx, &vc)
	}
	if g := guard.Check(&vc); !g.Valid() {
		log.FromContext(ctx).Info("not acting on an invalid spec", "errors", len(g.Errs))
		return reconcile.Result{}, r.writeUnknown(ctx, &vc, vc.Status.TLS, "the spec is invalid (see InvalidSpec)", g.Condition)
	}
	names := ClientNames(vc.Name, vc.Namespace, r.clusterDomain())
	if vc.Spec.ExternalAccess != nil && vc.Spec.ExternalAccess.HostnameTemplate != "" {
		nodes, err := membership.Of(ctx, r.Client, &vc)
		if err != nil {
			return reconcile.Result{}, err
		}
		names = append(names, ExternalNames(&vc, nodes)...)
	}
	s := &scope{vc: &vc, now: r.now(), names: names}
	res, err := r.pass(ctx, s)
	if err != nil {
		why := "the controller could not complete its pass: " + err.Error()
		tls := vc.Status.TLS
		if s.servedCert() != nil {
			tls = tlsStatus(s.served, s.names) // a copy this pass wrote keeps its rollout's state
		}
		return reconcile.Result{}, errors.Join(err, r.writeUnknown(ctx, &vc, tls, why))
	}
	return res, nil
}

// pass does the work of a valid cluster with TLS.
func (r *Reconciler) pass(ctx context.Context, s *scope) (reconcile.Result, error) {
	if err := r.load(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	v := s.outcome.Verdict
	if s.outcome.Conflict == "" && v.Accepted() {
		switch decideHold(v1alpha1.Paused(s.vc), s.servedCert(), v.Cert, s.now, r.expiryWarning()) {
		case holdNew:
			s.held = v.Cert
		case rollOutExpiring:
			// Once: the next pass finds the new certificate served.
			r.Recorder.Eventf(s.vc, nil, corev1.EventTypeNormal, "RolloutNotHeld", "Rollout",
				"the cluster is paused, but the certificate the members serve expires on %s (within %s): the new certificate (fingerprint %s) is rolled out now",
				formatTime(s.servedCert().Leaf.NotAfter), r.expiryWarning(), v.Cert.Fingerprint)
		}
		if s.held == nil {
			if err := r.publish(ctx, s); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	if v.Refusal != nil && v.Refusal.Reason == v1alpha1.ReasonNotYetValid && v.Cert != nil {
		s.requeue(untilAfter(s.now, v.Cert.Leaf.NotBefore))
	}
	if s.servedCert() != nil {
		if err := r.roll(ctx, s); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.report(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	s.requeue(r.resync())
	return reconcile.Result{RequeueAfter: s.after}, nil
}

// load reads the operator's copy, the user's Secret (and checks it) and the members.
func (r *Reconciler) load(ctx context.Context, s *scope) error {
	vc := s.vc
	served, conflict, err := r.readServed(ctx, vc, s.now)
	if err != nil {
		return err
	}
	s.served = served
	if err := r.dropLegacyAnnotations(ctx, s); err != nil {
		return err
	}
	s.outcome.Source = vc.Spec.TLS.Certificate.SecretName
	if s.outcome.Source == v1alpha1.TLSSecretName(vc.Name) {
		conflict = fmt.Sprintf("spec.tls.certificate.secretName names %s, which is the name of the operator's own copy of the accepted certificate; "+
			"give the certificate Secret another name", s.outcome.Source)
	}
	s.outcome.Conflict = conflict
	if conflict == "" {
		if err := r.checkSource(ctx, s); err != nil {
			return err
		}
	}
	s.nodes, err = membership.Of(ctx, r.Client, vc)
	return err
}

// checkSource reads the user's Secret and runs the checks on it.
func (r *Reconciler) checkSource(ctx context.Context, s *scope) error {
	src, err := r.readSecret(ctx, s.vc.Namespace, s.outcome.Source)
	if err != nil {
		return err
	}
	if src == nil {
		s.outcome.Missing = true
		return nil
	}
	s.source = src
	s.outcome.Verdict = Check(src.Data, s.names, s.now)
	if ref := s.outcome.Verdict.Refusal; ref != nil {
		log.FromContext(ctx).Info("certificate refused", "secret", src.Name, "reason", ref.Reason)
	}
	return nil
}

// roll brings the members to the copy's revision and records a completed rollout.
func (r *Reconciler) roll(ctx context.Context, s *scope) error {
	s.results = r.rollout(ctx, s)
	s.requeue(nextRetry(s.results, s.now, retryPending))
	if !complete(s.results) || s.served.rolledOut() {
		return nil
	}
	if err := r.markRolledOut(ctx, s); err != nil {
		return err
	}
	for i := range s.nodes {
		r.reloads.Delete(s.nodes[i].UID)
	}
	log.FromContext(ctx).Info("every member serves the certificate", "revision", s.served.revision(), "members", len(s.nodes))
	r.Recorder.Eventf(s.vc, nil, corev1.EventTypeNormal, "CertificateRolledOut", "Rollout",
		"every member (%d) serves certificate revision %s (fingerprint %s)", len(s.nodes), s.served.revision(), s.served.cert.Fingerprint)
	return nil
}

// writeUnknown keeps TLSReady and CertificateExpiring as they are, or sets them Unknown
// when they were never set, with extra conditions (the guard's), and status.tls as tls.
func (r *Reconciler) writeUnknown(ctx context.Context, vc *v1alpha1.ValkeyCluster, tls *v1alpha1.TLSStatus, why string, extra ...metav1.Condition) error {
	conds := make([]metav1.Condition, 0, len(ownedClusterConditions)+len(extra))
	for _, t := range ownedClusterConditions {
		if cur := conditions.Get(vc.Status.Conditions, t); cur != nil {
			conds = append(conds, *cur)
		} else {
			conds = append(conds, conditions.Unknown(t, v1alpha1.ReasonUnknown, why, vc.Generation))
		}
	}
	for _, c := range extra {
		// Another controller may have reported the same guard result already.
		if cur := conditions.Get(vc.Status.Conditions, c.Type); cur == nil || cur.Status != c.Status {
			conds = append(conds, c)
		}
	}
	return r.writeClusterStatus(ctx, vc, tls, conds...)
}

// forget removes what this controller wrote on a cluster without TLS (and its
// members): such clusters carry no TLS condition.
func (r *Reconciler) forget(ctx context.Context, vc *v1alpha1.ValkeyCluster) error {
	var errs []error
	if hasOwnedStatus(vc) {
		errs = append(errs, status.Apply(ctx, r.Client, FieldManager, vc, v1alpha1.GroupVersion.WithKind("ValkeyCluster"), clusterStatus{}))
	}
	nodes, err := membership.Of(ctx, r.Client, vc)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for i := range nodes {
		if conditions.Get(nodes[i].Status.Conditions, v1alpha1.ConditionTLSApplied) != nil {
			errs = append(errs, status.Apply(ctx, r.Client, FieldManager, &nodes[i], v1alpha1.GroupVersion.WithKind("ValkeyNode"), nodeStatus{}))
		}
	}
	return errors.Join(errs...)
}
