package valkeytest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// ErrIncomplete means the input ends before the reply does.
var ErrIncomplete = errors.New("incomplete RESP reply")

// Limits of DecodeRESP, so that fuzzed input cannot exhaust memory.
const (
	maxDepth    = 32
	maxElements = 1 << 16
)

// DecodeRESP decodes one RESP2 or RESP3 reply from b into the tree shape the
// valkey package parses: []any, map[string]any, string, int64, float64, bool,
// nil, and error for error replies. It returns the number of bytes used.
func DecodeRESP(b []byte) (any, int, error) {
	d := decoder{b: b}
	v, err := d.value(0)
	return v, d.pos, err
}

type decoder struct {
	b   []byte
	pos int
}

func (d *decoder) line() (string, error) {
	i := bytes.Index(d.b[d.pos:], []byte("\r\n"))
	if i < 0 {
		return "", ErrIncomplete
	}
	s := string(d.b[d.pos : d.pos+i])
	d.pos += i + 2
	return s, nil
}

func (d *decoder) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("RESP nesting too deep")
	}
	if d.pos >= len(d.b) {
		return nil, ErrIncomplete
	}
	kind := d.b[d.pos]
	d.pos++
	l, err := d.line()
	if err != nil {
		return nil, err
	}
	switch kind {
	case '+':
		return l, nil
	case '-', '!':
		return errors.New(l), nil
	case ':':
		return strconv.ParseInt(l, 10, 64)
	case ',':
		return strconv.ParseFloat(l, 64)
	case '#':
		return l == "t", nil
	case '_':
		return nil, nil
	case '(':
		return l, nil
	case '$', '=':
		return d.bulk(l)
	case '*', '~', '>':
		return d.array(l, depth)
	case '%':
		return d.mapping(l, depth)
	}
	return nil, fmt.Errorf("unknown RESP type %q", kind)
}

func (d *decoder) count(l string) (int, error) {
	n, err := strconv.Atoi(l)
	if err != nil || n < -1 || n > maxElements {
		return 0, fmt.Errorf("bad RESP length %q", l)
	}
	return n, nil
}

func (d *decoder) bulk(l string) (any, error) {
	// No allocation depends on n: the string is cut from the input.
	n, err := strconv.Atoi(l)
	if err != nil || n < -1 {
		return nil, fmt.Errorf("bad RESP bulk length %q", l)
	}
	if n == -1 {
		return nil, nil
	}
	if n > len(d.b)-d.pos-2 {
		return nil, ErrIncomplete
	}
	s := string(d.b[d.pos : d.pos+n])
	d.pos += n + 2
	return s, nil
}

func (d *decoder) array(l string, depth int) (any, error) {
	n, err := d.count(l)
	if err != nil {
		return nil, err
	}
	if n == -1 {
		return nil, nil
	}
	out := make([]any, 0, min(n, 1024))
	for range n {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (d *decoder) mapping(l string, depth int) (any, error) {
	n, err := d.count(l)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("bad RESP map length %q", l)
	}
	out := make(map[string]any, min(n, 1024))
	for range n {
		k, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out[fmt.Sprint(k)] = v
	}
	return out, nil
}

// RawReply sends one command over a new plain connection, after logging in
// with HELLO (protocol 2 or 3), and returns the exact bytes of the reply. It
// lets tests capture real server output for parser seeds.
func RawReply(addr, user, password string, protocol int, args ...string) ([]byte, error) {
	c, err := DialRaw(addr, user, password, protocol, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Do(args...)
}

// RawConn is a plain connection that sends commands as raw RESP and returns the exact
// bytes of each reply: a client with no library sending anything of its own.
type RawConn struct {
	conn net.Conn
	r    *bufio.Reader
}

// DialRaw connects and logs in with HELLO (protocol 2 or 3). A deadline other than zero
// bounds the connection's whole life.
func DialRaw(addr, user, password string, protocol int, deadline time.Duration) (*RawConn, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	if deadline > 0 {
		_ = conn.SetDeadline(time.Now().Add(deadline))
	}
	c := &RawConn{conn: conn, r: bufio.NewReader(conn)}
	if _, err := c.Do("HELLO", strconv.Itoa(protocol), "AUTH", user, password); err != nil {
		conn.Close()
		return nil, fmt.Errorf("hello: %w", err)
	}
	return c, nil
}

// Do sends one command and returns its reply; an error reply is returned as the error
// too.
func (c *RawConn) Do(args ...string) ([]byte, error) { return roundTrip(c.conn, c.r, args) }

// Close closes the connection.
func (c *RawConn) Close() error { return c.conn.Close() }

func roundTrip(w io.Writer, r *bufio.Reader, args []string) ([]byte, error) {
	var cmd bytes.Buffer
	fmt.Fprintf(&cmd, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&cmd, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := w.Write(cmd.Bytes()); err != nil {
		return nil, err
	}
	var buf []byte
	chunk := make([]byte, 64<<10)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		v, used, derr := DecodeRESP(buf)
		switch {
		case derr == nil && used == len(buf):
			if e, ok := v.(error); ok {
				return buf, e
			}
			return buf, nil
		case derr != nil && !errors.Is(derr, ErrIncomplete):
			return nil, derr
		case err != nil:
			return nil, err
		}
	}
}
