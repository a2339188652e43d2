package valkey

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
)

// Bounded replies.
//
// rueidis sizes what it reads by what the server announces: a bulk string "$n" gets an
// n-byte buffer and an array "*n" an n-element slice before any of their content has
// arrived (readB and readA in its resp.go, v1.0.79), a simple string grows until its
// line ends, and there is no option for a maximum. A member's server is the tenant's: a
// user granted +@all can make ACL LIST, CLIENT LIST or a key listing as large as the
// server's memory, and the controller that reads it would run out of memory, leaving
// every cluster of every tenant unmanaged.
//
// So each connection of a Client reads through limitConn, which parses the RESP2 stream
// ahead of rueidis and hands it only the bytes of replies that fit in the budget. A
// length line is held back until it is whole and checked before rueidis sees it, so the
// bound holds before anything is allocated. Cost of a reply:
//
//   - every byte received counts (type bytes, length lines, simple strings, errors,
//     integers);
//   - a bulk string counts its announced length when its length line arrives;
//   - an array counts elementCost bytes per announced element when its length line
//     arrives (what one decoded element costs the caller).
//
// The budget covers the replies to the commands sent together in one write: for one
// command its reply, for a pipeline (DoMulti, which rueidis writes at once) its replies
// together, which the caller holds at once. It starts again with the first reply to a
// later write. A reply over the budget fails with a *ReplyTooLargeError for every
// command pending on the connection, which is closed: the stream cannot be
// resynchronised after an aborted read. The Client dials a new connection for its next
// command.
//
// The connections speak RESP2 only (clientOption sets AlwaysRESP2: rueidis then sends
// AUTH and HELLO 2 when it connects, never HELLO 3), so a RESP3 type byte, a negative
// length other than -1, a length line longer than maxLengthLine or nesting deeper than
// maxReplyDepth is a malformed reply (ErrMalformedReply), on which the connection is
// closed too: rueidis would panic on a negative length.

// DefaultMaxReplyBytes is the default of Options.MaxReplyBytes. The largest replies the
// controllers read from a healthy member are CLUSTER NODES and CLUSTER SHARDS (about
// 200 bytes per member), ACL LIST (the users of the spec, bounded by the size of a
// ValkeyCluster object), CLIENT LIST (about 300 bytes per connection: 3 MiB at the
// default maxclients of 10000) and a pipeline of CLUSTER GETKEYSINSLOT (KeysInSlots
// splits it when its replies do not fit together): all well under 8 MiB.
const DefaultMaxReplyBytes = 8 << 20

// elementCost is what one element of an array costs once decoded: a rueidis message
// (40 bytes) and the interface value it becomes (16).
const elementCost = 64

// maxLengthLine is the longest length or integer line accepted (type, sign, 19 digits,
// CRLF).
const maxLengthLine = 24

// maxReplyDepth bounds the nesting of arrays: the deepest reply the library reads
// (CLUSTER SHARDS) has four levels.
const maxReplyDepth = 32

// ErrReplyTooLarge is wrapped by the error of a command whose reply did not fit in
// Options.MaxReplyBytes. Use errors.As with *ReplyTooLargeError for the details.
var ErrReplyTooLarge = errors.New("reply too large")

// ErrMalformedReply is wrapped by the error of a command whose reply is not valid RESP2.
var ErrMalformedReply = errors.New("malformed reply")

// ReplyTooLargeError says which server sent a reply over the limit, to which command.
type ReplyTooLargeError struct {
	// Addr is the server's address.
	Addr string
	// Command is the command whose reply crossed the limit, upper case, with its
	// subcommand ("ACL LIST", "CLUSTER GETKEYSINSLOT"); its other arguments are never
	// recorded. "a reply" when no command was pending.
	Command string
	// Limit is the budget, in bytes.
	Limit int64
}

// Error says what was refused.
func (e *ReplyTooLargeError) Error() string {
	return fmt.Sprintf("%s answered %s with more than %s", e.Addr, e.Command, FormatBytes(e.Limit))
}

// Unwrap makes the error match ErrReplyTooLarge.
func (e *ReplyTooLargeError) Unwrap() error { return ErrReplyTooLarge }

// Describe says it for a status condition about the member named member.
func (e *ReplyTooLargeError) Describe(member string) string {
	return fmt.Sprintf("member %s answered %s with more than %s", member, e.Command, FormatBytes(e.Limit))
}

