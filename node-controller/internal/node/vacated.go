package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"
)

// vacatedProbeTimeout bounds the dial of probeVacated.
const vacatedProbeTimeout = 300 * time.Millisecond

// probeVacated proves the death of a server whose pod went before the kubelet could
// report its exit: a pod deleted with no grace period, its server killed first, is gone
// from the API at once, and a StatefulSet's or Deployment's next pod has another
// address (or none yet). When the pod the node last ran at an address is no longer
// there (no pod, or one at another address), the controller dials that address at
// once: its pod's network namespace outlives the API object until the kubelet has torn
// the pod down, and a refused connection there means nothing listens on the server's
// port any more. That is as good as the kubelet's word (ServerDown). A node that does
// not answer (partitioned, or the namespace already gone) proves nothing: the dial times
// out and Valkey's own failure detection stands. A pod being deleted with a grace period
// is still there, running its hand-over, and is not probed.
func (r *Reconciler) probeVacated(ctx context.Context, s *scope) {
	old := s.node.Status.PodIP
	if old == "" || (s.pod != nil && s.pod.Status.PodIP == old) {
		return
	}
	addr := net.JoinHostPort(old, strconv.Itoa(ClientPort))
	err := r.probe(ctx, addr)
	if err != nil && errors.Is(err, syscall.ECONNREFUSED) {
		s.vacated = fmt.Sprintf("pod %s is gone and its server no longer listens at %s (connection refused)", s.node.Status.PodName, old)
		s.log.Info("the server of a pod that is gone no longer listens", "address", addr)
	}
}

// probe opens and closes a TCP connection to addr.
func (r *Reconciler) probe(ctx context.Context, addr string) error {
	if r.Probe != nil {
		return r.Probe(ctx, addr)
	}
	d := net.Dialer{Timeout: vacatedProbeTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}
