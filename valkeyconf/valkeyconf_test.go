package valkeyconf

import (
	"slices"
	"testing"
	"time"
)

func TestNormalized(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]string
		want map[string]string
	}{
		{"nil", nil, nil},
		{"lower case is kept", map[string]string{"maxmemory": "1gb"}, map[string]string{"maxmemory": "1gb"}},
		{"any spelling becomes one key", map[string]string{"Cluster-Node-Timeout": "60000", "MaxMemory": "1gb"},
			map[string]string{"cluster-node-timeout": "60000", "maxmemory": "1gb"}},
		{"two spellings: the one sorting last wins, as in the rendered file",
			map[string]string{"HZ": "20", "hz": "10"}, map[string]string{"hz": "10"}},
		{"invalid names are dropped", map[string]string{"bad key": "x", "hz": "10"}, map[string]string{"hz": "10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Normalized(tc.in)
			if len(got) != len(tc.want) || (got == nil) != (tc.want == nil) {
				t.Fatalf("Normalized(%v) = %v, want %v", tc.in, got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("Normalized(%v)[%s] = %q, want %q", tc.in, k, got[k], v)
				}
			}
		})
	}
}

func TestTimings(t *testing.T) {
	for _, tc := range []struct {
		name        string
		config      map[string]string
		node, mft   time.Duration
		minimum     int64
		gracePeriod int64
	}{
		{"defaults: the operator's node timeout, Valkey's failover timeout", nil, 5 * time.Second, 5 * time.Second, 15, 30},
		{"the user's values", map[string]string{"cluster-node-timeout": "2000", "cluster-manual-failover-timeout": "30000"},
			2 * time.Second, 30 * time.Second, 40, 40},
		{"any spelling counts (the server reads it so)", map[string]string{"Cluster-Node-Timeout": "60000", "CLUSTER-MANUAL-FAILOVER-TIMEOUT": "25500"},
			60 * time.Second, 25500 * time.Millisecond, 36, 36},
		{"not a number: the default", map[string]string{"cluster-node-timeout": "soon", "cluster-manual-failover-timeout": "-1"},
			5 * time.Second, 5 * time.Second, 15, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NodeTimeout(tc.config); got != tc.node {
				t.Errorf("NodeTimeout = %s, want %s", got, tc.node)
			}
			if got := ManualFailoverTimeout(tc.config); got != tc.mft {
				t.Errorf("ManualFailoverTimeout = %s, want %s", got, tc.mft)
			}
			if got := MinimumGracePeriodSeconds(tc.config); got != tc.minimum {
				t.Errorf("MinimumGracePeriodSeconds = %d, want %d", got, tc.minimum)
			}
			if got := GracePeriodSeconds(nil, tc.config); got != tc.gracePeriod {
				t.Errorf("GracePeriodSeconds = %d, want %d", got, tc.gracePeriod)
			}
			explicit := int64(7)
			if got := GracePeriodSeconds(&explicit, tc.config); got != 7 {
				t.Errorf("an explicit grace period is kept: got %d", got)
			}
		})
	}
}

func TestOwnedAndLive(t *testing.T) {
	for _, tc := range []struct {
		key            string
		owned          bool
		live80, live81 bool
	}{
		{"port", true, false, false},
		{"TLS-Port", true, false, false},
		{"cluster-announce-ip", true, false, false},
		{"maxmemory", false, true, true},
		{"MaxMemory", false, true, true},
		{"cluster-manual-failover-timeout", false, false, true},
		{"io-threads", false, false, false},
	} {
		if got := Owned(tc.key); got != tc.owned {
			t.Errorf("Owned(%q) = %v, want %v", tc.key, got, tc.owned)
		}
		if got := Live(tc.key, Version{Major: 8}); got != tc.live80 {
			t.Errorf("Live(%q, 8.0) = %v, want %v", tc.key, got, tc.live80)
		}
		if got := Live(tc.key, Version{Major: 8, Minor: 1}); got != tc.live81 {
			t.Errorf("Live(%q, 8.1) = %v, want %v", tc.key, got, tc.live81)
		}
	}
	if !slices.IsSorted(LiveKeys(Version{Major: 9, Minor: 1})) {
		t.Error("LiveKeys is not sorted")
	}
	if Live("maxmemory", Version{}) != Live("maxmemory", Oldest) {
		t.Error("an unknown version does not count as the oldest")
	}
}

func TestDefaults(t *testing.T) {
	names := func(ds []Default) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Key+" "+d.Value)
		}
		return out
	}
	if got := names(Defaults(Version{Major: 8})); slices.Contains(got, "shutdown-on-sigterm failover") {
		t.Errorf("8.0 gets a default it refuses: %v", got)
	}
	if got := names(Defaults(Version{Major: 9, Minor: 1})); !slices.Contains(got, "shutdown-on-sigterm failover") {
		t.Errorf("9.1 lacks shutdown-on-sigterm failover: %v", got)
	}
}

