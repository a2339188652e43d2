// Package certs is the tls-controller: for each ValkeyCluster with spec.tls it checks
// the certificate Secret (the user's, or the one cert-manager writes for a cluster with
// spec.tls.certManager, whose cert-manager objects it keeps: certmanager.go), copies it
// once it passes into the operator's own Secret {cluster}-tls-accepted (the one the pods
// mount), reloads the certificate live on every member and confirms with a new handshake
// that the member serves it, warns before the certificate expires, and warns when
// another cluster's members trust the same CA (sharedca.go). It reports TLSReady,
// CertificateExpiring and status.tls on the cluster and TLSApplied on each member.
//
// A refused Secret never reaches a running member: the copy keeps the last accepted
// certificate, and TLSReady=False says why the new one was refused.
package certs

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/membership"
	"github.com/valkey-operator/valkey-operator/internal/publish"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// A copy newer than the cached status makes a pass read the cluster from the API server
// (readServed).
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters/status,verbs=patch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes,verbs=list;watch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// The cert-manager objects of clusters with spec.tls.certManager (certmanager.go).
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates;issuers,verbs=get;list;watch;create;update;delete
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

// Reconciler reconciles the certificates of ValkeyClusters: its steps run in the frame
// of internal/publish.
type Reconciler struct {
	publish.Base
	// ExpiryWarning is how long before its end a certificate is reported as expiring
	// (default DefaultExpiryWarning).
	ExpiryWarning time.Duration
	// ClusterDomain completes the client names (default DefaultClusterDomain).
	ClusterDomain string
	// ProbeTimeout bounds each handshake with a member (default DefaultProbeTimeout).
	ProbeTimeout time.Duration
	// Files returns a member's certificate file paths (default DefaultFiles).
	Files func(*v1alpha1.ValkeyNode) valkey.TLSFiles
	// Metadata reads the metadata of the operator's Secrets (the manager's cache; nil:
	// from the API server).
	Metadata client.Reader
	// CertManagerRecheck is how often a cluster that asks for cert-manager while its
	// CRDs are not installed is looked at again (default DefaultCertManagerRecheck).
	CertManagerRecheck time.Duration

	// certManager reads and writes cert-manager's objects (nil until set up).
	certManager *certManagerAPI
	// cas knows which clusters trust which CA (nil until set up: no shared-CA warning).
	cas *caIndex
	// casSrc wakes the clusters whose sharing of a CA changed.
	casSrc *lazySource

	// reloads remembers, by ValkeyNode UID, the revision this process reloaded a member
	// for after the revision's reloadAfter time.
	reloads sync.Map
}

var _ publish.Steps[*scope] = (*Reconciler)(nil)

func (r *Reconciler) files(vn *v1alpha1.ValkeyNode) valkey.TLSFiles {
	if r.Files != nil {
		return r.Files(vn)
	}
	return DefaultFiles(vn)
}

// The settings, with their defaults.
func (r *Reconciler) expiryWarning() time.Duration {
	return cmp.Or(r.ExpiryWarning, DefaultExpiryWarning)
}

// window is the expiry warning window of the certificate members serve (ExpiryWindow).
func (r *Reconciler) window(s *scope) time.Duration {
	if c := s.servedCert(); c != nil {
		return ExpiryWindow(r.expiryWarning(), certManagerOf(s.Cluster), c.Leaf)
	}
	return r.expiryWarning()
}

func (r *Reconciler) dialTimeout() time.Duration {
	return cmp.Or(r.ProbeTimeout, DefaultProbeTimeout)
}

func (r *Reconciler) clusterDomain() string {
	return cmp.Or(r.ClusterDomain, DefaultClusterDomain)
}

