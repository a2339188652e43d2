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
	// vacatedDialTimeout bounds each dial of a vacated pod's address.
	vacatedDialTimeout = 300 * time.Millisecond
	// vacatedWatchLimit bounds how long the controller holds a connection to a server
	// that still answers at the address of a pod that is gone. The kubelet stops such a
	// pod's containers within its grace period (at least 2 s for a pod deleted with
	// none), so a server that outlives this is not the one being stopped.
	vacatedWatchLimit = time.Minute
)

// probeVacated proves the death of a server whose pod went before the kubelet could
// report its exit. A pod deleted with no grace period is gone from the API at once,
// while its containers still run until the kubelet stops them, and a StatefulSet's or
// Deployment's next pod has another address (or none yet); the kubelet never reports
// the exit of a pod the API no longer has. When the pod the node last ran at an
// address is no longer there (no pod, or one at another address), the controller dials
// that address at once:
//   - refused: the pod's network namespace, which outlives the API object until the
//     kubelet has torn the pod down, answers and nothing listens on the server's port
//     any more. That is as good as the kubelet's word (ServerDown).
//   - accepted: the server still runs (the kubelet has not stopped it yet). The
//     controller keeps that connection open; the server sends nothing unasked, so the
//     connection ends only when the server does (or closes it). It then dials again at
//     once, before the kubelet tears the namespace down, and a refusal is the proof,
//     handed to the next pass through a watch event (watchVacated).
//   - no answer (partitioned, or the namespace already gone): no proof, and Valkey's
//     own failure detection stands.
//
// A pod being deleted with a grace period is still there, running its hand-over, and is
// not probed.
func (r *Reconciler) probeVacated(ctx context.Context, s *scope) {
	key := client.ObjectKeyFromObject(s.node)
	if v, watching := r.vacancies.take(key); watching {
		s.vacated = v
		return
	}
	old := s.node.Status.PodIP
	if old == "" || (s.pod != nil && s.pod.Status.PodIP == old) {
		return
	}
	addr := net.JoinHostPort(old, strconv.Itoa(ClientPort))
	c, err := r.dialVacated(ctx, addr)
	switch {
	case err == nil:
		s.log.Info("the server of a pod that is gone still answers; watching its connection", "address", addr)
		r.watchVacated(ctx, s.log, key, s.node.Status.PodName, addr, c)
	case errors.Is(err, syscall.ECONNREFUSED):
		s.vacated = vacatedProof(s.node.Status.PodName, old)
		s.log.Info("the server of a pod that is gone no longer listens", "address", addr)
	}
}

// vacatedProof is ServerDown's message for a server proven gone with its pod.
func vacatedProof(pod, ip string) string {
	return fmt.Sprintf("pod %s is gone and its server no longer listens at %s (connection refused)", pod, ip)
}

// watchVacated holds c, a connection to the server of a pod that is gone, until it ends
// or vacatedWatchLimit passes; then dials addr again: a refusal is the proof of the
// server's death. Either way the watch ends with an event for the node, whose next pass
// takes the proof (or none) with vacancies.take. A server that closed the connection
// itself and still answers is watched again on the new connection.
func (r *Reconciler) watchVacated(ctx context.Context, log logr.Logger, key types.NamespacedName, pod, addr string, c net.Conn) {
	r.vacancies.start(key)
	go func() {
		started := time.Now()
		deadline := started.Add(vacatedWatchLimit)
		proof := ""
		var err error
		for c != nil {
			awaitEnd(c, deadline)
			_ = c.Close()
			if !time.Now().Before(deadline) {
				err = fmt.Errorf("it still answers after %s", vacatedWatchLimit)
				break
			}
			if c, err = r.dialVacated(ctx, addr); errors.Is(err, syscall.ECONNREFUSED) {
				host, _, _ := net.SplitHostPort(addr)
				proof = vacatedProof(pod, host)
			}
		}
		if proof != "" {
			log.Info("the server of a pod that is gone stopped and no longer listens", "address", addr, "after", time.Since(started))
		} else {
			log.Info("the server of a pod that is gone stopped answering, which proves nothing", "address", addr, "after", time.Since(started), "error", err.Error())
		}
		r.vacancies.finish(ctx, key, proof)
	}()
}

// awaitEnd reads c until the connection ends or the deadline passes; a Valkey server
// writes nothing to a client that asked nothing, so this waits for the server's side
// to close.
func awaitEnd(c net.Conn, deadline time.Time) {
	_ = c.SetReadDeadline(deadline)
	var buf [64]byte
	for {
		if _, err := c.Read(buf[:]); err != nil {
			return
		}
	}
}

// dialVacated opens a TCP connection to addr.
func (r *Reconciler) dialVacated(ctx context.Context, addr string) (net.Conn, error) {
	if r.DialVacated != nil {
		return r.DialVacated(ctx, addr)
	}
	d := net.Dialer{Timeout: vacatedDialTimeout}
	return d.DialContext(ctx, "tcp", addr)
}

// vacancies are the watches of watchVacated, at most one per node, and the events
// that end them.
type vacancies struct {
	mu sync.Mutex
	// m holds a node's watch: running while its value is nil, then the proof found
	// (possibly none).
	m      map[types.NamespacedName]*string
	events chan event.GenericEvent
}

func newVacancies() *vacancies {
	return &vacancies{m: map[types.NamespacedName]*string{}, events: make(chan event.GenericEvent)}
}

// start records a running watch of the node.
func (v *vacancies) start(key types.NamespacedName) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.m[key] = nil
}

// take reports whether the node has a watch: a running one stays (proof ""), an ended
// one is removed and its proof returned.
func (v *vacancies) take(key types.NamespacedName) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.m[key]
	if !ok || p == nil {
		return "", ok
	}
	delete(v.m, key)
	return *p, true
}

// forget drops the node's watch (the node is gone); a running one ends on its own.
func (v *vacancies) forget(key types.NamespacedName) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.m, key)
}

// finish records the watch's end with its proof and wakes the node's controller.
func (v *vacancies) finish(ctx context.Context, key types.NamespacedName, proof string) {
	v.mu.Lock()
	if _, ok := v.m[key]; !ok {
		v.mu.Unlock()
		return // forgotten
	}
	v.m[key] = &proof
	v.mu.Unlock()
	vn := &v1alpha1.ValkeyNode{}
	vn.Namespace, vn.Name = key.Namespace, key.Name
	select {
	case v.events <- event.GenericEvent{Object: vn}:
	case <-ctx.Done():
	}
}
