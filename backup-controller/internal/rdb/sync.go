package rdb

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
)

// Errors of a transfer, by cause (test with errors.Is).
var (
	// ErrUnreachable: the server could not be dialled.
	ErrUnreachable = errors.New("server unreachable")
	// ErrAuth: the server refused the credentials.
	ErrAuth = errors.New("authentication refused")
	// ErrRefused: the server refused a command of the handshake (an ACL without the
	// replication commands, a replica whose own link is down).
	ErrRefused = errors.New("snapshot refused")
	// ErrSourceLost: the link broke, or went silent, before the snapshot was whole.
	ErrSourceLost = errors.New("source lost during the transfer")
	// ErrChecksum: the snapshot's CRC-64 trailer does not match what was received.
	ErrChecksum = errors.New("snapshot checksum mismatch")
)

// eofMarkSize is the length of the mark around a diskless snapshot.
const eofMarkSize = 40

// headerCapture is how much of the start of a snapshot is kept for ParseHeader.
const headerCapture = 64 << 10

// Options say how to reach the server a snapshot is taken from.
type Options struct {
	// Addr is "host:port".
	Addr string
	// Username and Password authenticate (the user needs +replconf +sync +info).
	Username, Password string
	// TLS, when set, is used as is.
	TLS *tls.Config
	// DialTimeout bounds the dial and the handshake (default 5 s).
	DialTimeout time.Duration
	// IdleTimeout is the longest silence tolerated during the transfer (default 60 s,
	// Valkey's repl-timeout: the server sends keep-alive newlines while it prepares).
	IdleTimeout time.Duration
}

// Source is what the server said about itself before the transfer.
type Source struct {
	Replication valkey.Replication
	Version     valkey.Version
}

// Snapshot is a transfer in progress; read it to the end (io.EOF), then Close.
type Snapshot struct {
	Source Source
	// Size is the announced size of a disk-based snapshot, -1 for a diskless one.
	Size int64

	conn net.Conn
	br   *bufio.Reader
	idle time.Duration

	mark      []byte // diskless: the end mark
	remaining int64  // disk-based: bytes still to come
	hold      []byte // diskless: bytes that may still be the mark
	ready     []byte // bytes to hand out
	done      bool
	err       error
	n         int64

	crc    *crc
	tail   []byte // the last 8 bytes handed out (the CRC trailer at the end)
	header []byte
}

// Open dials the server, checks it, and starts a snapshot.
func Open(ctx context.Context, o Options) (*Snapshot, error) {
	if o.DialTimeout == 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 60 * time.Second
	}
	conn, err := dial(ctx, o)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{conn: conn, br: bufio.NewReaderSize(conn, 256<<10), idle: o.IdleTimeout, crc: newCRC()}
	if err := s.handshake(o); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

func dial(ctx context.Context, o Options) (net.Conn, error) {
	d := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 15 * time.Second}
	dctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	var conn net.Conn
	var err error
	if o.TLS != nil {
		td := &tls.Dialer{NetDialer: d, Config: o.TLS}
		conn, err = td.DialContext(dctx, "tcp", o.Addr)
	} else {
		conn, err = d.DialContext(dctx, "tcp", o.Addr)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: dial %s: %w", ErrUnreachable, o.Addr, err)
	}
	return conn, nil
}

func (s *Snapshot) handshake(o Options) error {
	_ = s.conn.SetDeadline(time.Now().Add(o.DialTimeout))
	if o.Password != "" || o.Username != "" {
		args := []string{"AUTH", o.Password}
		if o.Username != "" {
			args = []string{"AUTH", o.Username, o.Password}
		}
		if _, err := s.command(args...); err != nil {
			var se serverError
			if errors.As(err, &se) {
				return fmt.Errorf("%w: %s", ErrAuth, firstWord(string(se)))
			}
			return fmt.Errorf("%w: auth: %w", ErrUnreachable, err)
		}
	}
	info, err := s.command("INFO", "server", "replication")
	if err != nil {
		return s.refused("INFO", err)
	}
	parsed := valkey.ParseInfo(info)
	s.Source.Replication = valkey.ParseReplication(parsed)
	if v, err := valkey.VersionFromInfo(parsed); err == nil {
		s.Source.Version = v
	}
	if _, err := s.command("REPLCONF", "capa", "eof"); err != nil {
		return s.refused("REPLCONF capa", err)
	}
	if _, err := s.command("REPLCONF", "rdb-only", "1"); err != nil {
		return s.refused("REPLCONF rdb-only", err)
	}
	if _, err := s.conn.Write([]byte("SYNC\r\n")); err != nil {
		return fmt.Errorf("%w: send SYNC: %w", ErrSourceLost, err)
	}
	_ = s.conn.SetDeadline(time.Time{})
	return s.readPreamble()
}

func (s *Snapshot) refused(what string, err error) error {
	var se serverError
	if errors.As(err, &se) {
		return fmt.Errorf("%w: %s: %s", ErrRefused, what, string(se))
	}
	return fmt.Errorf("%w: %s: %w", ErrSourceLost, what, err)
}