// frame is the controller in the frame: its steps, status and watches. A cluster
// without TLS is none of its business: what it wrote there is removed.
func (r *Reconciler) frame() *publish.Frame[*scope] {
	var sources []source.Source
	if r.certManager != nil {
		sources = append(sources, r.certManager.src)
	}
	if r.casSrc != nil {
		sources = append(sources, r.casSrc)
	}
	st := r.status()
	return &publish.Frame[*scope]{
		Base:          &r.Base,
		Steps:         r,
		Status:        st,
		DefaultResync: DefaultResync,
		Wants:         func(vc *v1alpha1.ValkeyCluster) bool { return vc.Spec.TLS != nil },
		Gone: func(_ context.Context, key types.NamespacedName) error {
			if r.cas != nil {
				r.cas.forget(key)
			}
			return nil
		},
		Watches: publish.Watches{
			Name:            "tls",
			Cluster:         clusterChanged(st.Owns),
			SecretRefs:      certificateSecrets,
			OperatorSecrets: []func(string) string{v1alpha1.TLSSecretName},
			Member:          memberChanged,
			Sources:         sources,
		},
	}
}

// SetupWithManager registers the controller, its field indexes and watches.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr manager.Manager, maxConcurrent int) error {
	cm, err := newCertManagerAPI(mgr, r.Namespaces, cmp.Or(r.CertManagerRecheck, DefaultCertManagerRecheck))
	if err != nil {
		return err
	}
	r.certManager = cm
	r.casSrc = &lazySource{}
	r.cas = newCAIndex(wakeRequest(r.casSrc))
	if r.Metadata == nil {
		r.Metadata = mgr.GetCache()
	}
	return r.frame().SetupWithManager(ctx, mgr, maxConcurrent)
}

// scope holds what one pass read and decided.
type scope struct {
	*publish.Pass
	// certNames are every name the cluster's certificate should cover; names those of
	// them status.tls.missingNames reports (Names.Checked of a Secret you keep, all of
	// them of a certificate cert-manager issues).
	certNames Names
	names     []string
	// source is the user's Secret (nil when missing or in conflict).
	source  *corev1.Secret
	outcome checkOutcome
	// served is the operator's copy (nil when none).
	served  *served
	nodes   []v1alpha1.ValkeyNode
	results map[string]memberResult
	// held is the accepted certificate a paused cluster holds (nil: none held).
	held *Certificate
}

// servedCert is the certificate members serve, nil when none was accepted.
func (s *scope) servedCert() *Certificate {
	if s.served == nil {
		return nil
	}
	return s.served.cert
}

// accepted reports whether the user's certificate passed every check and its copy may
// be written.
func (s *scope) accepted() bool {
	return s.outcome.Conflict == "" && s.outcome.Verdict.Accepted()
}

// Read reads the members, the names the certificate should cover, and the operator's
// copy.
func (r *Reconciler) Read(ctx context.Context, p *publish.Pass) (*scope, error) {
	vc := p.Cluster
	s := &scope{Pass: p}
	nodes, err := membership.Of(ctx, r.Client, vc)
	if err != nil {
		return nil, err
	}
	s.nodes = nodes
	s.certNames = CertificateNames(vc, nodes, r.clusterDomain())
	s.names = s.certNames.Checked
	if certManagerOf(vc) != nil {
		s.names = s.certNames.All()
	}
	served, conflict, err := r.readServed(ctx, vc, s.Now)
	if err != nil {
		return nil, err
	}
	s.served, s.outcome.Conflict = served, conflict
	return s, r.dropLegacyAnnotations(ctx, s)
}