// AsReplyTooLarge returns the *ReplyTooLargeError that err wraps, or nil.
func AsReplyTooLarge(err error) *ReplyTooLargeError {
	var e *ReplyTooLargeError
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// FormatBytes writes a size as people read it: "8 MiB", "64 KiB", "1000 bytes".
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// errOverBudget is the scanner's signal that a reply does not fit; limitConn turns it
// into a *ReplyTooLargeError naming the command.
var errOverBudget = errors.New("over budget")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformedReply, fmt.Sprintf(format, args...))
}

// scanState is where a respScanner is within an element.
type scanState uint8

const (
	atType scanState = iota // the next byte starts an element
	inLine                  // in a simple string, error or integer, up to its LF
	inBulk                  // in the content of a bulk string (with its CRLF)
)

// respScanner follows a RESP2 stream incrementally: it finds where each top-level reply
// ends and counts the cost of the replies against limit.
type respScanner struct {
	state scanState
	// bulk is what is left of the current bulk string, CRLF included; bulkLen its length.
	bulk, bulkLen int64
	// cr: the last byte of a simple string read so far is a CR.
	cr bool
	// open holds the elements still expected by each open array, innermost last.
	open []int64
	// cost is what the replies since the last reset cost; limit is the budget (0: none).
	cost, limit int64

	// complete: the element just closed ended a top-level reply.
	complete bool

	// capture keeps the first bytes of the first two elements of each top-level array
	// (the command and subcommand of a request) in args; index is the element of the
	// top-level array being read.
	capture bool
	index   int
	args    [2][]byte
}

// maxCapture bounds a captured argument.
const maxCapture = 32

// charge adds n to the cost; over the limit it fails. A negative n stands for an amount
// too large to add up.
func (s *respScanner) charge(n int64) error {
	if s.limit == 0 {
		return nil
	}
	if n < 0 || n > s.limit-s.cost {
		return errOverBudget
	}
	s.cost += n
	return nil
}

// scan reads b and returns how many of its bytes belong to what fits: every byte
// before the return value was checked and counted. It stops early before a line that
// is read whole (a length line, an integer) and is not whole yet: scan it again with
// more bytes. It stops on an error. end is called with the offset in b after each
// top-level reply.
func (s *respScanner) scan(b []byte, end func(at int)) (int, error) {
	i := 0
	for i < len(b) {
		var n int
		var err error
		switch s.state {
		case inBulk:
			n = s.bulkContent(b[i:])
		case inLine:
			n, err = s.line(b[i:])
		case atType:
			n, err = s.element(b[i:])
		}
		if err != nil || n == 0 {
			return i, err
		}
		i += n
		if s.complete {
			s.complete = false
			end(i)
		}
	}
	return i, nil
}

// bulkContent reads content of a bulk string.
func (s *respScanner) bulkContent(b []byte) int {
	k := min(int64(len(b)), s.bulk)
	if s.capture && len(s.open) == 1 && s.index < len(s.args) {
		s.keep(b[:k])
	}
	s.bulk -= k
	if s.bulk == 0 {
		s.state = atType
		s.done()
	}
	return int(k)
}

// line reads the rest of a simple string or error, which may come in several pieces:
// as rueidis does, it ends at the first LF, which must follow a CR.
func (s *respScanner) line(b []byte) (int, error) {
	j := bytes.IndexByte(b, '\n')
	if j < 0 {
		if err := s.charge(int64(len(b))); err != nil {
			return 0, err
		}
		s.cr = b[len(b)-1] == '\r'
		return len(b), nil
	}
	if err := s.charge(int64(j + 1)); err != nil {
		return 0, err
	}
	if (j > 0 && b[j-1] != '\r') || (j == 0 && !s.cr) {
		return 0, malformed("line ends without CR")
	}
	s.state, s.cr = atType, false
	s.done()
	return j + 1, nil
}

// element starts the element at the head of b and returns the bytes it took: 0 when
// its first line is read whole and is not whole yet.
func (s *respScanner) element(b []byte) (int, error) {
	t := b[0]
	if t == '+' || t == '-' {
		if err := s.charge(1); err != nil {
			return 0, err
		}
		s.state = inLine
		return 1, nil
	}
	if t != '$' && t != '*' && t != ':' {
		return 0, malformed("unexpected type byte %q", t)
	}
	j := bytes.IndexByte(b, '\n')
	if j < 0 {
		if len(b) >= maxLengthLine {
			return 0, malformed("%q line longer than %d bytes", t, maxLengthLine)
		}
		return 0, nil
	}
	line := b[:j+1]
	if len(line) > maxLengthLine || len(line) < 4 || line[j-1] != '\r' {
		return 0, malformed("bad %q line %q", t, line)
	}
	n, err := parseNumber(line[1:j-1], t == ':')
	if err != nil {
		return 0, err
	}
	header := int64(len(line))
	switch t {
	case ':':
		err = s.charge(header)
		if err == nil {
			s.done()
		}
	case '$':
		err = s.bulkString(header, n)
	default:
		err = s.array(header, n)
	}
	return len(line), err
}

