package operator

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ContentCache serves Secrets and ConfigMaps by name without watching their content.
// The cache holds their metadata only (a metadata watch selected by the operator's
// label); Get looks the name up there, so an object that is not the operator's is not
// found, exactly as with a label-selected cache. The content of an object found is read
// from the API server the first time and kept with its resource version: the next Get
// at the same version is served from memory, a new version is read again, and an object
// deleted is forgotten. Only names the controllers ask for are ever read, and they ask
// for the names of their own clusters' and members' objects: what a tenant puts in
// other Secrets or ConfigMaps, labelled or not, is never held.
type ContentCache struct {
	meta cache.Cache
	api  client.Reader

	mu    sync.Mutex
	items map[contentKey]client.Object
	// watched holds the kinds whose metadata informer forgets deleted objects here.
	watched map[string]bool
}

type contentKey struct {
	kind string
	key  client.ObjectKey
}

// NewContentCache reads metadata from meta and content from api.
func NewContentCache(meta cache.Cache, api client.Reader) *ContentCache {
	return &ContentCache{meta: meta, api: api, items: map[contentKey]client.Object{}, watched: map[string]bool{}}
}

// serves reports whether obj is a kind the content cache serves.
func serves(obj any) (string, bool) {
	switch obj.(type) {
	case *corev1.Secret:
		return "Secret", true
	case *corev1.ConfigMap:
		return "ConfigMap", true
	}
	return "", false
}

// Get reads the Secret or ConfigMap key into obj.
func (c *ContentCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	kind, ok := serves(obj)
	if !ok {
		return fmt.Errorf("content cache: %T is not a Secret or ConfigMap", obj)
	}
	if err := c.watch(ctx, kind); err != nil {
		return err
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: kind})
	if err := c.meta.Get(ctx, key, m); err != nil {
		return err
	}
	k := contentKey{kind, key}
	c.mu.Lock()
	held, ok := c.items[k]
	c.mu.Unlock()
	if ok && held.GetResourceVersion() == m.ResourceVersion {
		copyInto(held, obj)
		return nil
	}
	if err := c.api.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	kept := obj.DeepCopyObject().(client.Object)
	kept.SetManagedFields(nil)
	c.mu.Lock()
	c.items[k] = kept
	c.mu.Unlock()
	return nil
}

// watch makes the metadata informer of kind forget deleted objects here, once.
func (c *ContentCache) watch(ctx context.Context, kind string) error {
	c.mu.Lock()
	done := c.watched[kind]
	c.mu.Unlock()
	if done {
		return nil
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: kind})
	inf, err := c.meta.GetInformer(ctx, m)
	if err != nil {
		return fmt.Errorf("watch %s metadata: %w", kind, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watched[kind] {
		return nil
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(o any) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if obj, ok := o.(client.Object); ok {
			c.forget(kind, client.ObjectKeyFromObject(obj))
		}
	}}); err != nil {
		return fmt.Errorf("watch %s metadata: %w", kind, err)
	}
	c.watched[kind] = true
	return nil
}

func (c *ContentCache) forget(kind string, key client.ObjectKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.items, contentKey{kind, key})
}

// Len is how many objects' content is held.
func (c *ContentCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

// copyInto copies a held object into the caller's.
func copyInto(held, obj client.Object) {
	switch o := obj.(type) {
	case *corev1.Secret:
		held.(*corev1.Secret).DeepCopyInto(o)
	case *corev1.ConfigMap:
		held.(*corev1.ConfigMap).DeepCopyInto(o)
	}
}

// contentClient is the managers' client: Secrets and ConfigMaps through the content
// cache, everything else as controller-runtime's client does it.
type contentClient struct {
	client.Client
	content *ContentCache
}

func (c contentClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := serves(obj); ok {
		return c.content.Get(ctx, key, obj, opts...)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c contentClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	switch list.(type) {
	case *corev1.SecretList, *corev1.ConfigMapList:
		// A list would bring every labelled object's content, whoever made it.
		return fmt.Errorf("list %T: Secrets and ConfigMaps are read by name only", list)
	}
	return c.Client.List(ctx, list, opts...)
}

// NewClient is the managers' NewClient: controller-runtime's client, whose reads of
// Secrets and ConfigMaps go through a ContentCache instead of a cache of their content.
func NewClient(config *rest.Config, options client.Options) (client.Client, error) {
	if options.Cache != nil {
		options.Cache.DisableFor = append(options.Cache.DisableFor, &corev1.Secret{}, &corev1.ConfigMap{})
	}
	c, err := client.New(config, options)
	if err != nil {
		return nil, err
	}
	if options.Cache == nil || options.Cache.Reader == nil {
		return c, nil
	}
	informers, ok := options.Cache.Reader.(cache.Cache)
	if !ok {
		return nil, fmt.Errorf("content cache: the manager's cache reader is a %T, not a cache", options.Cache.Reader)
	}
	api, err := client.New(config, client.Options{HTTPClient: options.HTTPClient, Scheme: options.Scheme, Mapper: options.Mapper})
	if err != nil {
		return nil, err
	}
	return contentClient{Client: c, content: NewContentCache(informers, api)}, nil
}
