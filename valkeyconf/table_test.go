package valkeyconf

import (
	"slices"
	"strings"
	"testing"
)

var (
	v80 = Version{Major: 8}
	v81 = Version{Major: 8, Minor: 1}
	v90 = Version{Major: 9}
	v91 = Version{Major: 9, Minor: 1}
)

func TestTypeTakes(t *testing.T) {
	for _, tc := range []struct {
		key   string
		v     Version
		good  []string
		bad   []string
		kind  Kind
		words []string // in the type's description
	}{
		{"appendonly", v80, []string{"yes", "no", "YES", "No"}, []string{"", "true", "1", "on", "yes "},
			KindBool, []string{"yes or no"}},
		{"active-defrag-cycle-max", v80, []string{"1", "25", "99"}, []string{"0", "100", "-1", "+5", "05", "5.0", "lots", ""},
			KindInteger, []string{"a whole number from 1 to 99"}},
		{"commandlog-execution-slower-than", v81, []string{"-1", "0", "9223372036854775807"}, []string{"-2", "9223372036854775808", "-0"},
			KindInteger, []string{"a whole number of -1 or more"}},
		{"io-threads", v80, []string{"1", "128"}, []string{"129", "0"}, KindInteger, []string{"from 1 to 128"}},
		{"io-threads", v91, []string{"256"}, []string{"257"}, KindInteger, []string{"from 1 to 256"}},
		{"maxmemory", v80, []string{"0", "1024", "1gb", "1GB", "100mb", "100m", "5k", "5kb", "7b", "18446744073709551615"},
			[]string{"lots", "", "gb", "1tb", "-1", "1.5gb", "1 gb", "18446744073709551616", "17179869184gb"},
			KindMemory, []string{"a memory size", "100mb", "of 0 bytes or more"}},
		{"client-query-buffer-limit", v80, []string{"1mb", "1048576", "2gb"}, []string{"1048575", "1m"},
			KindMemory, []string{"of 1048576 bytes or more"}},
		{"maxmemory-clients", v80, []string{"0", "1gb", "0%", "5%", "100%"}, []string{"101%", "-1%", "05%", "%", "lots"},
			KindMemoryOrPercent, []string{"a memory size", "a percentage from 0% to 100%"}},
		{"maxmemory-policy", v80, []string{"noeviction", "allkeys-lru", "ALLKEYS-LFU"}, []string{"", "lru", "noeviction allkeys-lru"},
			KindEnum, []string{"one of volatile-lru,", "noeviction"}},
		{"log-format", v81, []string{"legacy", "logfmt"}, []string{"json"}, KindEnum, []string{"one of legacy, logfmt"}},
		{"log-format", v91, []string{"json"}, []string{"xml"}, KindEnum, []string{"logfmt, json"}},
		{"shutdown-on-sigterm", v80, []string{"default", "nosave force", "NOW"}, []string{"failover", "", "now  force", "now,force"},
			KindFlags, []string{"one or more of default, save, nosave, now, force, separated by single spaces"}},
		{"shutdown-on-sigterm", v91, []string{"failover", "failover force"}, []string{"takeover"}, KindFlags, []string{"failover"}},
		{"unixsocketperm", v80, []string{"0", "700", "777"}, []string{"800", "1000", "-1", "rwx"}, KindOctal, []string{"an octal number from 0 to 777"}},
		{"dbfilename", v80, []string{"dump.rdb", "x", ""}, nil, KindString, []string{"text"}},
		{"save", v80, []string{"", "3600 1 300 100", "anything"}, nil, KindOther, []string{"own syntax"}},
	} {
		typ, ok := TypeOf(tc.key, tc.v)
		if !ok {
			t.Errorf("%s on %v: not in the table", tc.key, tc.v)
			continue
		}
		if typ.Kind != tc.kind {
			t.Errorf("%s on %v: kind %d, want %d", tc.key, tc.v, typ.Kind, tc.kind)
		}
		for _, v := range tc.good {
			if !typ.Takes(v) {
				t.Errorf("%s on %v refuses %q; the server takes it", tc.key, tc.v, v)
			}
		}
		for _, v := range tc.bad {
			if typ.Takes(v) {
				t.Errorf("%s on %v takes %q", tc.key, tc.v, v)
			}
		}
		for _, w := range tc.words {
			if !strings.Contains(typ.String(), w) {
				t.Errorf("%s on %v is described as %q, without %q", tc.key, tc.v, typ.String(), w)
			}
		}
	}
}