func (s *respScanner) bulkString(header, n int64) error {
	if n < 0 {
		if err := s.charge(header); err != nil {
			return err
		}
		s.done()
		return nil
	}
	if err := s.charge(add(header, add(n, 2))); err != nil {
		return err
	}
	s.state, s.bulk, s.bulkLen = inBulk, n+2, n
	return nil
}

func (s *respScanner) array(header, n int64) error {
	elements := int64(-1)
	if n <= math.MaxInt64/elementCost {
		elements = max(n, 0) * elementCost
	}
	if err := s.charge(add(header, elements)); err != nil {
		return err
	}
	if n <= 0 {
		s.done()
		return nil
	}
	if len(s.open) >= maxReplyDepth {
		return malformed("arrays nested deeper than %d levels", maxReplyDepth)
	}
	if len(s.open) == 0 {
		s.index = 0
		s.args = [2][]byte{s.args[0][:0], s.args[1][:0]}
	}
	s.open = append(s.open, n)
	return nil
}

// add adds two sizes; -1 (too large) when either is, or when the sum overflows.
func add(a, b int64) int64 {
	if a < 0 || b < 0 || a > math.MaxInt64-b {
		return -1
	}
	return a + b
}

// keep captures the content bytes of the current bulk string.
func (s *respScanner) keep(b []byte) {
	pos := s.bulkLen + 2 - s.bulk // content bytes already read
	room := min(s.bulkLen, maxCapture) - pos
	if room <= 0 {
		return
	}
	s.args[s.index] = append(s.args[s.index], b[:min(int64(len(b)), room)]...)
}

// done closes an element: it counts it in its array, closes the arrays it completes,
// and sets complete when a top-level reply is.
func (s *respScanner) done() {
	for len(s.open) > 0 {
		if len(s.open) == 1 {
			s.index++
		}
		top := len(s.open) - 1
		s.open[top]--
		if s.open[top] > 0 {
			return
		}
		s.open = s.open[:top]
	}
	s.complete = true
}

// maxLength is the largest length accepted: no server sends more, and adding the CRLF
// to it cannot overflow.
const maxLength = 1 << 62

// parseNumber reads the digits of a line: a length (digits, or -1) or, when integer is
// set, any int64.
func parseNumber(digits []byte, integer bool) (int64, error) {
	if !integer && string(digits) == "-1" {
		return -1, nil
	}
	neg := integer && len(digits) > 1 && digits[0] == '-'
	if neg {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return 0, malformed("empty number")
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, malformed("bad number %q", digits)
		}
		if n > (math.MaxInt64-int64(c-'0'))/10 {
			return 0, malformed("number out of range %q", digits)
		}
		n = n*10 + int64(c-'0')
	}
	if !integer && n > maxLength {
		return 0, malformed("length out of range %q", digits)
	}
	if neg {
		n = -n
	}
	return n, nil
}

// containers are the commands whose first argument is a subcommand, named in errors.
var containers = map[string]bool{
	"ACL": true, "CLIENT": true, "CLUSTER": true, "COMMAND": true, "CONFIG": true, "DEBUG": true,
	"FUNCTION": true, "LATENCY": true, "MEMORY": true, "MODULE": true, "OBJECT": true, "PUBSUB": true,
	"SCRIPT": true, "SLOWLOG": true, "XGROUP": true, "XINFO": true,
}

// commandName names a request from its captured arguments: the command, and the
// subcommand of a container. No other argument is ever kept: they may be secrets.
func commandName(args [2][]byte) string {
	name := printable(strings.ToUpper(string(args[0])))
	if name == "" {
		return "a command"
	}
	if containers[name] && len(args[1]) > 0 {
		name += " " + printable(strings.ToUpper(string(args[1])))
	}
	return name
}

func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '?'
		}
		return r
	}, s)
}

