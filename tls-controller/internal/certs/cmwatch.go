package certs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/watches"
)

// The operator starts and works without cert-manager: nothing of cert-manager's is
// watched until a pass needs it and its CRDs exist. The cache of cert-manager objects is
// the tls-controller's own, holding only objects labelled as the operator's (trimmed,
// a stub for one too large to be the operator's, as the operator's other caches keep
// what a tenant can create); its informers start on the first read, and their events
// reach the controller's queue through a source registered when the controller is set
// up. Whether the CRDs exist is asked of the API server's discovery, at most once per
// recheck period while they do not.

// DefaultCertManagerRecheck is how often a cluster that asks for cert-manager while its
// CRDs are not installed is looked at again.
const DefaultCertManagerRecheck = time.Minute

// certManagerReadTimeout bounds a read of the cert-manager cache, which waits for its
// informer's first list.
const certManagerReadTimeout = 30 * time.Second

// certManagerKinds are the kinds the tls-controller makes; both must be served.
var certManagerKinds = []schema.GroupKind{
	{Group: v1alpha1.CertManagerGroup, Kind: cmapi.CertificateKind},
	{Group: v1alpha1.CertManagerGroup, Kind: cmapi.IssuerKind},
}

// certManagerAPI is the tls-controller's access to cert-manager's objects.
type certManagerAPI struct {
	mapper meta.RESTMapper
	cache  cache.Cache
	src    *lazySource
	// recheck is how long an answer that the CRDs are absent holds.
	recheck time.Duration

	mu sync.Mutex
	// absentUntil: the CRDs were absent; not asked again before then.
	absentUntil time.Time
	// watched are the informers that feed the queue, by kind.
	watched map[schema.GroupKind]cache.Informer
}

// newCertManagerAPI makes the cache of cert-manager objects (started with the manager)
// for the namespaces given (all when none).
func newCertManagerAPI(mgr manager.Manager, namespaces []string, recheck time.Duration) (*certManagerAPI, error) {
	if err := cmapi.AddToScheme(mgr.GetScheme()); err != nil {
		return nil, fmt.Errorf("register cert-manager's types: %w", err)
	}
	opts := cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
		DefaultLabelSelector: operator.ManagedBySelector(),
		DefaultTransform:     trimCertManager,
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	c, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("cache of cert-manager objects: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, err
	}
	return &certManagerAPI{mapper: mgr.GetRESTMapper(), cache: c, src: &lazySource{}, recheck: recheck,
		watched: map[schema.GroupKind]cache.Informer{}}, nil
}

// installed reports whether cert-manager's CRDs are installed. A negative answer holds
// for the recheck period.
func (a *certManagerAPI) installed(now time.Time) (bool, error) {
	if a == nil {
		return false, nil
	}
	a.mu.Lock()
	absent := now.Before(a.absentUntil)
	a.mu.Unlock()
	if absent {
		return false, nil
	}
	for _, gk := range certManagerKinds {
		_, err := a.mapper.RESTMapping(gk, cmapi.SchemeGroupVersion.Version)
		var failed *apiutil.ErrResourceDiscoveryFailed
		switch {
		case err == nil:
			continue
		case meta.IsNoMatchError(err) || errors.As(err, &failed):
			a.mu.Lock()
			a.absentUntil = now.Add(a.recheck)
			a.mu.Unlock()
			return false, nil
		default:
			return false, fmt.Errorf("look up cert-manager's %s: %w", gk.Kind, err)
		}
	}
	return true, nil
}

// watch makes the informers of the kinds the tls-controller makes feed the controller's
// queue with the clusters that control their objects (once each).
func (a *certManagerAPI) watch(ctx context.Context) error {
	for _, obj := range []client.Object{&cmapi.Certificate{}, &cmapi.Issuer{}} {
		gk := schema.GroupKind{Group: v1alpha1.CertManagerGroup, Kind: kindOf(obj)}
		a.mu.Lock()
		done := a.watched[gk] != nil
		a.mu.Unlock()
		if done {
			continue
		}
		inf, err := a.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("watch cert-manager %ss: %w", gk.Kind, err)
		}
		if _, err := inf.AddEventHandler(a.src.handler()); err != nil {
			return fmt.Errorf("watch cert-manager %ss: %w", gk.Kind, err)
		}
		a.mu.Lock()
		a.watched[gk] = inf
		a.mu.Unlock()
	}
	return nil
}

