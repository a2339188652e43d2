package valkey_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
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

// FuzzReplyLimit checks the reply scanner of every connection (replylimit.go) against a
// reference parse of the whole input: fed in arbitrary pieces, it finds the same reply
// ends, refuses exactly what is malformed, accepts every reply within the budget and, for
// a reply over it, takes only bytes whose announced cost fits; read through the
// connection wrapper, the reader gets exactly the bytes the scanner took.
func FuzzReplyLimit(f *testing.F) {
	for _, s := range realSeeds(f, "resp2") {
		f.Add(s, []byte{7, 1, 200}, uint16(300))
	}
	for _, s := range []string{
		"+OK\r\n", "-ERR no\r\n:42\r\n", "$-1\r\n*-1\r\n*0\r\n$0\r\n\r\n", "*2\r\n$3\r\nabc\r\n*1\r\n:-7\r\n",
		"*3\r\n$20\r\n01234567890123456789\r\n$20\r\n01234567890123456789\r\n$20\r\n01234567890123456789\r\n",
		"$999999999999\r\n", "*99999999\r\n", "%1\r\n+a\r\n+b\r\n", "$-2\r\n", "+OK\n", "*1\r\n" + strings.Repeat("*1\r\n", 40) + ":1\r\n",
	} {
		f.Add([]byte(s), []byte{1, 2, 3}, uint16(100))
	}
	f.Fuzz(func(t *testing.T, data, split []byte, limit uint16) {
		pieces := make([]int, len(split))
		for i, p := range split {
			pieces[i] = int(p)
		}
		ref := referenceReplies(data)

		// No budget: the same ends, and an error exactly where the reference finds a
		// malformed reply.
		ends, taken, err := valkey.ScanReplies(data, pieces, 0)
		if !slices.Equal(ends, ref.ends()) {
			t.Fatalf("ends %v, reference %v", ends, ref.ends())
		}
		if ref.malformed != errors.Is(err, valkey.ErrMalformedReply) || (err != nil && !ref.malformed) {
			t.Fatalf("error %v, reference malformed: %v", err, ref.malformed)
		}
		if err == nil && taken < ref.lastEnd() {
			t.Fatalf("took %d bytes, %d are whole replies", taken, ref.lastEnd())
		}
		for i, r := range ref.replies {
			// The decoder of valkeytest agrees on every reply the scanner takes (but for
			// arrays over its own limit of elements).
			_, used, derr := valkeytest.DecodeRESP(data[r.start:r.end])
			if (derr != nil && !strings.Contains(derr.Error(), "bad RESP length")) || (derr == nil && used != r.end-r.start) {
				t.Fatalf("reply %d: valkeytest.DecodeRESP uses %d bytes of %d: %v", i, used, r.end-r.start, derr)
			}
		}

		// A budget: replies that fit are taken whole; the first that does not fails
		// with ErrReplyTooLarge before a byte whose cost would not fit.
		budget := int64(limit) + 1
		ends, taken, err = valkey.ScanReplies(data, pieces, budget)
		fit := 0
		for fit < len(ref.replies) && ref.replies[fit].cost() <= budget {
			fit++
		}
		if !slices.Equal(ends, ref.ends()[:fit]) {
			t.Fatalf("budget %d: ends %v, want %v", budget, ends, ref.ends()[:fit])
		}
		if fit < len(ref.replies) {
			over := ref.replies[fit]
			if !errors.Is(err, valkey.ErrReplyTooLarge) {
				t.Fatalf("budget %d: reply %d costs %d, error %v", budget, fit, over.cost(), err)
			}
			if taken >= over.end || over.costAt(taken) > budget {
				t.Fatalf("budget %d: took %d bytes of the reply [%d, %d) costing %d", budget, taken, over.start, over.end, over.costAt(taken))
			}
		}

		// Through the connection: the reader gets the bytes the scanner took.
		got, rerr := valkey.ReadLimited(data, pieces, budget)
		if !bytes.Equal(got, data[:taken]) {
			t.Fatalf("budget %d: the reader got %d bytes, the scanner took %d", budget, len(got), taken)
		}
		switch {
		case err == nil && !errors.Is(rerr, io.EOF),
			err != nil && !errors.Is(rerr, err) && !(errors.Is(err, valkey.ErrMalformedReply) && errors.Is(rerr, valkey.ErrMalformedReply)):
			t.Fatalf("budget %d: the reader's error %v, the scanner's %v", budget, rerr, err)
		}
	})
}

