package valkey

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// Default timeouts of Options.
const (
	DefaultDialTimeout    = 2 * time.Second
	DefaultCommandTimeout = 5 * time.Second
)

// minConnTimeout is the smallest per-connection I/O deadline given to rueidis.
// A single command that runs longer than max(minConnTimeout, 2*CommandTimeout)
// makes rueidis drop the connection.
const minConnTimeout = 10 * time.Second

// Options says how to reach one Valkey server.
type Options struct {
	// Addr is "host:port" (an IPv6 host in brackets).
	Addr string
	// Username and Password authenticate the connection (AUTH / HELLO).
	Username, Password string
	// TLS, when set, is used as is. Its ServerName is left as the caller set
	// it; when empty, crypto/tls checks the certificate against the host of
	// Addr (the pod IP), and a VerifyConnection hook of the caller runs too.
	TLS *tls.Config
	// DialTimeout bounds connecting and the handshake. Default 2s.
	DialTimeout time.Duration
	// CommandTimeout bounds each command whose context has no deadline.
	// Default 5s.
	CommandTimeout time.Duration
	// MaxReplyBytes bounds what a connection reads back: one reply, or the replies
	// to a pipeline together (see replylimit.go for how a reply is counted). A reply
	// over it fails with an error wrapping ErrReplyTooLarge, and the connection is
	// replaced. Default DefaultMaxReplyBytes (8 MiB).
	MaxReplyBytes int64
}

// Client is a connection to one Valkey server. It is safe for concurrent use.
type Client struct {
	addr    string
	rc      rueidis.Client
	timeout time.Duration
	// used is when a command last started (UnixNano); reviveMu makes the callers that
	// find the connection idle wait for one PING (begin).
	used     atomic.Int64
	reviveMu sync.Mutex
}

// Dial connects to the server at o.Addr and authenticates. It returns within
// DialTimeout (or earlier when ctx ends), also when the address is dead or the
// peer accepts but never answers. The handshake (AUTH, HELLO) needs no ACL
// permission, so the user needs only the commands the caller runs.
func Dial(ctx context.Context, o Options) (*Client, error) {
	if o.Addr == "" {
		return nil, fmt.Errorf("dial: empty address: %w", ErrInvalidArgument)
	}
	o = o.withDefaults()
	dialTimeout := o.DialTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < dialTimeout {
		dialTimeout = max(time.Until(d), time.Millisecond)
	}
	rc, err := newRueidis(ctx, o, dialTimeout)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", o.Addr, asServerError(err, o.Password))
	}
	c := &Client{addr: o.Addr, rc: rc, timeout: o.CommandTimeout}
	c.used.Store(time.Now().UnixNano())
	return c, nil
}

func (o Options) withDefaults() Options {
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = DefaultCommandTimeout
	}
	if o.MaxReplyBytes <= 0 {
		o.MaxReplyBytes = DefaultMaxReplyBytes
	}
	return o
}

// Per-connection sizes. A controller keeps a client per member it talks to, so what a
// connection holds is paid per member: rueidis' defaults (0.5 MiB read and write
// buffers, a ring of 1024 waiting commands) cost about 1.3 MiB a connection. An admin
// client has a few commands in flight at most (a pipelined batch waits for ring
// slots), its requests are short, and a reply larger than the read buffer is read
// through it in pieces: a page of memory each way is enough.
//
// An idle connection sends nothing: rueidis PINGs a connection idle for
// Dialer.KeepAlive (1 s by default), which a controller keeping a client per member
// pays per member, every second, at rest. idlePing makes that a minute; a command
// after reviveAfter without any is preceded by a PING of its own (begin), so a
// connection the server closed meanwhile (its `timeout`, a restart at the same
// address) is dialled again before the command, as the background PING did.
const (
	idlePing      = time.Minute
	reviveAfter   = time.Second
	reviveTimeout = time.Second

	connBufferSize = 4 << 10
	connRingScale  = 3 // 2^3 commands in flight
	// idleLaneClose closes the connections SetSlots borrowed once idle this long: a
	// slot migration's extra lanes are not kept per member at rest.
	idleLaneClose = 30 * time.Second
)

