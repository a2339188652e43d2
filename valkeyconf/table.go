package valkeyconf

import (
	"fmt"
	"math"
	"math/bits"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Kind is the kind of value a configuration key takes, as the server's config parser
// reads it when a member starts.
type Kind uint8

// The kinds of value (hack/devtools/configtable tells them apart on the real servers).
const (
	// KindString takes any text.
	KindString Kind = iota
	// KindBool takes yes or no.
	KindBool
	// KindInteger takes a whole number from Min to Max.
	KindInteger
	// KindOctal takes an octal number from Min to Max (unixsocketperm).
	KindOctal
	// KindMemory takes a number of bytes, with an optional unit, from Min to Max.
	KindMemory
	// KindMemoryOrPercent takes a memory size, or a percentage up to MaxPercent.
	KindMemoryOrPercent
	// KindEnum takes one of Values.
	KindEnum
	// KindFlags takes one or more of Values, separated by single spaces.
	KindFlags
	// KindOther has a syntax of its own (save, client-output-buffer-limit, ...), which the
	// operator leaves to the server.
	KindOther
)

// Type is what one key takes on one server.
type Type struct {
	Kind Kind
	// Min and Max bound the numbers of KindInteger, KindOctal, KindMemory and
	// KindMemoryOrPercent (Max may be up to 2^64-1 for an unsigned key).
	Min int64
	Max uint64
	// MaxPercent bounds the percentage of KindMemoryOrPercent.
	MaxPercent int64
	// Values of KindEnum and KindFlags, as the server lists them (it reads them in any
	// case).
	Values []string
}

// versionSet is a set of the servers in Measured: bit i for Measured[i].
type versionSet uint8

// keyOn is a key's type and Valkey's default on the measured servers of in.
type keyOn struct {
	in versionSet
	t  Type
	// def is what CONFIG GET says on a server started with no config; hasDef is false
	// for unlisted keys and for the keys the measurement itself sets (port, unixsocket,
	// dir).
	def    string
	hasDef bool
	// unlisted is true for a key the server takes at start but neither lists with
	// CONFIG GET * nor changes with CONFIG SET (hidden, or deprecated and ignored).
	unlisted bool
}

// measuredIndex is the measured server whose table stands for a server of version v:
// the one of the same major.minor; else the oldest newer one of the same major (a key
// that 9.1 has and 8.1 lacks counts from 9.0, the first release after 8.1); else the
// newest older one; else the oldest. A zero Version counts as Oldest.
func measuredIndex(v Version) int {
	v = orOldest(v)
	older := -1
	for i, m := range Measured {
		switch {
		case m.Major == v.Major && m.Minor == v.Minor:
			return i
		case m.Major == v.Major && m.Minor > v.Minor:
			return i
		case !v.AtLeast(m.Major, m.Minor):
			// m is newer than v, of another major.
		default:
			older = i
		}
	}
	if older < 0 {
		return 0
	}
	return older
}

// MeasuredFor returns the measured server whose table stands for a server of version v
// (see measuredIndex).
func MeasuredFor(v Version) Version { return Measured[measuredIndex(v)] }

// firstRelease is the first release that the measured server i stands for: its
// major.minor, or major.0 when it is the first measured server of its major.
func firstRelease(i int) Version {
	m := Measured[i]
	if i == 0 || Measured[i-1].Major < m.Major {
		return Version{Major: m.Major}
	}
	return Version{Major: m.Major, Minor: m.Minor}
}

// on returns key's entry (key given normalised) for the measured server i.
func on(key string, i int) (keyOn, bool) {
	for _, e := range keyTable[key] {
		if e.in&(1<<i) != 0 {
			return e, true
		}
	}
	return keyOn{}, false
}

// Keys returns every key some measured server takes when it starts, sorted.
func Keys() []string {
	out := make([]string, 0, len(keyTable))
	for k := range keyTable {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Known reports whether some measured server takes key (any spelling) when it starts.
func Known(key string) bool {
	_, ok := keyTable[Normalize(key)]
	return ok
}

// Has reports whether a server of version v takes key (any spelling) when it starts.
func Has(key string, v Version) bool {
	_, ok := on(Normalize(key), measuredIndex(v))
	return ok
}

// Listed reports whether a server of version v lists key (any spelling) with CONFIG
// GET *; a key it takes without listing is hidden or deprecated.
func Listed(key string, v Version) bool {
	e, ok := on(Normalize(key), measuredIndex(v))
	return ok && !e.unlisted
}

// TypeOf returns what key (any spelling) takes on a server of version v.
func TypeOf(key string, v Version) (Type, bool) {
	e, ok := on(Normalize(key), measuredIndex(v))
	return e.t, ok
}

// Takers returns the measured servers that take key (any spelling) with value when they
// start, oldest first.
func Takers(key, value string) []Version {
	k := Normalize(key)
	var out []Version
	for i, m := range Measured {
		if e, ok := on(k, i); ok && e.t.Takes(value) {
			out = append(out, m)
		}
	}
	return out
}

// Since returns the first version that takes key with value, when every measured
// server from there on takes it and an older one does not (zero: every supported
// version takes it, or the table does not say: an unknown key, a value no server takes
// or one that a newer server refuses, which validation reports on its own).
func Since(key, value string) Version {
	k := Normalize(key)
	first := -1
	for i := range Measured {
		e, ok := on(k, i)
		taken := ok && e.t.Takes(value)
		switch {
		case taken && first < 0:
			first = i
		case !taken && first >= 0:
			return Version{}
		}
	}
	if first <= 0 {
		return Version{}
	}
	return firstRelease(first)
}

// DescribeVersions says which releases the measured servers vs stand for: "Valkey 9.0
// and later" when vs are the newest measured servers, else each one's major.minor.
func DescribeVersions(vs []Version) string {
	if len(vs) == 0 {
		return "no supported Valkey"
	}
	first := -1
	for i, m := range Measured {
		if m == vs[0] {
			first = i
		}
	}
	if first >= 0 && len(Measured)-first == len(vs) {
		r := firstRelease(first)
		if first == 0 {
			return "every supported Valkey"
		}
		return fmt.Sprintf("Valkey %d.%d and later", r.Major, r.Minor)
	}
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = fmt.Sprintf("%d.%d", v.Major, v.Minor)
	}
	return "only Valkey " + strings.Join(names, ", ")
}

// KeyVersions returns the measured servers that take key (any spelling) with some
// value, oldest first.
func KeyVersions(key string) []Version {
	k := Normalize(key)
	var out []Version
	for i, m := range Measured {
		if _, ok := on(k, i); ok {
			out = append(out, m)
		}
	}
	return out
}

// Takes reports whether a server reads value as this type at start.
func (t Type) Takes(value string) bool {
	switch t.Kind {
	case KindBool:
		return strings.EqualFold(value, "yes") || strings.EqualFold(value, "no")
	case KindInteger:
		n, ok := parseInteger(value)
		return ok && t.inRange(n)
	case KindOctal:
		n, err := strconv.ParseInt(value, 8, 64)
		return err == nil && value[0] != '-' && value[0] != '+' && t.inRange(n)
	case KindMemory:
		n, ok := parseMemory(value)
		return ok && t.inRangeU(n)
	case KindMemoryOrPercent:
		if p, ok := strings.CutSuffix(value, "%"); ok {
			n, ok := parseInteger(p)
			return ok && n >= 0 && n <= t.MaxPercent
		}
		n, ok := parseMemory(value)
		return ok && t.inRangeU(n)
	case KindEnum:
		return t.oneOf(value)
	case KindFlags:
		for _, f := range strings.Split(value, " ") {
			if !t.oneOf(f) {
				return false
			}
		}
		return true
	}
	return true
}

func (t Type) oneOf(v string) bool {
	for _, e := range t.Values {
		if strings.EqualFold(v, e) {
			return true
		}
	}
	return false
}

func (t Type) inRange(n int64) bool {
	return n >= t.Min && (n < 0 || uint64(n) <= t.Max)
}

func (t Type) inRangeU(n uint64) bool {
	return n <= t.Max && (t.Min <= 0 || n >= uint64(t.Min))
}

// integerRe is a whole number as the server's string2ll reads it: no sign but '-', no
// leading zero, no space.
var integerRe = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)

func parseInteger(s string) (int64, bool) {
	if !integerRe.MatchString(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// memoryRe is a memory size: digits and an optional unit, in any case.
var memoryRe = regexp.MustCompile(`^([0-9]+)([a-zA-Z]*)$`)

// memoryUnits are the units the server reads (memtoull): k, m and g are powers of
// 1000, kb, mb and gb powers of 1024.
var memoryUnits = map[string]uint64{
	"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000 * 1000, "mb": 1024 * 1024,
	"g": 1000 * 1000 * 1000, "gb": 1024 * 1024 * 1024,
}

// parseMemory reads a memory size in bytes. It is stricter than the server, which
// takes an empty value or a bare unit as 0 and wraps sizes past 2^64-1 around.
func parseMemory(s string) (uint64, bool) {
	m := memoryRe.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	mul, ok := memoryUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		return 0, false
	}
	hi, lo := bits.Mul64(n, mul)
	return lo, hi == 0
}

// String says what the type takes, as a refusal says it after "must be".
func (t Type) String() string {
	switch t.Kind {
	case KindBool:
		return "yes or no"
	case KindInteger:
		return "a whole number " + t.bounds(10, "")
	case KindOctal:
		return "an octal number " + t.bounds(8, "")
	case KindMemory:
		return "a memory size " + memoryHelp + " " + t.bounds(10, " bytes")
	case KindMemoryOrPercent:
		return fmt.Sprintf("a memory size %s %s, or a percentage from 0%% to %d%% (50%%)",
			memoryHelp, t.bounds(10, " bytes"), t.MaxPercent)
	case KindEnum:
		return "one of " + strings.Join(t.Values, ", ")
	case KindFlags:
		return "one or more of " + strings.Join(t.Values, ", ") + ", separated by single spaces"
	case KindOther:
		return "a value of the key's own syntax"
	}
	return "text"
}

const memoryHelp = "(bytes, or with a unit: 100mb, 1gb; k, m, g are powers of 1000, kb, mb, gb of 1024)"

// bounds says "from Min to Max", with "or more" for a range up to the largest number.
func (t Type) bounds(base int, unit string) string {
	lo := strconv.FormatInt(t.Min, base)
	if t.Max == math.MaxInt64 || t.Max == math.MaxUint64 {
		return "of " + lo + unit + " or more"
	}
	return "from " + lo + " to " + strconv.FormatUint(t.Max, base) + unit
}