func TestHasAndVersions(t *testing.T) {
	for _, tc := range []struct {
		key                string
		has80, has81, has9 bool
		describe           string
	}{
		{"maxmemory", true, true, true, "every supported Valkey"},
		{"MaxMemory", true, true, true, "every supported Valkey"},
		{"cluster-manual-failover-timeout", false, true, true, "Valkey 8.1 and later"},
		{"cluster-databases", false, false, true, "Valkey 9.0 and later"},
		// Only 8.0 lists it; 8.1 and 9.1 take it at start and ignore it.
		{"io-threads-do-reads", true, true, true, "every supported Valkey"},
		{"no-such-key", false, false, false, "no supported Valkey"},
	} {
		if got := Has(tc.key, v80); got != tc.has80 {
			t.Errorf("Has(%s, 8.0) = %v", tc.key, got)
		}
		if got := Has(tc.key, v81); got != tc.has81 {
			t.Errorf("Has(%s, 8.1) = %v", tc.key, got)
		}
		// 9.0 was not measured: it counts as 9.1, the first measured 9.x.
		if got := Has(tc.key, v90); got != tc.has9 {
			t.Errorf("Has(%s, 9.0) = %v", tc.key, got)
		}
		if got := Known(tc.key); got != (tc.has80 || tc.has81 || tc.has9) {
			t.Errorf("Known(%s) = %v", tc.key, got)
		}
		if got := DescribeVersions(KeyVersions(tc.key)); got != tc.describe {
			t.Errorf("DescribeVersions(KeyVersions(%s)) = %q, want %q", tc.key, got, tc.describe)
		}
	}
	if got := DescribeVersions(Takers("shutdown-on-sigterm", "failover")); got != "Valkey 9.0 and later" {
		t.Errorf("failover is taken by %q", got)
	}
	if got := DescribeVersions([]Version{Measured[0], Measured[1]}); got != "only Valkey 8.0, 8.1" {
		t.Errorf("8.0 and 8.1 alone are described as %q", got)
	}
}

func TestMeasuredIndex(t *testing.T) {
	for _, tc := range []struct {
		v    Version
		want Version
	}{
		{Version{}, Measured[0]},
		{Version{Major: 8, Patch: 7}, Measured[0]},
		{Version{Major: 8, Minor: 1, Patch: 4}, Measured[1]},
		{Version{Major: 8, Minor: 2}, Measured[1]},
		{Version{Major: 9}, Measured[2]},
		{Version{Major: 9, Minor: 3}, Measured[2]},
		{Version{Major: 10}, Measured[2]},
		{Version{Major: 7, Minor: 2}, Measured[0]},
	} {
		if got := Measured[measuredIndex(tc.v)]; got != tc.want {
			t.Errorf("a server of %v reads the table of %v, want %v", tc.v, got, tc.want)
		}
	}
}

// TestLiveKeysAreInTheTable keeps the one overlay on the generated table keyed by its
// names: a live key that no measured server lists would never be applied.
func TestLiveKeysAreInTheTable(t *testing.T) {
	if !slices.IsSorted(liveKeys) {
		t.Error("liveKeys is not sorted")
	}
	for _, k := range liveKeys {
		listed := false
		for i := range Measured {
			if e, ok := on(k, i); ok && !e.unlisted {
				listed = true
				if !e.hasDef {
					t.Errorf("live key %s has no default on %v", k, Measured[i])
				}
			}
		}
		if !listed || Owned(k) || Normalize(k) != k {
			t.Errorf("live key %s: listed by a measured server %v, owned %v", k, listed, Owned(k))
		}
	}
	if _, ok := UnsetValue("cluster-slot-migration-log-max-len", v81); ok {
		t.Error("a key 8.1 lacks has an unset value on 8.1")
	}
	if v, ok := UnsetValue("cluster-slot-migration-log-max-len", v91); !ok || v != "1000" {
		t.Errorf("UnsetValue(cluster-slot-migration-log-max-len, 9.1) = %q, %v", v, ok)
	}
	if v, ok := UnsetValue("cluster-node-timeout", v80); !ok || v != "5000" {
		t.Errorf("the operator's default is the unset value: %q, %v", v, ok)
	}
}
