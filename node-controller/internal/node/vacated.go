package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

const (
	// watchDialTimeout bounds each dial of a server's address by a watch.
	watchDialTimeout = 300 * time.Millisecond
	// watchRedialTimeout bounds the dial that follows a watched connection's end. That
	// end already says the server closed it (a partition ends nothing), so the dial may
	// wait longer for its answer: on a busy node the first packet of a connection can
	// wait for the NetworkPolicy engine's verdict longer than watchDialTimeout, and a
	// timeout there proves nothing (the kubelet's report, a second or two later, is
	// then the proof).
	watchRedialTimeout = 2 * time.Second
	// vacatedWatchLimit bounds how long the controller holds a connection to a server
	// that still answers at the address of a pod that is gone. The kubelet stops such a
	// pod's containers within its grace period (at least 2 s for a pod deleted with
	// none), so a server that outlives this is not the one being stopped.
	vacatedWatchLimit = time.Minute
	// watchRearm is how long a node's watch that ended without a proof (its server
	// closed the connection and still answers, or the address stopped answering) waits
	// before a pass starts another: a server that drops idle connections costs a dial
	// a minute, not a loop.
	watchRearm = time.Minute
	// shortLived is the age under which a connection that ended while the server still
	// answers ends the watch: the server drops such connections at once.
	shortLived = time.Second
)

// The death of a member's server is proven by its address refusing connections: a
// pod's network namespace outlives its server (a container restarting in the pod, or a
// pod the API no longer has, until the kubelet has torn it down), and a refused
// connection there means nothing listens on the server's port any more. That is as good
// as the kubelet's word (ServerDown), and comes sooner:
//
//   - A running server is watched (watchServer): the controller holds one idle
//     connection to it. The server writes nothing to a client that asked nothing, so the
//     connection ends only when the server stops (or drops it); the controller then
//     dials again at once, before a kubelet could notice the exit, and a refusal is the
//     proof, handed to the node's next pass through a watch event.
//   - A pod deleted with no grace period is gone from the API at once while its
//     containers may still run, and the kubelet never reports the exit of a pod the API
//     no longer has. When the pod the node last ran at an address is no longer there
//     (no pod, or one at another address) and no watch holds that address
//     (probeVacated), the controller dials it: refused is the proof; accepted, it is
//     watched as above, for at most vacatedWatchLimit.
//   - A dial that times out (a partitioned node, a namespace already torn down) proves
//     nothing, and Valkey's own failure detection stands.
//
// A proof holds until the member's server answers again.

// probeVacated looks for the proof of the death of the server the node last ran at an
// address its pod no longer has; see above.
func (r *Reconciler) probeVacated(ctx context.Context, s *scope) {
	old := s.node.Status.PodIP
	if old == "" || (s.pod != nil && s.pod.Status.PodIP == old) {
		return
	}
	key := client.ObjectKeyFromObject(s.node)
	if r.watches.holds(key, old) {
		return
	}
	addr := serverAddr(old)
	c, err := r.dialWatched(ctx, addr)
	switch {
	case err == nil:
		s.log.Info("the server of a pod that is gone still answers; watching its connection", "address", addr)
		r.watchServer(ctx, s.log, key, s.node.Status.PodName, old, c, vacatedWatchLimit)
	case errors.Is(err, syscall.ECONNREFUSED):
		r.watches.prove(key, s.node.Status.PodName, old)
		s.log.Info("the server of a pod that is gone no longer listens", "address", addr)
	}
}

// watchRunning starts the watch of the server that answered this pass, unless one holds
// its address already or the last one ended without a proof less than watchRearm ago.
// A pod being deleted is not watched anew (its hand-over may run; the watch of its
// server, started before, goes on).
func (r *Reconciler) watchRunning(ctx context.Context, s *scope) {
	if s.server == nil || s.pod == nil || s.pod.DeletionTimestamp != nil || s.pod.Status.PodIP == "" {
		return
	}
	key := client.ObjectKeyFromObject(s.node)
	ip := s.pod.Status.PodIP
	if !r.watches.wants(key, ip, time.Now()) {
		return
	}
	c, err := r.dialWatched(ctx, serverAddr(ip))
	if err != nil {
		return // it answered a moment ago: the next pass tries again
	}
	r.watchServer(ctx, s.log, key, s.pod.Name, ip, c, 0)
}

