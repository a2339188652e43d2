package operator

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// What the components keep of Secrets. Only the Secrets the operator made (label
// app.kubernetes.io/managed-by) are cached whole; the acl- and tls-controllers, which
// react to users' Secrets (passwords, certificates), watch every Secret's metadata only,
// without keeping it (SecretNames), and read the one Secret a cluster names straight
// from the API server. So 10,000 unrelated Secrets cost each component no memory, and no
// Secret value but the operator's own stays in memory.

// SecretMetadata is the object of the metadata-only watch of Secrets (cache.ByObject key
// and builder.WatchesMetadata object).
func SecretMetadata() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}}
}

// SecretNames returns a source of events for every Secret of the namespaces (all when
// empty), each reduced to its name. It keeps no store: a metadata-only watch per
// namespace hands every event to h and forgets it, so unrelated Secrets cost nothing
// once their event is handled (an informer's cache would hold each one's metadata:
// about 12 MiB of RSS for 10,000 Secrets, measured by the security e2e suite). The
// watch starts at the current resource version (the reconcilers read the Secrets a
// cluster names when they run) and restarts from a fresh one when the API server has
// expired it; a change in that gap is picked up by the controllers' periodic passes.
func SecretNames(mgr manager.Manager, namespaces []string, h handler.TypedEventHandler[*metav1.PartialObjectMetadata, reconcile.Request]) (source.Source, error) {
	mc, err := metadata.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("watch of Secret names: %w", err)
	}
	res := mc.Resource(corev1.SchemeGroupVersion.WithResource("secrets"))
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		for _, ns := range namespaces {
			go watchSecretNames(ctx, res.Namespace(ns), h, q)
		}
		return nil
	}), nil
}

// secretWatchRetry is the pause before a failed list or watch of Secret names is tried
// again.
const secretWatchRetry = 5 * time.Second

// watchSecretNames hands every Secret event of ri to h until ctx ends.
func watchSecretNames(ctx context.Context, ri metadata.ResourceInterface, h handler.TypedEventHandler[*metav1.PartialObjectMetadata, reconcile.Request],
	q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	log := ctrl.LoggerFrom(ctx).WithName("secret-names")
	for ctx.Err() == nil {
		// The list's resource version only: one item at most is read.
		list, err := ri.List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			var w *watchtools.RetryWatcher
			w, err = watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &toolscache.ListWatch{
				WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					o.AllowWatchBookmarks = true
					return ri.Watch(ctx, o)
				},
			})
			if err == nil {
				forwardSecretEvents(ctx, w, h, q)
				w.Stop()
				continue
			}
		}
		if ctx.Err() == nil {
			log.Error(err, "list or watch of Secret names failed; retrying", "after", secretWatchRetry)
		}
		select {
		case <-ctx.Done():
		case <-time.After(secretWatchRetry):
		}
	}
}

// forwardSecretEvents passes the watch's events to h until it ends (ctx done, or the
// resource version expired: the caller starts again).
func forwardSecretEvents(ctx context.Context, w *watchtools.RetryWatcher, h handler.TypedEventHandler[*metav1.PartialObjectMetadata, reconcile.Request],
	q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for ev := range w.ResultChan() {
		m, ok := ev.Object.(*metav1.PartialObjectMetadata)
		if !ok {
			continue // an error (the resource version expired) ends the watch
		}
		o, _ := nameOnly(m)
		m = o.(*metav1.PartialObjectMetadata)
		switch ev.Type {
		case watch.Added:
			h.Create(ctx, event.TypedCreateEvent[*metav1.PartialObjectMetadata]{Object: m}, q)
		case watch.Modified:
			h.Update(ctx, event.TypedUpdateEvent[*metav1.PartialObjectMetadata]{ObjectOld: m, ObjectNew: m}, q)
		case watch.Deleted:
			h.Delete(ctx, event.TypedDeleteEvent[*metav1.PartialObjectMetadata]{Object: m}, q)
		}
	}
}

// nameOnly drops what the metadata watch does not need.
func nameOnly(o any) (any, error) {
	m, ok := o.(*metav1.PartialObjectMetadata)
	if !ok {
		return o, nil
	}
	out := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
	}}
	if m.Labels[v1alpha1.LabelManagedBy] == v1alpha1.ManagedBy {
		out.Labels = map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: m.Labels[v1alpha1.LabelInstance]}
	}
	return out, nil
}

// CacheFirst reads from Primary (the label-selected cache) and, when it has no such
// object, from Secondary (the API server): an object of that name the operator did not
// make is then seen, and can be reported instead of overwritten.
type CacheFirst struct {
	Primary, Secondary client.Reader
}

// Get reads key from Primary, or from Secondary when Primary does not have it.
func (f CacheFirst) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := f.Primary.Get(ctx, key, obj, opts...)
	if apierrors.IsNotFound(err) && f.Secondary != nil {
		return f.Secondary.Get(ctx, key, obj, opts...)
	}
	return err
}

// List lists from Primary.
func (f CacheFirst) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return f.Primary.List(ctx, list, opts...)
}
