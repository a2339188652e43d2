package checker

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/valkey-operator/valkey-operator/e2e/netns"
)

// dialer fails fast on a dead member, as a well-configured client would.
func dialer() net.Dialer { return net.Dialer{Timeout: time.Second, KeepAlive: 10 * time.Second} }

// dialGate asks Options.Allow before each connection and remembers what it refused; it
// opens the connections in Options.Netns when set.
type dialGate struct {
	allow   func(addr string) error
	netns   string
	mu      sync.Mutex
	refused map[string]string
}

func (g *dialGate) dial(ctx context.Context, addr string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
	if g.netns != "" {
		return netns.Dial(filepath.Join("/run/netns", g.netns), func() (net.Conn, error) { return g.open(ctx, addr, d, tc) })
	}
	return g.open(ctx, addr, d, tc)
}

func (g *dialGate) open(ctx context.Context, addr string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
	if g.allow == nil {
		return d.DialContext(ctx, "tcp", addr)
	}
	if err := g.allow(addr); err != nil {
		g.mu.Lock()
		if g.refused == nil {
			g.refused = map[string]string{}
		}
		if _, seen := g.refused[addr]; !seen {
			g.refused[addr] = err.Error() + " (first at " + time.Now().Format("15:04:05.000") + ")"
		}
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
