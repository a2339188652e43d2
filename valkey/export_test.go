package valkey

import (
	"fmt"
	"io"
	"net"
	"time"
)

// ScanReplies feeds b to a reply scanner with budget limit (0: none) in pieces of the
// given sizes, each scan starting again at the first byte the previous one did not
// take, as limitConn does; the budget starts again after each reply. It returns the
// offsets at which replies end, the bytes the scanner took, and its error
// (ErrReplyTooLarge for a reply over the budget).
func ScanReplies(b []byte, pieces []int, limit int64) (ends []int, taken int, err error) {
	s := respScanner{limit: limit}
	avail := 0
	for _, p := range append(pieces, len(b)) {
		avail = min(len(b), avail+max(p, 1))
		from := taken
		n, err := s.scan(b[taken:avail], func(at int) {
			s.cost = 0
			ends = append(ends, from+at)
		})
		taken += n
		if err == errOverBudget {
			return ends, taken, ErrReplyTooLarge
		}
		if err != nil || avail == len(b) {
			return ends, taken, err
		}
	}
	return ends, taken, nil
}

// chunkConn is a net.Conn whose reads return data in pieces of the given sizes, then
// io.EOF; writes go nowhere.
type chunkConn struct {
	data   []byte
	pieces []int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.pieces) > 0 {
		n = min(n, max(c.pieces[0], 1))
		c.pieces = c.pieces[1:]
	}
	n = copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func (c *chunkConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *chunkConn) Close() error                     { return nil }
func (c *chunkConn) LocalAddr() net.Addr              { return nil }
func (c *chunkConn) RemoteAddr() net.Addr             { return nil }
func (c *chunkConn) SetDeadline(time.Time) error      { return nil }
func (c *chunkConn) SetReadDeadline(time.Time) error  { return nil }
func (c *chunkConn) SetWriteDeadline(time.Time) error { return nil }

// ReadLimited reads b through a limitConn with budget limit, the connection delivering
// it in pieces of the given sizes, after the commands of writes were sent, each element
// of writes in one write. It returns the bytes the reader got and the error that ended
// the reading (io.EOF when b was read whole).
func ReadLimited(b []byte, pieces []int, limit int64, writes ...[][]string) ([]byte, error) {
	c := newLimitConn(&chunkConn{data: b, pieces: pieces}, "server:6379", limit)
	for _, cmds := range writes {
		var p []byte
		for _, args := range cmds {
			p = append(p, encodeCommand(args)...)
		}
		if _, err := c.Write(p); err != nil {
			return nil, err
		}
	}
	var out []byte
	p := make([]byte, 512)
	for {
		n, err := c.Read(p)
		out = append(out, p[:n]...)
		if err != nil {
			return out, err
		}
	}
}

// Pending writes the commands of cmds, encoded and cut into writes of the given sizes,
// to a limitConn, and returns the names of the commands it records as pending, with the
// number of the write that completed each.
func Pending(cmds [][]string, sizes ...int) []string {
	c := newLimitConn(&chunkConn{}, "server:6379", 0)
	var p []byte
	for _, args := range cmds {
		p = append(p, encodeCommand(args)...)
	}
	for _, n := range append(sizes, len(p)) {
		n = min(n, len(p))
		if _, err := c.Write(p[:n]); err != nil {
			return []string{err.Error()}
		}
		p = p[n:]
	}
	var out []string
	for _, sc := range c.pending {
		out = append(out, fmt.Sprintf("%s@%d", sc.name, sc.write))
	}
	return out
}

// encodeCommand writes a command as clients send it: an array of bulk strings.
func encodeCommand(args []string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}
