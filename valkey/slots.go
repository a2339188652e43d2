package valkey

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// SlotCount is the number of hash slots of a Valkey cluster.
const SlotCount = 16384

// SlotRange is an inclusive range of hash slots.
type SlotRange struct {
	Start, End int
}

// String returns "start-end" (also for a single slot).
func (r SlotRange) String() string {
	return strconv.Itoa(r.Start) + "-" + strconv.Itoa(r.End)
}

// Len returns the number of slots in r (0 if r is invalid).
func (r SlotRange) Len() int {
	if !r.Valid() {
		return 0
	}
	return r.End - r.Start + 1
}

// Valid reports whether 0 <= Start <= End < SlotCount.
func (r SlotRange) Valid() bool {
	return validSlot(r.Start) && validSlot(r.End) && r.Start <= r.End
}

func validSlot(s int) bool { return s >= 0 && s < SlotCount }

// ParseSlotRange parses "n" or "a-b".
func ParseSlotRange(s string) (SlotRange, error) {
	a, b, isRange := strings.Cut(s, "-")
	start, err := strconv.Atoi(a)
	if err != nil || a == "" || a[0] == '+' {
		return SlotRange{}, parseErr("bad slot range %q", truncate(s, 40))
	}
	end := start
	if isRange {
		if end, err = strconv.Atoi(b); err != nil || b == "" || b[0] == '+' {
			return SlotRange{}, parseErr("bad slot range %q", truncate(s, 40))
		}
	}
	r := SlotRange{Start: start, End: end}
	if !r.Valid() {
		return SlotRange{}, parseErr("slot range %q outside 0-%d", truncate(s, 40), SlotCount-1)
	}
	return r, nil
}

