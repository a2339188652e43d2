package rdb

import (
	"encoding/binary"
	"os"
	"testing"
)

func TestParseHeader(t *testing.T) {
	real, err := os.ReadFile("testdata/valkey-8.0.1-cluster.rdb")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		in   []byte
		want Header
		err  bool
	}{
		{name: "valkey 8.0.1, 3 keys, 1 with TTL", in: real,
			want: Header{Version: 11, ValkeyVersion: "8.0.1", Keys: 3, Expires: 1, KeysKnown: true}},
		{name: "cut inside the aux fields", in: real[:40], want: Header{Version: 11, ValkeyVersion: "8.0.1"}},
		{name: "valkey 9 magic", in: []byte("VALKEY080\xff"), want: Header{Version: 80, KeysKnown: true}},
		{name: "empty snapshot", in: []byte("REDIS0011\xff"), want: Header{Version: 11, KeysKnown: true}},
		{name: "integer aux and 14-bit length", in: append([]byte("REDIS0011\xfa\x09redis-ver\xc0\x07\xfe\x00\xfb\x41\x00\x00"), 0),
			want: Header{Version: 11, ValkeyVersion: "7", Keys: 256, KeysKnown: true}},
		{name: "not rdb", in: []byte("GIF89a...."), err: true},
		{name: "short", in: []byte("REDIS"), err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, err := ParseHeader(c.in)
			if (err != nil) != c.err {
				t.Fatalf("err = %v, want error %v", err, c.err)
			}
			if !c.err && h != c.want {
				t.Errorf("got %+v, want %+v", h, c.want)
			}
		})
	}
}

func TestChecksumOfRealFile(t *testing.T) {
	b, err := os.ReadFile("testdata/valkey-8.0.1-cluster.rdb")
	if err != nil {
		t.Fatal(err)
	}
	n := len(b)
	if got, want := Checksum(b[:n-8]), binary.LittleEndian.Uint64(b[n-8:]); got != want {
		t.Fatalf("checksum %016x, trailer %016x", got, want)
	}
}

func TestMaxLoadableVersion(t *testing.T) {
	for _, c := range []struct{ major, minor, want int }{{8, 0, 11}, {8, 1, 11}, {9, 0, 80}, {9, 1, 80}, {10, 0, 80}} {
		if got := MaxLoadableVersion(c.major, c.minor); got != c.want {
			t.Errorf("%d.%d: %d, want %d", c.major, c.minor, got, c.want)
		}
	}
}
