// Package valkeyconn gives controllers authenticated connections to the members of a
// cluster: it reads the operator's credentials from the Secrets the acl- and tls-
// controllers publish, and keeps one client per member address so a pass does not dial
// again, while a dead member costs at most one bounded dial.
package valkeyconn

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// Port is the port every member serves clients on (TLS or not).
const Port = 6379

// Credentials reach the members of one cluster as the operator's user.
type Credentials struct {
	Username string
	Password string
	// TLS is nil when the cluster does not use TLS.
	TLS *tls.Config
	// id identifies the credentials without holding the secret in clear.
	id string
}

// ErrNotReady says the Secrets the credentials come from do not exist yet.
var ErrNotReady = errors.New("credentials are not published yet")

// Resolve reads the operator's credentials from the system users Secret and, when
// tlsSecret is set, the CA of the certificate Secret.
func Resolve(ctx context.Context, r client.Reader, namespace, systemUsersSecret, tlsSecret string) (Credentials, error) {
	var s corev1.Secret
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: systemUsersSecret}, &s); err != nil {
		return Credentials{}, fmt.Errorf("%w: read Secret %s: %w", ErrNotReady, systemUsersSecret, err)
	}
	pw, ok := s.Data[v1alpha1.UserOperator]
	if !ok || len(pw) == 0 {
		return Credentials{}, fmt.Errorf("%w: Secret %s has no key %s", ErrNotReady, systemUsersSecret, v1alpha1.UserOperator)
	}
	cred := Credentials{Username: v1alpha1.UserOperator, Password: string(pw)}
	sum := sha256.Sum256(pw)
	cred.id = hex.EncodeToString(sum[:8])
	if tlsSecret != "" {
		cfg, rev, err := tlsConfig(ctx, r, namespace, tlsSecret)
		if err != nil {
			return Credentials{}, err
		}
		cred.TLS = cfg
		cred.id += "/" + rev
	}
	return cred, nil
}

// WithPassword returns the same credentials with another password of the same user
// (the acl-controller falls back to the previous password while it rotates them). The
// pool dials again for it.
func (c Credentials) WithPassword(password string) Credentials {
	sum := sha256.Sum256([]byte(password))
	id := hex.EncodeToString(sum[:8])
	if _, tlsRev, ok := strings.Cut(c.id, "/"); ok {
		id += "/" + tlsRev
	}
	c.Password = password
	c.id = id
	return c
}

// ForCluster resolves the credentials of a ValkeyCluster's members from the Secrets its
// status names (status.acl.systemUsersSecretName, status.tls.acceptedSecretName). While
// one is not named the error wraps ErrNotReady and a *v1alpha1.NotPublishedError, which
// says what the producer's condition reports.
func ForCluster(ctx context.Context, r client.Reader, vc *v1alpha1.ValkeyCluster) (Credentials, error) {
	users, err := v1alpha1.SystemUsersSecretOf(vc)
	if err != nil {
		return Credentials{}, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	tlsSecret, err := v1alpha1.AcceptedTLSSecretOf(vc)
	if err != nil {
		return Credentials{}, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	return Resolve(ctx, r, vc.Namespace, users, tlsSecret)
}

// ForNode resolves the credentials of one ValkeyNode.
func ForNode(ctx context.Context, r client.Reader, vn *v1alpha1.ValkeyNode) (Credentials, error) {
	return Resolve(ctx, r, vn.Namespace, vn.Spec.SystemUsersSecretName, vn.Spec.TLSSecretName)
}

// tlsConfig trusts the CA of the certificate Secret. Members are identified by that CA:
// their certificates name the Services clients use, not pod IPs, so the chain is
// verified and the host name is not.
func tlsConfig(ctx context.Context, r client.Reader, namespace, name string) (*tls.Config, string, error) {
	var s corev1.Secret
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &s); err != nil {
		return nil, "", fmt.Errorf("%w: read TLS Secret %s: %w", ErrNotReady, name, err)
	}
	ca := s.Data["ca.crt"]
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, "", fmt.Errorf("TLS Secret %s: ca.crt holds no certificate", name)
	}
	cfg := valkey.VerifyChainOnly(pool)
	sum := sha256.Sum256(ca)
	return cfg, hex.EncodeToString(sum[:8]), nil
}

// Addr is the client address of a member at ip.
func Addr(ip string) string { return net.JoinHostPort(ip, strconv.Itoa(Port)) }

// Pool keeps one client per member address and credentials.
type Pool struct {
	// DialTimeout bounds each dial (default 1 s): a dead pod must not hold a worker.
	DialTimeout time.Duration
	// MaxReplyBytes bounds what a connection reads back from a member (default
	// valkey.DefaultMaxReplyBytes): a larger reply fails with an error wrapping
	// valkey.ErrReplyTooLarge instead of growing the controller's memory.
	MaxReplyBytes int64

	mu      sync.Mutex
	clients map[string]*entry
}

// NewPool returns a pool whose connections are closed when mgr stops, so a component
// going away (a roll of the operator, leader election lost) leaves no open connection
// on the servers.
func NewPool(mgr manager.Manager, dialTimeout time.Duration) (*Pool, error) {
	p := &Pool{DialTimeout: dialTimeout}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		p.Close()
		return nil
	})); err != nil {
		return nil, fmt.Errorf("close the Valkey connections on shutdown: %w", err)
	}
	return p, nil
}

type entry struct {
	key      string
	client   *valkey.Client
	lastUsed time.Time
}

// idleClose is how long a client may go unused before it is closed: members that left
// the cluster must not keep connections open forever.
const idleClose = 10 * time.Minute

// Client returns a connected client for addr, dialling if there is none for these
// credentials. Dials to different members run in parallel.
func (p *Pool) Client(ctx context.Context, addr string, cred Credentials) (*valkey.Client, error) {
	key := cred.Username + "|" + cred.id
	p.mu.Lock()
	if p.clients == nil {
		p.clients = map[string]*entry{}
	}
	now := time.Now()
	p.closeIdle(now)
	if e, ok := p.clients[addr]; ok && e.key == key {
		e.lastUsed = now
		p.mu.Unlock()
		return e.client, nil
	}
	p.mu.Unlock()

	timeout := p.DialTimeout
	if timeout == 0 {
		timeout = time.Second
	}
	c, err := valkey.Dial(ctx, valkey.Options{Addr: addr, Username: cred.Username, Password: cred.Password, TLS: cred.TLS,
		DialTimeout: timeout, MaxReplyBytes: p.MaxReplyBytes})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.clients[addr]; ok {
		if old.key == key {
			c.Close()
			return old.client, nil
		}
		old.client.Close()
	}
	p.clients[addr] = &entry{key: key, client: c, lastUsed: time.Now()}
	return c, nil
}

// closeIdle closes clients unused for idleClose; p.mu is held.
func (p *Pool) closeIdle(now time.Time) {
	for addr, e := range p.clients {
		if now.Sub(e.lastUsed) > idleClose {
			e.client.Close()
			delete(p.clients, addr)
		}
	}
}

// Drop closes the client of addr, for example after it failed: the next Client dials.
func (p *Pool) Drop(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.clients[addr]; ok {
		e.client.Close()
		delete(p.clients, addr)
	}
}

// Close closes every client.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, e := range p.clients {
		e.client.Close()
		delete(p.clients, addr)
	}
}
