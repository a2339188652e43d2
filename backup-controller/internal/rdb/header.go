package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// Header is what the start of an RDB file says about the snapshot.
type Header struct {
	// Version is the RDB format version: 11 for Valkey 8.x ("REDIS0011"), 80 from
	// Valkey 9.0 ("VALKEY080").
	Version int
	// ValkeyVersion is the valkey-ver (or redis-ver) auxiliary field.
	ValkeyVersion string
	// Keys and Expires are the sizes of database 0 (RESIZEDB), when the file has them
	// in the part that was read (KeysKnown).
	Keys, Expires int64
	KeysKnown     bool
}

// RDB opcodes the header parser acts on; any other byte ends the header.
const (
	opAux      = 0xFA
	opResizeDB = 0xFB
	opSelectDB = 0xFE
	opEOF      = 0xFF
)

// errShort says the bytes end inside the header.
var errShort = errors.New("rdb: header truncated")

// ParseHeader reads the magic, the auxiliary fields and the first RESIZEDB of b (the
// first bytes of an RDB file). It stops at the first key: a short b yields what it
// holds, an error only for a file that is not RDB.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	switch {
	case len(b) >= 9 && bytes.HasPrefix(b, []byte("REDIS")):
		v, err := strconv.Atoi(string(b[5:9]))
		if err != nil {
			return h, fmt.Errorf("rdb: bad version in magic %q", b[:9])
		}
		h.Version = v
	case len(b) >= 9 && bytes.HasPrefix(b, []byte("VALKEY")):
		v, err := strconv.Atoi(string(b[6:9]))
		if err != nil {
			return h, fmt.Errorf("rdb: bad version in magic %q", b[:9])
		}
		h.Version = v
	default:
		return h, errors.New("rdb: not an RDB file (no REDIS or VALKEY magic)")
	}
	p := &parser{b: b, i: 9}
	for {
		op, err := p.byte()
		if err != nil {
			return h, nil
		}
		switch op {
		case opAux:
			k, err1 := p.str()
			v, err2 := p.str()
			if err1 != nil || err2 != nil {
				return h, nil
			}
			switch k {
			case "valkey-ver":
				h.ValkeyVersion = v
			case "redis-ver":
				if h.ValkeyVersion == "" {
					h.ValkeyVersion = v
				}
			}
		case opSelectDB:
			if _, err := p.length(); err != nil {
				return h, nil
			}
		case opResizeDB:
			keys, err1 := p.length()
			exp, err2 := p.length()
			if err1 == nil && err2 == nil {
				h.Keys, h.Expires, h.KeysKnown = int64(keys), int64(exp), true
			}
			return h, nil
		case opEOF:
			// An empty snapshot: no database section at all.
			h.KeysKnown = true
			return h, nil
		default:
			// A key, a function or module payload: the header is over.
			return h, nil
		}
	}
}

type parser struct {
	b []byte
	i int
}

func (p *parser) byte() (byte, error) {
	if p.i >= len(p.b) {
		return 0, errShort
	}
	c := p.b[p.i]
	p.i++
	return c, nil
}

func (p *parser) take(n uint64) ([]byte, error) {
	if n > uint64(len(p.b)-p.i) {
		return nil, errShort
	}
	out := p.b[p.i : p.i+int(n)]
	p.i += int(n)
	return out, nil
}

// lengthOrEncoding reads an RDB length; special is set for the string encodings
// (0xC0-0xC3), whose type is returned as the length.
func (p *parser) lengthOrEncoding() (n uint64, special bool, err error) {
	c, err := p.byte()
	if err != nil {
		return 0, false, err
	}
	switch c >> 6 {
	case 0:
		return uint64(c & 0x3F), false, nil
	case 1:
		d, err := p.byte()
		return uint64(c&0x3F)<<8 | uint64(d), false, err
	case 2:
		switch c {
		case 0x80:
			b, err := p.take(4)
			if err != nil {
				return 0, false, err
			}
			return uint64(binary.BigEndian.Uint32(b)), false, nil
		case 0x81:
			b, err := p.take(8)
			if err != nil {
				return 0, false, err
			}
			return binary.BigEndian.Uint64(b), false, nil
		}
		return 0, false, fmt.Errorf("rdb: bad length byte %#x", c)
	default:
		return uint64(c & 0x3F), true, nil
	}
}

func (p *parser) length() (uint64, error) {
	n, special, err := p.lengthOrEncoding()
	if err == nil && special {
		err = fmt.Errorf("rdb: encoded value where a length belongs")
	}
	return n, err
}

// str reads a string: raw, integer-encoded, or LZF-compressed (skipped: its text is
// not needed by the header).
func (p *parser) str() (string, error) {
	n, special, err := p.lengthOrEncoding()
	if err != nil {
		return "", err
	}
	if !special {
		b, err := p.take(n)
		return string(b), err
	}
	switch n {
	case 0:
		b, err := p.take(1)
		if err != nil {
			return "", err
		}
		return strconv.Itoa(int(int8(b[0]))), nil
	case 1:
		b, err := p.take(2)
		if err != nil {
			return "", err
		}
		return strconv.Itoa(int(int16(binary.LittleEndian.Uint16(b)))), nil
	case 2:
		b, err := p.take(4)
		if err != nil {
			return "", err
		}
		return strconv.Itoa(int(int32(binary.LittleEndian.Uint32(b)))), nil
	case 3:
		clen, err := p.length()
		if err != nil {
			return "", err
		}
		if _, err := p.length(); err != nil {
			return "", err
		}
		_, err = p.take(clen)
		return "", err
	}
	return "", fmt.Errorf("rdb: unknown string encoding %d", n)
}

// MaxLoadableVersion is the newest RDB format a Valkey version loads: 11 up to 8.x, 80
// from 9.0 (which also loads every older format).
func MaxLoadableVersion(major, minor int) int {
	if major >= 9 {
		return 80
	}
	return 11
}
