package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// serverTimeout bounds the Valkey I/O of one pass, so a hung server holds a worker
// for at most this long (the dial itself is bounded by valkeyconn's 1 s).
const serverTimeout = 3 * time.Second

// serverContext bounds one exchange with a server.
func serverContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, serverTimeout)
}

// Server is the running Valkey server of a node, as the reconciler uses it.
type Server interface {
	Info(ctx context.Context, sections ...string) (valkey.Info, error)
	ConfigSet(ctx context.Context, kv map[string]string) error
}

// Dialer connects to the server of a node at its pod IP.
type Dialer interface {
	Dial(ctx context.Context, vn *v1alpha1.ValkeyNode, podIP string) (Server, error)
}

// PoolDialer connects as the operator's user, with the credentials the node's spec
// names, through a pool that keeps one client per pod address.
type PoolDialer struct {
	// Secrets reads the system users Secret and the TLS Secret.
	Secrets client.Reader
	Pool    *valkeyconn.Pool
}

// Dial returns a client of the server at podIP.
func (d *PoolDialer) Dial(ctx context.Context, vn *v1alpha1.ValkeyNode, podIP string) (Server, error) {
	cred, err := valkeyconn.ForNode(ctx, d.Secrets, vn)
	if err != nil {
		return nil, fmt.Errorf("read credentials: %w", err)
	}
	addr := valkeyconn.Addr(podIP)
	c, err := d.Pool.Client(ctx, addr, cred)
	if err != nil {
		return nil, err
	}
	return &pooledServer{c: c, drop: func() { d.Pool.Drop(c) }}, nil
}

// pooledServer drops its client from the pool after a network error, so the next
// pass dials again (a replaced pod may reuse the address).
type pooledServer struct {
	c    *valkey.Client
	drop func()
}

func (p *pooledServer) Info(ctx context.Context, sections ...string) (valkey.Info, error) {
	info, err := p.c.Info(ctx, sections...)
	p.check(err)
	return info, err
}

func (p *pooledServer) ConfigSet(ctx context.Context, kv map[string]string) error {
	err := p.c.ConfigSet(ctx, kv)
	p.check(err)
	return err
}

func (p *pooledServer) check(err error) {
	if err != nil && !valkey.IsServerError(err) {
		p.drop()
	}
}

// FallbackReader reads from Primary (the manager's cache, which holds only the
// Secrets the operator created) and, for objects it does not have, from Secondary
// (the API server): the TLS Secret is the user's and is not in the cache.
type FallbackReader struct {
	Primary, Secondary client.Reader
}

// Get reads key from Primary, or from Secondary when Primary does not have it.
func (f FallbackReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := f.Primary.Get(ctx, key, obj, opts...)
	if apierrors.IsNotFound(err) {
		return f.Secondary.Get(ctx, key, obj, opts...)
	}
	return err
}

// List lists from Primary.
func (f FallbackReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return f.Primary.List(ctx, list, opts...)
}

// serverRunning reports whether the pod's server container runs and the pod has an
// IP: the only case in which the controller talks to Valkey.
func serverRunning(p *corev1.Pod) bool {
	if p == nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
		return false
	}
	st := containerStatus(p.Status.ContainerStatuses, ServerContainer)
	return st != nil && st.State.Running != nil
}

// observeServer reads the role and version of the node's running server.
func (r *Reconciler) observeServer(ctx context.Context, s *scope) {
	if !serverRunning(s.pod) {
		return
	}
	ctx, cancel := serverContext(ctx)
	defer cancel()
	srv, err := r.Dialer.Dial(ctx, s.node, s.pod.Status.PodIP)
	if err != nil {
		s.serverErr = err
		return
	}
	info, err := srv.Info(ctx, "server", "replication")
	if err != nil {
		s.serverErr = err
		return
	}
	v, err := valkey.VersionFromInfo(info)
	if err != nil {
		s.serverErr = errors.New("INFO server reports no version")
		return
	}
	s.server, s.serverVersion = srv, v
	s.role = v1alpha1.Role(valkey.ParseReplication(info).Role)
}