// clientOption maps Options to a one-node rueidis configuration: no cluster
// discovery, no client-side cache, RESP2 (so CLUSTER NODES and INFO come back
// as plain strings, not RESP3 verbatim strings prefixed "txt:"), one
// connection (and the lanes SetSlots borrows, closed when idle), small buffers, no
// automatic retries (the controllers requeue instead), and replies bounded by
// MaxReplyBytes (every connection is dialled by dialLimited).
func clientOption(o Options, dialTimeout time.Duration) rueidis.ClientOption {
	var tlsConfig *tls.Config
	if o.TLS != nil {
		tlsConfig = o.TLS.Clone()
	}
	return rueidis.ClientOption{
		InitAddress:       []string{o.Addr},
		Username:          o.Username,
		Password:          o.Password,
		TLSConfig:         tlsConfig,
		Dialer:            net.Dialer{Timeout: dialTimeout, KeepAlive: idlePing},
		DialCtxFn:         dialLimited(o.MaxReplyBytes),
		ConnWriteTimeout:  max(minConnTimeout, 2*o.CommandTimeout),
		ForceSingleClient: true,
		DisableCache:      true,
		AlwaysRESP2:       true,
		DisableRetry:      true,
		PipelineMultiplex: -1,
		ClientSetInfo:     rueidis.DisableClientSetInfo,

		ReadBufferEachConn:  connBufferSize,
		WriteBufferEachConn: connBufferSize,
		RingScaleEachConn:   connRingScale,
		BlockingPoolCleanup: idleLaneClose,
	}
}

type dialResult struct {
	rc  rueidis.Client
	err error
}