func TestSinceAndRequired(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		want       Version
	}{
		{"maxmemory", "1gb", Version{}},
		{"Cluster-Manual-Failover-Timeout", "10000", Version{Major: 8, Minor: 1}},
		{"shutdown-on-sigterm", "default", Version{}},
		{"shutdown-on-sigterm", "FAILOVER force", Version{Major: 9}},
		{"cluster-announce-client-port", "30001", Version{Major: 9}},
		{"log-format", "logfmt", Version{Major: 8, Minor: 1}},
		{"log-format", "JSON", Version{Major: 9}},
		{"io-threads", "200", Version{Major: 8, Minor: 1}}, // 8.0 takes at most 128
		{"dynamic-hz", "yes", Version{}},                   // 8.1 and 9.1 take it without listing it
		{"no-such-key", "1", Version{}},
		{"maxmemory", "lots", Version{}},
	} {
		if got := Since(tc.key, tc.value); got != tc.want {
			t.Errorf("Since(%s, %s) = %v, want %v", tc.key, tc.value, got, tc.want)
		}
	}
	v, keys := Required(map[string]string{"maxmemory": "1gb", "log-format": "logfmt", "cluster-manual-failover-timeout": "10000"})
	if v != (Version{Major: 8, Minor: 1}) || len(keys) != 2 || keys[0] != "cluster-manual-failover-timeout" || keys[1] != "log-format" {
		t.Errorf("Required = %v %v", v, keys)
	}
	v, keys = Required(map[string]string{"log-format": "logfmt", "shutdown-on-sigterm": "failover"})
	if v != (Version{Major: 9}) || len(keys) != 1 || keys[0] != "shutdown-on-sigterm" {
		t.Errorf("Required = %v %v, want 9.0 for shutdown-on-sigterm", v, keys)
	}
	// 8.1 has log-format, but only 9.1 takes json (measured on the real servers).
	v, keys = Required(map[string]string{"log-format": "json"})
	if v != (Version{Major: 9}) || len(keys) != 1 {
		t.Errorf("Required(log-format json) = %v %v, want 9.0", v, keys)
	}
	if v, keys := Required(map[string]string{"maxmemory": "1gb"}); !v.IsZero() || keys != nil {
		t.Errorf("Required of 8.0 keys = %v %v", v, keys)
	}
}

func TestImageVersion(t *testing.T) {
	for _, tc := range []struct {
		image string
		v     Version
		known int
	}{
		{"valkey/valkey:8.0.1", Version{8, 0, 1}, 3},
		{"valkey/valkey:8.1-alpine", Version{8, 1, 0}, 2},
		{"registry.example.com:5000/mirror/valkey:v9", Version{9, 0, 0}, 1},
		{"valkey/valkey:latest", Version{}, 0},
		{"valkey/valkey", Version{}, 0},
		{"registry.example.com:5000/valkey", Version{}, 0},
		{"valkey/valkey@sha256:0123456789abcdef", Version{}, 0},
		{"valkey/valkey:9.1.2@sha256:0123456789abcdef", Version{9, 1, 2}, 3},
	} {
		v, known := ImageVersion(tc.image)
		if v != tc.v || known != tc.known {
			t.Errorf("ImageVersion(%s) = %v, %d; want %v, %d", tc.image, v, known, tc.v, tc.known)
		}
	}
	for _, tc := range []struct {
		image string
		need  Version
		want  bool
	}{
		{"valkey/valkey:8.0.1", Version{Major: 8, Minor: 1}, true},
		{"valkey/valkey:8.1.1", Version{Major: 8, Minor: 1}, false},
		{"valkey/valkey:8", Version{Major: 8, Minor: 1}, false}, // 8.x may be 8.1
		{"valkey/valkey:8", Version{Major: 9}, true},
		{"valkey/valkey:latest", Version{Major: 9}, false},
		{"valkey/valkey:8.0.1", Version{}, false},
	} {
		v, known := ImageVersion(tc.image)
		if got := SurelyLacks(v, known, tc.need); got != tc.want {
			t.Errorf("SurelyLacks(%s, %v) = %v, want %v", tc.image, tc.need, got, tc.want)
		}
	}
}

func TestRefusedKeys(t *testing.T) {
	seen := map[string]bool{}
	for i, r := range RefusedKeys {
		if seen[r.Key] || Normalize(r.Key) != r.Key || r.Why == "" {
			t.Errorf("entry %d (%q): keys must be unique, normalised and have a reason", i, r.Key)
		}
		seen[r.Key] = true
		if i > 0 && RefusedKeys[i-1].Key > r.Key {
			t.Errorf("RefusedKeys is not sorted at %q", r.Key)
		}
	}
	for _, tc := range []struct {
		key          string
		refused, own bool
	}{
		{"loadmodule", true, false},
		{"LoadModule", true, false},
		{"enable-debug-command", true, false},
		{"enable-module-command", true, false},
		{"tls-port", true, true},
		{"maxmemory", false, false},
	} {
		r, ok := Refused(tc.key)
		if ok != tc.refused || r.Owned != tc.own || Owned(tc.key) != tc.own {
			t.Errorf("Refused(%q) = %v, %v; want refused %v, owned %v", tc.key, r, ok, tc.refused, tc.own)
		}
	}
	if !slices.Contains(UnsafeKeys, "loadmodule") || slices.Contains(OwnedKeys, "loadmodule") {
		t.Errorf("loadmodule is refused as unsafe, not owned: unsafe %v", UnsafeKeys)
	}
}
