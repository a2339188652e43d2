package valkey_test

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// The seed corpus of each fuzz test is real server output captured by the
// integration tests (testdata/real, refreshed with -capture) from Valkey
// 8.0, 8.1 and 9.1.

// checkRanges fails on ranges outside the slot space or not normalised.
func checkRanges(t *testing.T, what string, rs []valkey.SlotRange) {
	t.Helper()
	for i, r := range rs {
		if !r.Valid() {
			t.Fatalf("%s: invalid range %v", what, r)
		}
		if i > 0 && r.Start <= rs[i-1].End+1 {
			t.Fatalf("%s: ranges not normalised: %v", what, rs)
		}
	}
}

func FuzzParseClusterNodes(f *testing.F) {
	for _, s := range realSeeds(f, "cluster-nodes") {
		f.Add(string(s))
	}
	f.Fuzz(func(t *testing.T, s string) {
		nodes, err := valkey.ParseClusterNodes(s)
		if err != nil {
			return
		}
		for _, n := range nodes {
			checkRanges(t, "slots", n.Slots)
			if n.Port < 0 || n.Port > 65535 || n.BusPort < 0 || n.BusPort > 65535 || n.ID == "" {
				t.Fatalf("bad node %+v", n)
			}
			for slot, id := range mergeMaps(n.Importing, n.Migrating) {
				if slot < 0 || slot >= valkey.SlotCount || id == "" {
					t.Fatalf("bad migration entry %d -> %q", slot, id)
				}
			}
		}
	})
}

func mergeMaps(a, b map[int]string) map[int]string {
	out := map[int]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func FuzzParseInfo(f *testing.F) {
	for _, s := range realSeeds(f, "info-") {
		f.Add(string(s))
	}
	f.Fuzz(func(t *testing.T, s string) {
		info := valkey.ParseInfo(s)
		for name, sec := range info.Sections {
			for k := range sec {
				if k == "" || strings.ContainsAny(k, "\n:") || strings.Contains(name, "\n") {
					t.Fatalf("bad key %q in section %q", k, name)
				}
			}
		}
		r := valkey.ParseReplication(info)
		if r.Role == "master" || r.Role == "slave" {
			t.Fatalf("role %q not normalised", r.Role)
		}
		if v, err := valkey.VersionFromInfo(info); err == nil && (v.Major < 0 || v.Minor < 0 || v.Patch < 0) {
			t.Fatalf("negative version %v", v)
		}
	})
}

func FuzzParseClusterInfo(f *testing.F) {
	for _, s := range realSeeds(f, "cluster-info") {
		f.Add(string(s))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for k, v := range valkey.ParseClusterInfo(s) {
			if k == "" || strings.ContainsAny(k, "\n:") || strings.Contains(v, "\n") {
				t.Fatalf("bad pair %q:%q", k, v)
			}
		}
	})
}

func FuzzParseClusterShards(f *testing.F) {
	for _, b := range realSeeds(f, "cluster-shards") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tree, _, err := valkeytest.DecodeRESP(b)
		if err != nil {
			return
		}
		shards, err := valkey.ParseClusterShards(tree)
		if err != nil {
			return
		}
		for _, sh := range shards {
			checkRanges(t, "shard slots", sh.Slots)
			for _, n := range sh.Nodes {
				if n.ID == "" || n.Port < 0 || n.Port > 65535 || n.TLSPort < 0 || n.TLSPort > 65535 {
					t.Fatalf("bad shard node %+v", n)
				}
			}
		}
	})
}

func FuzzParseACLUser(f *testing.F) {
	for _, b := range realSeeds(f, "acl-getuser") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tree, _, err := valkeytest.DecodeRESP(b)
		if err != nil {
			return
		}
		u, err := valkey.ParseACLUser(tree)
		if err == nil && u.Enabled != containsWord(u.Flags, "on") {
			t.Fatalf("Enabled %v disagrees with flags %v", u.Enabled, u.Flags)
		}
	})
}

func containsWord(ws []string, w string) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