// FormatRanges joins ranges as "a-b,c-d"; ParseRanges reads it back.
func FormatRanges(ranges []SlotRange) string {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// ParseRanges parses ranges separated by commas or spaces ("0-5,9 12-13").
func ParseRanges(s string) ([]SlotRange, error) {
	var out []SlotRange
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		r, err := ParseSlotRange(f)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// NormalizeRanges clips ranges to the slot space, drops empty ones, sorts
// them and merges overlapping or adjacent ranges. The input is not changed.
func NormalizeRanges(ranges []SlotRange) []SlotRange {
	rs := make([]SlotRange, 0, len(ranges))
	for _, r := range ranges {
		r.Start, r.End = max(r.Start, 0), min(r.End, SlotCount-1)
		if r.Valid() {
			rs = append(rs, r)
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	var out []SlotRange
	for _, r := range rs {
		if n := len(out); n > 0 && r.Start <= out[n-1].End+1 {
			out[n-1].End = max(out[n-1].End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}

// MergeRanges returns the normalised union of the lists.
func MergeRanges(lists ...[]SlotRange) []SlotRange {
	var all []SlotRange
	for _, l := range lists {
		all = append(all, l...)
	}
	return NormalizeRanges(all)
}

// SubtractRanges returns the slots of a that are not in b, normalised.
func SubtractRanges(a, b []SlotRange) []SlotRange {
	a, b = NormalizeRanges(a), NormalizeRanges(b)
	var out []SlotRange
	for _, r := range a {
		for _, cut := range b {
			if cut.End < r.Start || cut.Start > r.End {
				continue
			}
			if cut.Start > r.Start {
				out = append(out, SlotRange{Start: r.Start, End: cut.Start - 1})
			}
			r.Start = cut.End + 1
			if r.Start > r.End {
				break
			}
		}
		if r.Start <= r.End {
			out = append(out, r)
		}
	}
	return out
}

// CountSlots returns the number of distinct slots in ranges.
func CountSlots(ranges []SlotRange) int {
	n := 0
	for _, r := range NormalizeRanges(ranges) {
		n += r.Len()
	}
	return n
}

// ContainsSlot reports whether slot is in one of the ranges.
func ContainsSlot(ranges []SlotRange, slot int) bool {
	for _, r := range ranges {
		if slot >= r.Start && slot <= r.End {
			return true
		}
	}
	return false
}

// RangesFromSlots turns a list of slots into normalised ranges.
func RangesFromSlots(slots []int) []SlotRange {
	rs := make([]SlotRange, 0, len(slots))
	for _, s := range slots {
		rs = append(rs, SlotRange{Start: s, End: s})
	}
	return NormalizeRanges(rs)
}

// EvenRanges splits the slot space into n contiguous ranges, as even as
// integer division allows: the first SlotCount%n shards get one slot more.
// Each element holds one range, or none when n > SlotCount leaves a shard
// empty. n <= 0 returns nil.
func EvenRanges(n int) [][]SlotRange {
	if n <= 0 {
		return nil
	}
	out := make([][]SlotRange, n)
	base, extra := SlotCount/n, SlotCount%n
	start := 0
	for i := range out {
		size := base
		if i < extra {
			size++
		}
		if size > 0 {
			out[i] = []SlotRange{{Start: start, End: start + size - 1}}
		}
		start += size
	}
	return out
}

// Move is one step of a rebalance: Slots go from one owner to another.
type Move struct {
	Slots    []SlotRange
	From, To string
}

// String returns "from -> to: a-b,c-d".
func (m Move) String() string {
	return fmt.Sprintf("%s -> %s: %s", m.From, m.To, FormatRanges(m.Slots))
}

// PlanMoves plans the fewest slot moves after which every owner in targets
// holds an even share of all slots in current (shares differ by at most one)
// and owners not in targets hold none. Keys of current are owner IDs (node or
// shard IDs); targets lists the owners that should hold slots, in order (an
// empty or repeated entry is ignored).
//
// The plan is deterministic. The extra slots of an uneven split go to the
// targets that already hold the most (so fewer slots move); donors give from
// the top of what they hold and receivers are filled in targets order, so
// moved slots stay in contiguous ranges. A slot listed under two owners
// counts for the first of them in sorted order. With no target, nothing can
// receive and the plan is empty.
func PlanMoves(current map[string][]SlotRange, targets []string) []Move {
	targets = uniqueNonEmpty(targets)
	if len(targets) == 0 {
		return nil
	}
	held := disjointHoldings(current)
	quota := quotas(held, targets)
	donors := surpluses(held, targets, quota)
	return assign(donors, receivers(held, targets, quota))
}

func uniqueNonEmpty(ids []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// disjointHoldings normalises each owner's ranges and removes slots already
// claimed by an owner earlier in sorted order.
func disjointHoldings(current map[string][]SlotRange) map[string][]SlotRange {
	held := make(map[string][]SlotRange, len(current))
	var claimed []SlotRange
	for _, id := range sortedKeys(current) {
		mine := SubtractRanges(current[id], claimed)
		held[id] = mine
		claimed = MergeRanges(claimed, mine)
	}
	return held
}

func sortedKeys(m map[string][]SlotRange) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// quotas gives each target its share; the remainder goes to the targets
// holding the most slots (ties: earlier in targets).
func quotas(held map[string][]SlotRange, targets []string) map[string]int {
	total := 0
	for _, rs := range held {
		total += CountSlots(rs)
	}
	order := append([]string(nil), targets...)
	sort.SliceStable(order, func(i, j int) bool {
		return CountSlots(held[order[i]]) > CountSlots(held[order[j]])
	})
	base, extra := total/len(targets), total%len(targets)
	q := make(map[string]int, len(targets))
	for i, id := range order {
		q[id] = base
		if i < extra {
			q[id]++
		}
	}
	return q
}

// share is a donor's surplus or a receiver's need.
type share struct {
	id    string
	slots []SlotRange // a donor's surplus slots
	need  int         // a receiver's missing slot count
}

// surpluses lists donors: owners outside targets (all their slots, sorted by
// ID), then targets above quota (their top slots, in targets order).
func surpluses(held map[string][]SlotRange, targets []string, quota map[string]int) []share {
	var out []share
	for _, id := range sortedKeys(held) {
		if _, isTarget := quota[id]; !isTarget && len(held[id]) > 0 {
			out = append(out, share{id: id, slots: held[id]})
		}
	}
	for _, id := range targets {
		if extra := CountSlots(held[id]) - quota[id]; extra > 0 {
			_, top := splitAt(held[id], CountSlots(held[id])-extra)
			out = append(out, share{id: id, slots: top})
		}
	}
	return out
}

// receivers lists targets below quota, in targets order.
func receivers(held map[string][]SlotRange, targets []string, quota map[string]int) []share {
	var out []share
	for _, id := range targets {
		if need := quota[id] - CountSlots(held[id]); need > 0 {
			out = append(out, share{id: id, need: need})
		}
	}
	return out
}

// assign hands the donors' slots to the receivers in order, lowest slots
// first.
func assign(donors, recv []share) []Move {
	var moves []Move
	d := 0
	for _, r := range recv {
		for r.need > 0 && d < len(donors) {
			n := min(r.need, CountSlots(donors[d].slots))
			give, rest := splitAt(donors[d].slots, n)
			if n > 0 {
				moves = append(moves, Move{Slots: give, From: donors[d].id, To: r.id})
			}
			donors[d].slots = rest
			r.need -= n
			if len(rest) == 0 {
				d++
			}
		}
	}
	return moves
}

// splitAt splits normalised ranges into the first n slots and the rest.
func splitAt(ranges []SlotRange, n int) (head, tail []SlotRange) {
	for _, r := range ranges {
		switch {
		case n <= 0:
			tail = append(tail, r)
		case r.Len() <= n:
			head = append(head, r)
			n -= r.Len()
		default:
			head = append(head, SlotRange{Start: r.Start, End: r.Start + n - 1})
			tail = append(tail, SlotRange{Start: r.Start + n, End: r.End})
			n = 0
		}
	}
	return head, tail
}

// ApplyMoves returns the ownership after the moves, normalised. The input
// is not changed. It lets a caller check a plan or predict the end state.
func ApplyMoves(current map[string][]SlotRange, moves []Move) map[string][]SlotRange {
	out := make(map[string][]SlotRange, len(current))
	for id, rs := range current {
		out[id] = NormalizeRanges(rs)
	}
	for _, m := range moves {
		out[m.From] = SubtractRanges(out[m.From], m.Slots)
		out[m.To] = MergeRanges(out[m.To], m.Slots)
	}
	return out
}

// KeySlot returns the hash slot of key: CRC16 of the key, or of the part
// between the first '{' and the next '}' when that part is not empty.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key)) % SlotCount
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), which Valkey
// uses for key slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
