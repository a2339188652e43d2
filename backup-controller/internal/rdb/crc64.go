package rdb

import "hash/crc64"

// The RDB trailer is CRC-64/Jones (the reflected polynomial 0xad93d23594c935a9, no
// initial or final inversion), little-endian, over every byte before it; 0 when the
// server runs with rdbchecksum no.
var jonesTable = crc64.MakeTable(0x95ac9329ac4bc9b5)

// crc is the running CRC-64/Jones of what was written. hash/crc64 inverts the value at
// both ends, so the state is kept inverted.
type crc struct{ inv uint64 }

func newCRC() *crc { return &crc{inv: ^uint64(0)} }

func (c *crc) Write(p []byte) (int, error) {
	c.inv = crc64.Update(c.inv, jonesTable, p)
	return len(p), nil
}

// Sum returns the CRC of what was written.
func (c *crc) Sum() uint64 { return ^c.inv }

// Checksum returns the CRC-64/Jones of b (the RDB trailer's algorithm).
func Checksum(b []byte) uint64 {
	c := newCRC()
	_, _ = c.Write(b)
	return c.Sum()
}