// newRueidis builds the rueidis client in a goroutine so that a cancelled ctx
// returns at once; a client that is built after the caller left is closed.
func newRueidis(ctx context.Context, o Options, dialTimeout time.Duration) (rueidis.Client, error) {
	ch := make(chan dialResult, 1)
	go func() {
		rc, err := rueidis.NewClient(clientOption(o, dialTimeout))
		if err != nil && rc != nil {
			// With ForceSingleClient rueidis returns a client even when the
			// first connection failed.
			rc.Close()
			rc = nil
		}
		ch <- dialResult{rc: rc, err: err}
	}()
	select {
	case r := <-ch:
		return r.rc, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.rc != nil {
				r.rc.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// begin records that a command starts now, after a PING when none started for
// reviveAfter: a connection the server closed meanwhile fails the PING, and rueidis
// dials again for the command. The PING is bounded by reviveTimeout, so a member that
// stopped answering costs the command at most that much more. Callers that find the
// connection idle together wait for one PING.
func (c *Client) begin(ctx context.Context) {
	if c.idle() {
		c.reviveMu.Lock()
		defer c.reviveMu.Unlock()
		if c.idle() { // not PINGed by another caller meanwhile
			c.ping(ctx, c.rc)
		}
	}
	c.used.Store(time.Now().UnixNano())
}

// idle reports whether no command started for reviveAfter.
func (c *Client) idle() bool {
	return time.Now().UnixNano()-c.used.Load() >= int64(reviveAfter)
}

// ping sends one PING on rc within reviveTimeout and reports whether it was answered.
func (c *Client) ping(ctx context.Context, rc rueidis.CoreClient) bool {
	ctx, cancel := context.WithTimeout(ctx, reviveTimeout)
	defer cancel()
	return rc.Do(ctx, c.rc.B().Ping().Build()).NonRedisError() == nil
}

// Addr returns the address the client talks to.
func (c *Client) Addr() string { return c.addr }

// Close closes the connection. Commands in flight fail.
func (c *Client) Close() {
	c.rc.Close()
}

// withTimeout gives ctx the client's command timeout when it has no deadline.
// A command that needs longer (MIGRATE with a long timeout) passes floor.
func (c *Client) withTimeout(ctx context.Context, floor time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, max(c.timeout, floor))
}

// result runs one command and returns the raw reply. Server errors become
// *ServerError with the given secrets removed. A nil reply is no error: the
// caller checks msg.IsNil().
func (c *Client) result(ctx context.Context, secrets []string, args ...string) (rueidis.RedisMessage, error) {
	return c.resultWithin(ctx, 0, secrets, args...)
}

// resultWithin is result with a floor for the default command timeout.
func (c *Client) resultWithin(ctx context.Context, floor time.Duration, secrets []string, args ...string) (rueidis.RedisMessage, error) {
	ctx, cancel := c.withTimeout(ctx, floor)
	defer cancel()
	c.begin(ctx)
	msg, err := c.rc.Do(ctx, c.rc.B().Arbitrary(args...).Build()).ToMessage()
	if err != nil && !rueidis.IsRedisNil(err) {
		return msg, asServerError(err, secrets...)
	}
	return msg, nil
}

// str runs a command whose reply is a string (or a status such as OK).
func (c *Client) str(ctx context.Context, args ...string) (string, error) {
	msg, err := c.result(ctx, nil, args...)
	if err != nil {
		return "", err
	}
	return replyString(msg)
}

// replyString returns a string or status reply; a nil reply is "".
func replyString(msg rueidis.RedisMessage) (string, error) {
	if msg.IsNil() {
		return "", nil
	}
	return msg.ToString()
}

// ok runs a command whose reply must be OK.
func (c *Client) ok(ctx context.Context, args ...string) error {
	return c.okSecret(ctx, nil, args...)
}

// okSecret runs a command that carries secrets and whose reply must be OK.
func (c *Client) okSecret(ctx context.Context, secrets []string, args ...string) error {
	msg, err := c.result(ctx, secrets, args...)
	if err != nil {
		return err
	}
	return wantOK(msg)
}

// wantOK is nil for the reply OK, an error quoting any other reply.
func wantOK(msg rueidis.RedisMessage) error {
	s, err := replyString(msg)
	if err != nil {
		return err
	}
	if s != "OK" {
		return fmt.Errorf("unexpected reply %q", truncate(s, 64))
	}
	return nil
}

// integer runs a command whose reply is an integer.
func (c *Client) integer(ctx context.Context, args ...string) (int64, error) {
	msg, err := c.result(ctx, nil, args...)
	if err != nil {
		return 0, err
	}
	return msg.ToInt64()
}

// value runs a command and returns its reply as a generic tree (see toTree).
func (c *Client) value(ctx context.Context, args ...string) (any, error) {
	msg, err := c.result(ctx, nil, args...)
	if err != nil {
		return nil, err
	}
	return toTree(msg)
}

// Do runs any command and returns a string, status or integer reply as a
// string; a nil reply is "". It is an escape hatch for commands this package
// does not wrap; an array or map reply is an error (use DoValue). Errors name
// only the command, never its arguments, and arguments of six bytes or more
// are removed from server messages (they may be secrets).
func (c *Client) Do(ctx context.Context, args ...string) (string, error) {
	name, err := checkCommand(args)
	if err != nil {
		return "", err
	}
	msg, err := c.result(ctx, doSecrets(args), args...)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if msg.IsInt64() {
		n, _ := msg.ToInt64()
		return strconv.FormatInt(n, 10), nil
	}
	s, err := replyString(msg)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// DoValue runs any command and returns the reply as a tree of []any,
// map[string]any, string, int64, float64, bool and nil.
func (c *Client) DoValue(ctx context.Context, args ...string) (any, error) {
	name, err := checkCommand(args)
	if err != nil {
		return nil, err
	}
	msg, err := c.result(ctx, doSecrets(args), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	v, err := toTree(msg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// doSecrets lists the arguments of a free-form command that are removed from
// its error messages: any argument of six bytes or more may be a secret.
func doSecrets(args []string) []string {
	var out []string
	for _, a := range args[1:] {
		if len(a) >= 6 {
			out = append(out, a)
		}
	}
	return out
}

// checkCommand refuses what the command builder would panic on (an empty
// command) and what a one-shot call cannot serve (subscriptions).
func checkCommand(args []string) (string, error) {
	if len(args) == 0 || args[0] == "" {
		return "", fmt.Errorf("do: empty command: %w", ErrInvalidArgument)
	}
	name := strings.ToLower(args[0])
	if strings.HasSuffix(name, "subscribe") {
		return "", fmt.Errorf("do %s: subscriptions are not supported: %w", name, ErrInvalidArgument)
	}
	return name, nil
}

// toTree converts a reply into plain Go values. Nested error replies become
// errors. Nil replies become nil.
func toTree(msg rueidis.RedisMessage) (any, error) {
	if msg.IsNil() {
		return nil, nil
	}
	v, err := msg.ToAny()
	if err != nil {
		if errors.Is(err, rueidis.Nil) {
			return nil, nil
		}
		return nil, asServerError(err)
	}
	return v, nil
}

// truncate shortens s for error messages.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
