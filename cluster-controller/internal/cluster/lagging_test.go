package cluster

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// laggingClient is the controller's client with a cache that shows a cluster's status
// writes late, as an informer does when the API server or the operator's process is
// slow: for lag after the controller writes a cluster's status, its reads of that
// cluster return the cluster as it was before the write. Other objects, and the API
// reader, are as they are.
type laggingClient struct {
	client.Client
	// lag is read at each write (0: no lag).
	lag func() time.Duration

	mu    sync.Mutex
	stale map[client.ObjectKey]*v1alpha1.ValkeyCluster
	until map[client.ObjectKey]time.Time
}

func newLaggingClient(c client.Client, lag func() time.Duration) *laggingClient {
	return &laggingClient{Client: c, lag: lag, stale: map[client.ObjectKey]*v1alpha1.ValkeyCluster{}, until: map[client.ObjectKey]time.Time{}}
}

func (c *laggingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if vc, ok := obj.(*v1alpha1.ValkeyCluster); ok {
		c.mu.Lock()
		old, until := c.stale[key], c.until[key]
		c.mu.Unlock()
		if old != nil && time.Now().Before(until) {
			old.DeepCopyInto(vc)
			return nil
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *laggingClient) Status() client.SubResourceWriter {
	return laggingStatus{SubResourceWriter: c.Client.Status(), c: c}
}

// laggingStatus records, at a cluster's status write, the cluster the write started from,
// to be read until the lag is over; writes within the lag leave the first one's.
type laggingStatus struct {
	client.SubResourceWriter
	c *laggingClient
}

func (w laggingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	vc, ok := obj.(*v1alpha1.ValkeyCluster)
	if !ok {
		return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	}
	before := vc.DeepCopy()
	if err := w.SubResourceWriter.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	if lag := w.c.lag(); lag > 0 {
		key := client.ObjectKeyFromObject(vc)
		w.c.mu.Lock()
		if time.Now().After(w.c.until[key]) {
			w.c.stale[key], w.c.until[key] = before, time.Now().Add(lag)
		}
		w.c.mu.Unlock()
	}
	return nil
}
