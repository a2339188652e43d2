package checker

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"
)

// dialer fails fast on a dead member, as a well-configured client would.
func dialer() net.Dialer { return net.Dialer{Timeout: time.Second, KeepAlive: 10 * time.Second} }

// dialGate asks Options.Allow before each connection and remembers what it refused.
type dialGate struct {
	allow   func(addr string) error
	mu      sync.Mutex
	refused map[string]string
}

func (g *dialGate) dial(ctx context.Context, addr string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
	if err := g.allow(addr); err != nil {
		g.mu.Lock()
		if g.refused == nil {
			g.refused = map[string]string{}
		}
		g.refused[addr] = err.Error()
		g.mu.Unlock()
		return nil, fmt.Errorf("the write-checker may not connect to %s: %w", addr, err)
	}
	if tc != nil {
		return (&tls.Dialer{NetDialer: d, Config: tc}).DialContext(ctx, "tcp", addr)
	}
	return d.DialContext(ctx, "tcp", addr)
}

// list returns the refused addresses with why, sorted.
func (g *dialGate) list() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, 0, len(g.refused))
	for a, why := range g.refused {
		out = append(out, a+": "+why)
	}
	sort.Strings(out)
	return out
}