// refReply is one whole reply of the reference parse, with its cost checkpoints.
type refReply struct {
	start, end int
	// marks are (offset after a counted part, cost up to it), in order.
	marks [][2]int64
}

func (r refReply) cost() int64 { return r.costAt(r.end) }

// costAt is the cost of the parts of the reply that end at or before offset at.
func (r refReply) costAt(at int) int64 {
	var c int64
	for _, m := range r.marks {
		if m[0] <= int64(at) {
			c = m[1]
		}
	}
	return c
}

type refParse struct {
	replies []refReply
	// malformed: the input goes on with a reply that is not RESP2.
	malformed bool
}

func (p refParse) ends() []int {
	out := []int{}
	for _, r := range p.replies {
		out = append(out, r.end)
	}
	return out
}

func (p refParse) lastEnd() int {
	if len(p.replies) == 0 {
		return 0
	}
	return p.replies[len(p.replies)-1].end
}

// referenceReplies parses data, whole, as RESP2 replies one after the other, written
// from the protocol's description rather than incrementally: it stops at the end of the
// input, at an incomplete reply or at a malformed one. A reply costs its bytes, plus
// the announced length of each bulk string and 64 bytes per announced array element,
// counted at their length lines.
func referenceReplies(data []byte) refParse {
	var p refParse
	for pos := 0; pos < len(data); {
		r := refReply{start: pos}
		var cost int64
		end, status := refElement(data, pos, 0, &cost, &r.marks)
		if status == refIncomplete {
			break
		}
		if status == refMalformed {
			p.malformed = true
			break
		}
		r.end = end
		p.replies = append(p.replies, r)
		pos = end
	}
	return p
}

var unsignedRE, signedRE = regexp.MustCompile(`^[0-9]+$`), regexp.MustCompile(`^-[0-9]+$`)

type refStatus int

const (
	refOK refStatus = iota
	refIncomplete
	refMalformed
)

func refElement(b []byte, pos, depth int, cost *int64, marks *[][2]int64) (int, refStatus) {
	mark := func(at int, n int64) {
		if n < 0 || *cost > math.MaxInt64-n {
			*cost = math.MaxInt64
		} else {
			*cost += n
		}
		*marks = append(*marks, [2]int64{int64(at), *cost})
	}
	if pos >= len(b) {
		return 0, refIncomplete
	}
	lf := bytes.IndexByte(b[pos:], '\n')
	typ := b[pos]
	switch typ {
	case '+', '-':
		mark(pos+1, 1)
		if lf < 0 {
			return 0, refIncomplete
		}
		if lf < 2 || b[pos+lf-1] != '\r' {
			return 0, refMalformed
		}
		mark(pos+lf+1, int64(lf))
		return pos + lf + 1, refOK
	case ':', '$', '*':
	default:
		return 0, refMalformed
	}
	if lf < 0 {
		if len(b)-pos >= 24 {
			return 0, refMalformed
		}
		return 0, refIncomplete
	}
	line := string(b[pos : pos+lf+1])
	if len(line) > 24 || !strings.HasSuffix(line, "\r\n") {
		return 0, refMalformed
	}
	digits := line[1 : len(line)-2]
	valid := unsignedRE.MatchString(digits) || (typ == ':' && signedRE.MatchString(digits)) || (typ != ':' && digits == "-1")
	n, perr := strconv.ParseInt(digits, 10, 64)
	if !valid || perr != nil || (typ != ':' && n > 1<<62) {
		return 0, refMalformed
	}
	next := pos + len(line)
	switch typ {
	case ':':
		mark(next, int64(len(line)))
		return next, refOK
	case '$':
		if n < 0 {
			mark(next, int64(len(line)))
			return next, refOK
		}
		mark(next, int64(len(line))+n+2)
		if int64(len(b)-next) < n+2 {
			return 0, refIncomplete
		}
		return next + int(n) + 2, refOK
	}
	elements := int64(-1)
	if n <= math.MaxInt64/64 {
		elements = max(n, 0) * 64
	}
	if elements < 0 || int64(len(line)) > math.MaxInt64-elements {
		mark(next, -1)
	} else {
		mark(next, int64(len(line))+elements)
	}
	if n > 0 && depth >= 32 {
		return 0, refMalformed
	}
	for range max(n, 0) {
		end, status := refElement(b, next, depth+1, cost, marks)
		if status != refOK {
			return 0, status
		}
		next = end
	}
	return next, refOK
}