// readBufferSize is the size of limitConn's own read buffer: rueidis reads through a
// buffer of its own, so a larger one here only costs memory per connection.
const readBufferSize = 4 << 10

// limitConn is a connection whose replies are bounded (see Bounded replies above).
// rueidis reads it from one goroutine and writes it from another.
type limitConn struct {
	net.Conn
	addr  string
	limit int64

	// pending are the commands written and not answered yet, oldest first; writes
	// counts the writes.
	mu      sync.Mutex
	pending []sentCommand
	writes  uint64

	// Write side (wmu): the scanner of the requests and a length line split between
	// two writes.
	wmu   sync.Mutex
	req   respScanner
	carry []byte

	// Read side (the reader's goroutine): buf[start:valid] was checked and not handed
	// out yet, buf[valid:end] waits for the rest of a length line.
	rep                 respScanner
	buf                 []byte
	start, valid, end   int
	failed, interrupted error
}

func newLimitConn(conn net.Conn, addr string, limit int64) *limitConn {
	return &limitConn{
		Conn: conn, addr: addr, limit: limit,
		req: respScanner{capture: true},
		rep: respScanner{limit: limit},
		buf: make([]byte, readBufferSize),
	}
}

// sentCommand is a command written and not answered yet: its name, and the write that
// completed it (the commands of one write share a budget).
type sentCommand struct {
	name  string
	write uint64
}

// Write records the commands of p before they leave, so that each reply is matched to
// its command.
func (c *limitConn) Write(p []byte) (int, error) {
	if err := c.track(p); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func (c *limitConn) track(p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	data := p
	if len(c.carry) > 0 {
		data = append(append([]byte(nil), c.carry...), p...)
	}
	n, err := c.req.scan(data, c.sent)
	if err != nil {
		return fmt.Errorf("track request: %w", err)
	}
	c.carry = append(c.carry[:0], data[n:]...)
	return nil
}

// sent records the command the request scanner just finished.
func (c *limitConn) sent(int) {
	name := commandName(c.req.args)
	c.mu.Lock()
	c.pending = append(c.pending, sentCommand{name: name, write: c.writes})
	c.mu.Unlock()
}

// answered is called when a reply is complete: its command is no longer pending, and
// the budget starts again unless the next pending command came in the same write.
func (c *limitConn) answered(int) {
	c.mu.Lock()
	var done sentCommand
	if len(c.pending) > 0 {
		done, c.pending = c.pending[0], c.pending[1:]
	}
	fresh := len(c.pending) == 0 || c.pending[0].write != done.write
	c.mu.Unlock()
	if fresh {
		c.rep.cost = 0
	}
}

// current names the command whose reply is being read.
func (c *limitConn) current() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		return "a reply"
	}
	return c.pending[0].name
}

// Read hands out checked bytes only. After a reply over the budget or a malformed one,
// every read fails with that error.
func (c *limitConn) Read(p []byte) (int, error) {
	for {
		if c.start < c.valid {
			n := copy(p, c.buf[c.start:c.valid])
			c.start += n
			return n, nil
		}
		if c.failed != nil {
			return 0, c.failed
		}
		if err := c.interrupted; err != nil {
			c.interrupted = nil
			return 0, err
		}
		c.end = copy(c.buf, c.buf[c.valid:c.end])
		c.start, c.valid = 0, 0
		m, err := c.Conn.Read(c.buf[c.end:])
		c.end += m
		n, serr := c.rep.scan(c.buf[c.valid:c.end], c.answered)
		c.valid += n
		switch {
		case errors.Is(serr, errOverBudget):
			c.failed = &ReplyTooLargeError{Addr: c.addr, Command: c.current(), Limit: c.limit}
		case serr != nil:
			c.failed = fmt.Errorf("%s: %w", c.addr, serr)
		}
		if err != nil {
			c.interrupted = err
		}
	}
}

// dialLimited is rueidis' own dial (TCP, then TLS when configured) with the connection
// wrapped in a limitConn.
func dialLimited(limit int64) func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error) {
	return func(ctx context.Context, addr string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
		var conn net.Conn
		var err error
		if cfg != nil {
			conn, err = (&tls.Dialer{NetDialer: d, Config: cfg}).DialContext(ctx, "tcp", addr)
		} else {
			conn, err = d.DialContext(ctx, "tcp", addr)
		}
		if err != nil {
			return nil, err
		}
		return newLimitConn(conn, addr, limit), nil
	}
}