// synced reports whether the informers watch has started have listed their objects, so
// a read does not wait.
func (a *certManagerAPI) synced() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.watched) < len(certManagerKinds) {
		return false
	}
	for _, inf := range a.watched {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// get reads an object of the tls-controller's from the cache, waiting a bounded time
// for the informer's first list.
func (a *certManagerAPI) get(ctx context.Context, obj client.Object) error {
	ctx, cancel := context.WithTimeout(ctx, certManagerReadTimeout)
	defer cancel()
	return a.cache.Get(ctx, client.ObjectKeyFromObject(obj), obj)
}

// lazySource is the source of the controller's requests from cert-manager objects: it
// keeps the controller's queue when the controller starts, and the informers started
// later hand it their events.
type lazySource struct {
	mu sync.Mutex
	q  workqueue.TypedRateLimitingInterface[reconcile.Request]
}

var _ source.Source = (*lazySource)(nil)

// Start keeps the queue.
func (s *lazySource) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.q = q
	return nil
}

// add enqueues req once the controller has started (before, its first pass of every
// cluster comes anyway).
func (s *lazySource) add(req reconcile.Request) {
	s.mu.Lock()
	q := s.q
	s.mu.Unlock()
	if q != nil {
		q.Add(req)
	}
}

// handler enqueues the cluster that controls an object.
func (s *lazySource) handler() toolscache.ResourceEventHandler {
	enqueue := func(o any) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		obj, ok := o.(client.Object)
		if !ok {
			return
		}
		ref := metav1.GetControllerOfNoCopy(obj)
		if ref == nil || ref.Kind != "ValkeyCluster" || ref.APIVersion != v1alpha1.GroupVersion.String() {
			return
		}
		s.add(watches.Request(obj.GetNamespace(), ref.Name))
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) },
		DeleteFunc: enqueue,
	}
}

// trimCertManager is the transform of the cert-manager cache: of a Certificate or an
// Issuer, its metadata as the operator's caches keep it, its spec, and its conditions
// (capped) with the times the tls-controller reads; a stub for one too large to be the
// operator's.
func trimCertManager(in any) (any, error) {
	switch o := in.(type) {
	case *cmapi.Certificate:
		out := &cmapi.Certificate{TypeMeta: o.TypeMeta, ObjectMeta: operator.TrimMeta(o.ObjectMeta), Spec: o.Spec}
		st := o.Status
		out.Status = cmapi.CertificateStatus{LastFailureTime: st.LastFailureTime, NotBefore: st.NotBefore, NotAfter: st.NotAfter,
			RenewalTime: st.RenewalTime, Revision: st.Revision, FailedIssuanceAttempts: st.FailedIssuanceAttempts}
		for _, c := range capped(st.Conditions) {
			c.Message = operator.CapMessage(c.Message)
			out.Status.Conditions = append(out.Status.Conditions, c)
		}
		return operator.Bounded(out), nil
	case *cmapi.Issuer:
		out := &cmapi.Issuer{TypeMeta: o.TypeMeta, ObjectMeta: operator.TrimMeta(o.ObjectMeta), Spec: o.Spec}
		for _, c := range capped(o.Status.Conditions) {
			c.Message = operator.CapMessage(c.Message)
			out.Status.Conditions = append(out.Status.Conditions, c)
		}
		return operator.Bounded(out), nil
	}
	return in, nil
}

// maxConditions caps the conditions kept of a cert-manager object.
const maxConditions = 16

func capped[T any](s []T) []T {
	if len(s) > maxConditions {
		return s[:maxConditions]
	}
	return s
}
