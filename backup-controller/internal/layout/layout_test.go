package layout

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeManifest(t *testing.T) {
	sum := strings.Repeat("0f", 32)
	shard := func(i int32) ManifestShard {
		return ManifestShard{Index: i, Object: ShardObject(i), Size: 10, SHA256: sum}
	}
	for _, c := range []struct {
		name   string
		shards []ManifestShard
		want   string // in the error; "" for a valid manifest
	}{
		{name: "shards 0..n-1 in any order", shards: []ManifestShard{shard(1), shard(0), shard(2)}},
		{name: "no shard", want: "names 0 shards"},
		{name: "a gap", shards: []ManifestShard{shard(0), shard(2)}, want: "index 2 is not between 0 and 1"},
		{name: "twice", shards: []ManifestShard{shard(0), shard(0)}, want: "index 0 appears twice"},
		{name: "an object outside the folder", shards: []ManifestShard{{Index: 0, Object: "../x", SHA256: sum}}, want: "not a plain name"},
		{name: "a negative size", shards: []ManifestShard{{Index: 0, Object: "o", Size: -1, SHA256: sum}}, want: "negative"},
		{name: "a short digest", shards: []ManifestShard{{Index: 0, Object: "o", SHA256: "abc"}}, want: "not 64 hex digits"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := Manifest{Format: ManifestFormat, Shards: c.shards}
			body, err := EncodeManifest(m)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := DecodeManifest(body); err != nil {
					t.Fatalf("decode: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("encode: %v, want %q", err, c.want)
			}
			raw, _ := json.Marshal(m)
			if _, err := DecodeManifest(raw); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("decode: %v, want ErrCorrupt with %q", err, c.want)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	m := Manifest{Shards: []ManifestShard{
		{Index: 2, Size: 5, Keys: 1, RDBVersion: 80, ValkeyVersion: "9.1.0"},
		{Index: 0, Size: 9, Keys: 2, RDBVersion: 11, ValkeyVersion: "8.0.1"},
		{Index: 1, Size: 7, Keys: 3, RDBVersion: 80, ValkeyVersion: "9.1.2"},
	}}
	want := Summary{Shards: 3, Keys: 6, Size: 21, MaxObjectSize: 9, RDBVersion: 80, RDBShard: 1, ValkeyVersion: "9.1.2"}
	if got := m.Summary(); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