// readPreamble reads "$<size>" or "$EOF:<mark>", skipping keep-alive newlines.
func (s *Snapshot) readPreamble() error {
	for {
		_ = s.conn.SetReadDeadline(time.Now().Add(s.idle))
		line, err := s.br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("%w: waiting for the snapshot: %w", ErrSourceLost, err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			continue // keep-alive while the server prepares the snapshot
		case strings.HasPrefix(line, "-"):
			return fmt.Errorf("%w: SYNC: %s", ErrRefused, line[1:])
		case strings.HasPrefix(line, "$EOF:") && len(line) >= 5+eofMarkSize:
			s.mark = []byte(line[5 : 5+eofMarkSize])
			s.Size = -1
			return nil
		case strings.HasPrefix(line, "$"):
			n, err := strconv.ParseInt(line[1:], 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("%w: bad snapshot preamble %q", ErrRefused, truncate(line, 60))
			}
			s.Size, s.remaining = n, n
			if n == 0 {
				s.done = true
			}
			return nil
		default:
			return fmt.Errorf("%w: unexpected reply %q", ErrRefused, truncate(line, 60))
		}
	}
}

// Read hands out the snapshot's bytes; io.EOF comes only once the snapshot is whole
// and its checksum matched.
func (s *Snapshot) Read(p []byte) (int, error) {
	for len(s.ready) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		if s.done {
			s.err = s.finish()
			return 0, s.err
		}
		s.fill()
	}
	n := copy(p, s.ready)
	s.account(s.ready[:n])
	s.ready = s.ready[n:]
	return n, nil
}

// fill reads the next chunk from the link into ready.
func (s *Snapshot) fill() {
	buf := make([]byte, 128<<10)
	if s.mark == nil && int64(len(buf)) > s.remaining {
		buf = buf[:s.remaining]
	}
	_ = s.conn.SetReadDeadline(time.Now().Add(s.idle))
	n, err := s.br.Read(buf)
	buf = buf[:n]
	if s.mark == nil {
		s.remaining -= int64(n)
		s.ready = buf
		if s.remaining == 0 {
			s.done = true
			return
		}
	} else {
		s.hold = append(s.hold, buf...)
		if len(s.hold) >= eofMarkSize && bytes.Equal(s.hold[len(s.hold)-eofMarkSize:], s.mark) {
			s.ready = s.hold[:len(s.hold)-eofMarkSize]
			s.hold = nil
			s.done = true
			return
		}
		if keep := len(s.hold) - eofMarkSize; keep > 0 {
			s.ready = append([]byte(nil), s.hold[:keep]...)
			s.hold = append(s.hold[:0:0], s.hold[keep:]...)
		}
	}
	if err != nil && !s.done {
		// Bytes still in ready are handed out first, then the error.
		s.err = fmt.Errorf("%w after %d bytes: %w", ErrSourceLost, s.n+int64(len(s.ready)), err)
	}
}

// account feeds handed-out bytes to the checksum (all but the trailing 8) and the
// header capture.
func (s *Snapshot) account(b []byte) {
	s.n += int64(len(b))
	if room := headerCapture - len(s.header); room > 0 {
		s.header = append(s.header, b[:min(room, len(b))]...)
	}
	all := append(s.tail, b...)
	if len(all) > 8 {
		_, _ = s.crc.Write(all[:len(all)-8])
		all = all[len(all)-8:]
	}
	s.tail = append(s.tail[:0:0], all...)
}

// finish checks the trailer once everything was handed out.
func (s *Snapshot) finish() error {
	if len(s.tail) < 8 {
		return fmt.Errorf("%w: snapshot of %d bytes has no trailer", ErrChecksum, s.n)
	}
	want := binary.LittleEndian.Uint64(s.tail)
	if want != 0 && want != s.crc.Sum() {
		return fmt.Errorf("%w: trailer %016x, computed %016x over %d bytes", ErrChecksum, want, s.crc.Sum(), s.n)
	}
	return io.EOF
}

// Header parses the start of what was read so far.
func (s *Snapshot) Header() (Header, error) { return ParseHeader(s.header) }

// BytesRead is how many bytes were handed out.
func (s *Snapshot) BytesRead() int64 { return s.n }

// Close closes the link (the server drops the snapshot it was sending, if any).
func (s *Snapshot) Close() error { return s.conn.Close() }

// serverError is an error reply ("-ERR ...").
type serverError string

func (e serverError) Error() string { return string(e) }

// command sends one command and reads a simple, integer or bulk reply.
func (s *Snapshot) command(args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := s.conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := s.br.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", serverError(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < -1 || n > 64<<20 {
			return "", fmt.Errorf("bad bulk length %q", truncate(line, 40))
		}
		if n == -1 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(s.br, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", truncate(line, 40))
}

func firstWord(s string) string {
	if i := strings.IndexByte(s, ' '); i > 0 {
		return s[:i]
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