// proof sets the scope's proof of the server's death from the node's watch, or clears
// a proof the server's answer this pass disproves.
func (r *Reconciler) proof(s *scope) {
	key := client.ObjectKeyFromObject(s.node)
	if s.server != nil {
		r.watches.disproved(key)
		return
	}
	pod, ip, ok := r.watches.proven(key)
	if !ok {
		return
	}
	if s.pod != nil && s.pod.Name == pod && s.pod.Status.PodIP == ip {
		if s.pod.DeletionTimestamp != nil {
			return // a pod being deleted is never down; the proof waits until it is gone
		}
		s.vacated = fmt.Sprintf("the server of pod %s no longer listens at %s (connection refused)", pod, ip)
		return
	}
	s.vacated = fmt.Sprintf("pod %s is gone and its server no longer listens at %s (connection refused)", pod, ip)
}

// watchServer holds c, a connection to the server of pod at ip, until it ends (or
// limit passes, when limit is set); then dials that address again: a refusal is the
// proof of the server's death. A connection the server dropped while it still answers
// is replaced, unless it lived less than shortLived. Either way the watch ends with an
// event for the node, whose next pass reads the proof (or none).
func (r *Reconciler) watchServer(ctx context.Context, log logr.Logger, key types.NamespacedName, pod, ip string, c net.Conn, limit time.Duration) {
	w := r.watches.start(key, pod, ip, c)
	addr := serverAddr(ip)
	go func() {
		started := time.Now()
		var deadline time.Time
		if limit > 0 {
			deadline = started.Add(limit)
		}
		proven := false
		var err error
		for c != nil {
			opened := time.Now()
			awaitEnd(c, deadline)
			_ = c.Close()
			switch {
			case w.stopped():
				return
			case !deadline.IsZero() && !time.Now().Before(deadline):
				err = fmt.Errorf("it still answers after %s", limit)
				c = nil
				continue
			}
			c, err = r.dialWatchedWithin(ctx, addr, watchRedialTimeout)
			switch {
			case errors.Is(err, syscall.ECONNREFUSED):
				proven = true
			case err == nil && time.Since(opened) < shortLived:
				_ = c.Close()
				c, err = nil, errors.New("it drops idle connections")
			case err == nil && !r.watches.hold(w, c):
				_ = c.Close()
				return
			}
		}
		if proven {
			log.Info("the watched server stopped and no longer listens", "pod", pod, "address", addr, "after", time.Since(started))
		} else {
			log.Info("the watch of a server ended without a proof", "pod", pod, "address", addr, "after", time.Since(started), "error", err.Error())
		}
		r.watches.finish(ctx, key, w, proven)
	}()
}

// awaitEnd reads c until the connection ends or the deadline (if set) passes; a Valkey
// server writes nothing to a client that asked nothing, so this waits for the server's
// side to close.
func awaitEnd(c net.Conn, deadline time.Time) {
	_ = c.SetReadDeadline(deadline)
	var buf [64]byte
	for {
		if _, err := c.Read(buf[:]); err != nil {
			return
		}
	}
}

// serverAddr is the address of the server of a pod at ip.
func serverAddr(ip string) string { return net.JoinHostPort(ip, strconv.Itoa(ClientPort)) }

// dialWatched opens a TCP connection to addr within watchDialTimeout.
func (r *Reconciler) dialWatched(ctx context.Context, addr string) (net.Conn, error) {
	return r.dialWatchedWithin(ctx, addr, watchDialTimeout)
}

// dialWatchedWithin opens a TCP connection to addr within timeout.
func (r *Reconciler) dialWatchedWithin(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	if r.DialWatched != nil {
		return r.DialWatched(ctx, addr)
	}
	d := net.Dialer{Timeout: timeout}
	return d.DialContext(ctx, "tcp", addr)
}

