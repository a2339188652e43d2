// Package valkeyconn gives controllers authenticated connections to the members of a
// cluster: it reads the operator's credentials from the Secrets the acl- and tls-
// controllers publish, and keeps one client per member address so a pass does not dial
// again, while a dead member costs at most one bounded dial. The components of one
// process share the clients (For).
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
	"slices"
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

	mu sync.Mutex
	// clients holds, by address, a client per credentials in use (a rotation's old
	// and new password, a rollout's old and new CA), at most maxKeysPerAddr.
	clients map[string][]*entry
}

// For returns the pool of the process mgr runs in: every component that mgr runs (the
// manager binary runs them all) shares it, so a member costs the process one connection
// whichever components talk to it. Its connections are closed when mgr stops, so a
// component going away (a roll of the operator, leader election lost) leaves no open
// connection on the servers.
func For(mgr manager.Manager) (*Pool, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if p, ok := shared.pools[mgr]; ok {
		return p, nil
	}
	p := &Pool{}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		p.Close()
		return nil
	})); err != nil {
		return nil, fmt.Errorf("close the Valkey connections on shutdown: %w", err)
	}
	if shared.pools == nil {
		shared.pools = map[manager.Manager]*Pool{}
	}
	shared.pools[mgr] = p
	return p, nil
}

// shared holds the pool of each manager of the process (one, but in tests).
var shared struct {
	mu    sync.Mutex
	pools map[manager.Manager]*Pool
}

type entry struct {
	key      string
	client   *valkey.Client
	lastUsed time.Time
}

// idleClose is how long a client may go unused before it is closed: members that left
// the cluster, and credentials no longer in use, must not keep connections open forever.
const idleClose = 10 * time.Minute

// maxKeysPerAddr bounds the clients kept for one address: components may ask with
// different credentials for a while (the acl-controller falls back to the previous
// password during a rotation, the tls-controller trusts a new CA before the others).
// Beyond it the least recently used leaves the pool (and is retired).
const maxKeysPerAddr = 3

// Client returns a connected client for addr, dialling if there is none for these
// credentials. Dials to different members run in parallel.
func (p *Pool) Client(ctx context.Context, addr string, cred Credentials) (*valkey.Client, error) {
	key := cred.Username + "|" + cred.id
	p.mu.Lock()
	if p.clients == nil {
		p.clients = map[string][]*entry{}
	}
	now := time.Now()
	p.closeIdle(now)
	if e := find(p.clients[addr], key); e != nil {
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
	if e := find(p.clients[addr], key); e != nil {
		c.Close() // dialled meanwhile by another caller
		return e.client, nil
	}
	entries := append(p.clients[addr], &entry{key: key, client: c, lastUsed: time.Now()})
	if len(entries) > maxKeysPerAddr {
		oldest := 0
		for i, e := range entries {
			if e.lastUsed.Before(entries[oldest].lastUsed) {
				oldest = i
			}
		}
		retire(entries[oldest].client)
		entries = slices.Delete(entries, oldest, oldest+1)
	}
	p.clients[addr] = entries
	return c, nil
}

// retireAfter is how long a client taken out of the pool stays open: another component
// of the process may be in the middle of a pass with it. A variable for the tests.
var retireAfter = 10 * time.Second

// retire closes c once retireAfter has passed.
func retire(c *valkey.Client) { time.AfterFunc(retireAfter, c.Close) }

func find(entries []*entry, key string) *entry {
	for _, e := range entries {
		if e.key == key {
			return e
		}
	}
	return nil
}

// closeIdle closes clients unused for idleClose; p.mu is held.
func (p *Pool) closeIdle(now time.Time) {
	for addr, entries := range p.clients {
		kept := entries[:0]
		for _, e := range entries {
			if now.Sub(e.lastUsed) > idleClose {
				e.client.Close()
				continue
			}
			kept = append(kept, e)
		}
		if len(kept) == 0 {
			delete(p.clients, addr)
		} else {
			p.clients[addr] = kept
		}
	}
}

// Drop takes c out of the pool, for example after a command on it failed: the next
// Client for its address and credentials dials again. c is closed retireAfter later,
// not at once: the other components of the process share it and may be using it. A
// nil c, or one no longer in the pool, is ignored.
func (p *Pool) Drop(c *valkey.Client) {
	if c == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	entries := p.clients[c.Addr()]
	for i, e := range entries {
		if e.client == c {
			retire(c)
			if entries = slices.Delete(entries, i, i+1); len(entries) == 0 {
				delete(p.clients, c.Addr())
			} else {
				p.clients[c.Addr()] = entries
			}
			return
		}
	}
}

// Close closes every client.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, entries := range p.clients {
		for _, e := range entries {
			e.client.Close()
		}
		delete(p.clients, addr)
	}
}