// Render reads the certificate Secret and checks it: the user's, or, with
// spec.tls.certManager, the one cert-manager writes, once the cert-manager objects are as
// the spec asks (issue.go). A certificate not valid yet is looked at again when it
// becomes valid.
func (r *Reconciler) Render(ctx context.Context, s *scope) error {
	vc := s.Cluster
	s.outcome.Source = sourceName(vc)
	if certManagerOf(vc) != nil {
		if err := r.issue(ctx, s); err != nil || s.outcome.Issuance.NotInstalled {
			return err
		}
	} else {
		r.forgetIssuer(ctx, s)
	}
	if s.outcome.Source == v1alpha1.TLSSecretName(vc.Name) {
		s.outcome.Conflict = fmt.Sprintf("spec.tls.certificate.secretName names %s, which is the name of the operator's own copy of the accepted certificate; "+
			"give the certificate Secret another name", s.outcome.Source)
	}
	if s.outcome.Conflict != "" {
		return nil
	}
	if err := r.checkSource(ctx, s); err != nil {
		return err
	}
	if v := s.outcome.Verdict; v.Refusal != nil && v.Refusal.Reason == v1alpha1.ReasonNotYetValid && v.Cert != nil {
		s.Requeue(untilAfter(s.Now, v.Cert.Leaf.NotBefore))
	}
	return nil
}

// Hold holds, on a paused cluster, a new accepted certificate, unless the one members
// serve expires soon (see pause.go).
func (r *Reconciler) Hold(_ context.Context, s *scope) bool {
	if !s.accepted() {
		return false
	}
	v := s.outcome.Verdict
	window := r.window(s)
	switch decideHold(s.Paused, s.servedCert(), v.Cert, s.Now, window) {
	case holdNew:
		s.held = v.Cert
		return true
	case rollOutExpiring:
		// Once: the next pass finds the new certificate served.
		r.Recorder.Eventf(s.Cluster, nil, corev1.EventTypeNormal, "RolloutNotHeld", "Rollout",
			"the cluster is paused, but the certificate the members serve expires on %s (within %s): the new certificate (fingerprint %s) is rolled out now",
			formatTime(s.servedCert().Leaf.NotAfter), window, v.Cert.Fingerprint)
	}
	return false
}

// Publish writes an accepted certificate into the operator's copy.
func (r *Reconciler) Publish(ctx context.Context, s *scope) error {
	if !s.accepted() {
		return nil
	}
	return r.publish(ctx, s)
}

// Apply brings the members to the copy's revision.
func (r *Reconciler) Apply(ctx context.Context, s *scope) error {
	if s.servedCert() == nil {
		return nil
	}
	s.results = r.rollout(ctx, s)
	s.Requeue(nextRetry(s.results, s.Now, retryPending))
	return nil
}

// Settle records a rollout every member completed.
func (r *Reconciler) Settle(ctx context.Context, s *scope) error {
	if s.servedCert() == nil || !complete(s.results) || s.served.rolledOut() {
		return nil
	}
	if err := r.markRolledOut(ctx, s); err != nil {
		return err
	}
	for i := range s.nodes {
		r.reloads.Delete(s.nodes[i].UID)
	}
	log.FromContext(ctx).Info("every member serves the certificate", "revision", s.served.revision(), "members", len(s.nodes))
	r.Recorder.Eventf(s.Cluster, nil, corev1.EventTypeNormal, "CertificateRolledOut", "Rollout",
		"every member (%d) serves certificate revision %s (fingerprint %s)", len(s.nodes), s.served.revision(), s.served.cert.Fingerprint)
	return nil
}

// Field is status.tls as a pass that stops leaves it: a copy this pass read or wrote
// keeps its rollout's state.
func (r *Reconciler) Field(s *scope) any {
	if s.servedCert() != nil {
		return tlsStatus(s.served, s.names)
	}
	return s.Cluster.Status.TLS
}

// checkSource reads the user's Secret and runs the checks on it.
func (r *Reconciler) checkSource(ctx context.Context, s *scope) error {
	src, err := r.readSecret(ctx, s.Cluster.Namespace, s.outcome.Source)
	if err != nil {
		return err
	}
	if src == nil {
		s.outcome.Missing = true
		return nil
	}
	s.source = src
	s.outcome.Verdict = Check(src.Data, s.names, s.Now)
	if ref := s.outcome.Verdict.Refusal; ref != nil {
		log.FromContext(ctx).Info("certificate refused", "secret", src.Name, "reason", ref.Reason)
	}
	return nil
}