// watches are the nodes' server watches, at most one per node, and the events that end
// them.
type watches struct {
	mu     sync.Mutex
	m      map[types.NamespacedName]*watch
	events chan event.GenericEvent
}

// watch is one node's: running while conn is held, then ended with a proof or not.
type watch struct {
	// pod and ip are the pod and address of the watched server.
	pod, ip string
	conn    net.Conn
	// ended is set when the watch ends; proven when it found the proof; idleUntil
	// is when a watch that ended without one may be followed by another.
	ended, proven bool
	idleUntil     time.Time
	// stop is closed when the watch is replaced or forgotten.
	stop chan struct{}
}

// stopped reports whether the watch was replaced or forgotten.
func (w *watch) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

func newWatches() *watches {
	return &watches{m: map[types.NamespacedName]*watch{}, events: make(chan event.GenericEvent)}
}

// start records a running watch of the node, replacing (and stopping) any other.
func (ws *watches) start(key types.NamespacedName, pod, ip string, c net.Conn) *watch {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.dropLocked(key)
	w := &watch{pod: pod, ip: ip, conn: c, stop: make(chan struct{})}
	ws.m[key] = w
	return w
}

// prove records the proof found by a single dial.
func (ws *watches) prove(key types.NamespacedName, pod, ip string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.dropLocked(key)
	ws.m[key] = &watch{pod: pod, ip: ip, ended: true, proven: true, stop: make(chan struct{})}
}

// holds reports whether the node has a watch of the server at ip, running or proven.
func (ws *watches) holds(key types.NamespacedName, ip string) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.m[key]
	return w != nil && w.ip == ip && (!w.ended || w.proven)
}

// wants reports whether a pass should start a watch of the server at ip for the node:
// one watch at a time (a running one, of an older address too, ends first), none while
// a proof stands, and after one that ended without a proof, not before watchRearm for
// the same address.
func (ws *watches) wants(key types.NamespacedName, ip string, now time.Time) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.m[key]
	switch {
	case w == nil:
		return true
	case !w.ended, w.proven:
		return false
	case w.ip != ip:
		return true
	}
	return !now.Before(w.idleUntil)
}

// hold makes c the connection watch w holds, unless w was stopped meanwhile.
func (ws *watches) hold(w *watch, c net.Conn) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w.stopped() {
		return false
	}
	w.conn = c
	return true
}

// proven returns the node's proof: the pod and address whose server is gone.
func (ws *watches) proven(key types.NamespacedName) (pod, ip string, ok bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.m[key]; w != nil && w.proven {
		return w.pod, w.ip, true
	}
	return "", "", false
}

// disproved drops a proof once the node's server answers again.
func (ws *watches) disproved(key types.NamespacedName) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.m[key]; w != nil && w.proven {
		delete(ws.m, key)
	}
}

// forget drops the node's watch (the node is gone), stopping a running one.
func (ws *watches) forget(key types.NamespacedName) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.dropLocked(key)
}

func (ws *watches) dropLocked(key types.NamespacedName) {
	if w := ws.m[key]; w != nil {
		close(w.stop)
		if w.conn != nil && !w.ended {
			_ = w.conn.Close()
		}
		delete(ws.m, key)
	}
}

// finish records the end of watch w, if it is still the node's, and wakes the node's
// controller.
func (ws *watches) finish(ctx context.Context, key types.NamespacedName, w *watch, proven bool) {
	ws.mu.Lock()
	if ws.m[key] != w {
		ws.mu.Unlock()
		return
	}
	w.ended, w.proven = true, proven
	if !proven {
		w.idleUntil = time.Now().Add(watchRearm)
	}
	ws.mu.Unlock()
	vn := &v1alpha1.ValkeyNode{}
	vn.Namespace, vn.Name = key.Namespace, key.Name
	select {
	case ws.events <- event.GenericEvent{Object: vn}:
	case <-ctx.Done():
	}
}