func FuzzParseSlotMigrations(f *testing.F) {
	for _, b := range realSeeds(f, "getslotmigrations") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tree, _, err := valkeytest.DecodeRESP(b)
		if err != nil {
			return
		}
		jobs, err := valkey.ParseSlotMigrations(tree)
		if err != nil {
			return
		}
		for _, j := range jobs {
			checkRanges(t, "migration slots", j.Slots)
		}
	})
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range realSeeds(f, "info-server") {
		info := valkey.ParseInfo(string(s))
		f.Add(info.Get("valkey_version"))
		f.Add(info.Get("redis_version"))
	}
	f.Add("9.0.0-rc1")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := valkey.ParseVersion(s)
		if err != nil {
			return
		}
		back, err := valkey.ParseVersion(v.String())
		if err != nil || back != v {
			t.Fatalf("%q -> %v -> %v, %v", s, v, back, err)
		}
	})
}

func FuzzParseRanges(f *testing.F) {
	for _, s := range realSeeds(f, "cluster-nodes") {
		nodes, _ := valkey.ParseClusterNodes(string(s))
		for _, n := range nodes {
			f.Add(valkey.FormatRanges(n.Slots))
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := valkey.ParseRanges(s)
		if err != nil {
			return
		}
		for _, r := range rs {
			if !r.Valid() {
				t.Fatalf("invalid range %v from %q", r, s)
			}
		}
		back, err := valkey.ParseRanges(valkey.FormatRanges(rs))
		if err != nil || len(back) != len(rs) {
			t.Fatalf("round trip of %v: %v %v", rs, back, err)
		}
	})
}

// FuzzRenderConfig checks that no user value can add a directive or change
// a key: every rendered line reads back as the key and the exact value.
func FuzzRenderConfig(f *testing.F) {
	f.Add("syslog-ident", "a \"b\" \\ c\nport 1")
	f.Add("save", "900 1 300 10")
	f.Add("port", "1")
	f.Add("x y", "z")
	f.Fuzz(func(t *testing.T, key, value string) {
		conf := valkey.RenderConfig(valkey.ServerConfig{Port: 1, DataDir: "/d", User: map[string]string{key: value}})
		lines := strings.Split(strings.TrimSuffix(string(conf), "\n"), "\n")
		var last []string
		for _, line := range lines {
			args, err := configLine(line)
			if err != nil {
				t.Fatalf("line %q does not parse: %v", line, err)
			}
			if len(args) > 0 {
				last = args
			}
		}
		rendered := valkeyconf.ValidName(key) && !valkeyconf.Owned(key)
		if rendered && (len(last) != 2 || last[0] != strings.ToLower(key) || last[1] != value) {
			t.Fatalf("user pair %q=%q read back as %q", key, value, last)
		}
		if !rendered && !strings.HasSuffix(string(conf), "# User config.\n") {
			t.Fatalf("refused key %q was rendered", key)
		}
	})
}

// FuzzPlanMoves builds an ownership from the input and checks the plan's
// invariants: targets end within one slot of each other, non-targets empty,
// nothing lost.
func FuzzPlanMoves(f *testing.F) {
	f.Add([]byte{3, 5, 0, 0, 1, 0, 2, 0}, uint8(5))
	f.Add([]byte{5, 2, 0, 3, 1, 9, 4, 200}, uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, nTargets uint8) {
		current := map[string][]valkey.SlotRange{}
		owners := []string{"a", "b", "c", "d", "e", "f"}
		for i := 0; i+4 <= len(data) && i < 64; i += 4 {
			start := int(binary.BigEndian.Uint16(data[i:])) % valkey.SlotCount
			end := start + int(data[i+2])*int(data[i+3]%64)
			owner := owners[int(data[i+2])%len(owners)]
			current[owner] = append(current[owner], valkey.SlotRange{Start: start, End: end})
		}
		targets := owners[:int(nTargets)%len(owners)+1]
		// Make claims disjoint so ApplyMoves and PlanMoves agree.
		var claimed []valkey.SlotRange
		for _, o := range owners {
			current[o] = valkey.SubtractRanges(current[o], claimed)
			claimed = valkey.MergeRanges(claimed, current[o])
		}
		after := valkey.ApplyMoves(current, valkey.PlanMoves(current, targets))
		checkBalanced(t, current, after, targets)
	})
}
