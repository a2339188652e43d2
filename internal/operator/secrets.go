package operator

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// What the components keep of Secrets. Only the Secrets the operator made (label
// app.kubernetes.io/managed-by) are cached whole; the acl- and tls-controllers, which
// react to users' Secrets (passwords, certificates), watch every Secret's metadata only,
// reduced to its name, and read the one Secret a cluster names straight from the API
// server. So 10,000 Secrets in a namespace cost each component a few hundred bytes
// apiece, and no Secret value but the operator's own stays in memory.

// SecretMetadata is the object of the metadata-only watch of Secrets (cache.ByObject key
// and builder.WatchesMetadata object).
func SecretMetadata() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}}
}

// SecretNames returns a source of events for every Secret of the namespaces (all when
// empty), from a cache of its own that holds each Secret's metadata reduced to its name.
// It is a cache apart from the manager's because controller-runtime configures a
// cache per kind: the manager's holds only the operator's own Secrets, whole. The
// cache is added to the manager (started and stopped with it).
func SecretNames(mgr manager.Manager, namespaces []string, h handler.TypedEventHandler[*metav1.PartialObjectMetadata, reconcile.Request]) (source.Source, error) {
	opts := cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{SecretMetadata(): {Transform: nameOnly}},
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	c, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("cache of Secret names: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("cache of Secret names: %w", err)
	}
	return source.Kind(c, SecretMetadata(), h), nil
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
