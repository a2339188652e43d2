package valkeytest

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
)

// busRelay stands in front of a server's cluster bus when Options.BusRelay is set: the
// server announces the relay's port (cluster-announce-bus-port), so its peers reach its
// bus through the relay, which can refuse some of them as a network partition would.
// Peers are told apart by the address they send from (bind-source-addr: a server on a
// loopback address of its own). Client connections, replication among them, do not
// pass through it.
type busRelay struct {
	ln     net.Listener
	target string // the server's own bus address

	mu    sync.Mutex
	cut   map[string]bool          // peer addresses whose connections are refused
	conns map[net.Conn]*relayedBus // open relayed connections, by the peer's side
}

// relayedBus is one connection through the relay: the peer's side and the server's.
type relayedBus struct {
	peerHost string
	peer, up net.Conn
}

// newBusRelay listens on host for the bus of a server whose bus is at target.
func newBusRelay(host string) (*busRelay, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	r := &busRelay{ln: ln, cut: map[string]bool{}, conns: map[net.Conn]*relayedBus{}}
	go r.serve()
	return r, nil
}

// port is the relay's port, which the server announces as its bus port.
func (r *busRelay) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// relayTo points the relay at the server's bus (a server started again on new ports
// keeps its relay).
func (r *busRelay) relayTo(host string, busPort int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.target = net.JoinHostPort(host, strconv.Itoa(busPort))
}

func (r *busRelay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		go r.relay(c)
	}
}

// relay copies one peer's connection to the server's bus and back, unless the peer is
// cut off.
func (r *busRelay) relay(peer net.Conn) {
	host, _, _ := net.SplitHostPort(peer.RemoteAddr().String())
	r.mu.Lock()
	refused, target := r.cut[host], r.target
	r.mu.Unlock()
	if refused {
		peer.Close()
		return
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		peer.Close()
		return
	}
	rb := &relayedBus{peerHost: host, peer: peer, up: up}
	r.mu.Lock()
	if r.cut[host] { // cut while this one was dialling
		r.mu.Unlock()
		peer.Close()
		up.Close()
		return
	}
	r.conns[peer] = rb
	r.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, peer)
	go pipe(peer, up)
	<-done
	peer.Close()
	up.Close()
	<-done
	r.mu.Lock()
	delete(r.conns, peer)
	r.mu.Unlock()
}

// setCut refuses (or, with cut false, admits again) the connections of the peer at
// host, and closes the open ones.
func (r *busRelay) setCut(host string, cut bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !cut {
		delete(r.cut, host)
		return
	}
	r.cut[host] = true
	for _, rb := range r.conns {
		if rb.peerHost == host {
			rb.peer.Close()
			rb.up.Close()
		}
	}
}

func (r *busRelay) close() {
	r.ln.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rb := range r.conns {
		rb.peer.Close()
		rb.up.Close()
	}
}

// CutBus cuts the cluster bus between a and b both ways, as a network partition
// between them would, while their client ports (replication included) still work:
// each one's relay refuses the other. Both servers need Options.BusRelay and an
// address of their own (Options.Host).
func CutBus(a, b *Server) error { return setBusCut(a, b, true) }

// HealBus undoes CutBus.
func HealBus(a, b *Server) error { return setBusCut(a, b, false) }

func setBusCut(a, b *Server, cut bool) error {
	if a.relay == nil || b.relay == nil {
		return errors.New("valkeytest: CutBus needs servers started with Options.BusRelay")
	}
	if a.Host == b.Host {
		return errors.New("valkeytest: CutBus needs servers on addresses of their own (Options.Host)")
	}
	a.relay.setCut(b.Host, cut)
	b.relay.setCut(a.Host, cut)
	return nil
}
