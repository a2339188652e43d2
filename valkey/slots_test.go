package valkey_test

import (
	"reflect"
	"testing"

	"github.com/valkey-operator/valkey-operator/valkey"
)

type sr = valkey.SlotRange

func TestEvenRanges(t *testing.T) {
	tests := []struct {
		n    int
		want [][]sr
	}{
		{0, nil},
		{-1, nil},
		{1, [][]sr{{{0, 16383}}}},
		{3, [][]sr{{{0, 5461}}, {{5462, 10922}}, {{10923, 16383}}}},
		{5, [][]sr{{{0, 3276}}, {{3277, 6553}}, {{6554, 9830}}, {{9831, 13107}}, {{13108, 16383}}}},
	}
	for _, tt := range tests {
		if got := valkey.EvenRanges(tt.n); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("EvenRanges(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
	for _, n := range []int{2, 7, 100, 16384, 16385} {
		got := valkey.EvenRanges(n)
		var all []sr
		for _, rs := range got {
			all = append(all, rs...)
		}
		if len(got) != n || valkey.CountSlots(all) != valkey.SlotCount || len(valkey.NormalizeRanges(all)) != 1 {
			t.Errorf("EvenRanges(%d) does not cover the slot space once", n)
		}
		if n == 16385 && got[16384] != nil {
			t.Errorf("EvenRanges(16385) gives the last shard %v", got[16384])
		}
	}
}

func TestRangeHelpers(t *testing.T) {
	in := []sr{{10, 20}, {0, 5}, {6, 8}, {15, 30}, {-5, -1}, {16380, 20000}, {9, 3}}
	want := []sr{{0, 8}, {10, 30}, {16380, 16383}}
	if got := valkey.NormalizeRanges(in); !reflect.DeepEqual(got, want) {
		t.Errorf("NormalizeRanges = %v", got)
	}
	if got := valkey.CountSlots(in); got != 9+21+4 {
		t.Errorf("CountSlots = %d", got)
	}
	subtract := []struct{ a, b, want []sr }{
		{[]sr{{0, 100}}, []sr{{10, 20}, {50, 60}}, []sr{{0, 9}, {21, 49}, {61, 100}}},
		{[]sr{{0, 100}}, []sr{{0, 100}}, nil},
		{[]sr{{0, 10}, {20, 30}}, []sr{{5, 25}}, []sr{{0, 4}, {26, 30}}},
		{[]sr{{5, 5}}, nil, []sr{{5, 5}}},
	}
	for _, tt := range subtract {
		if got := valkey.SubtractRanges(tt.a, tt.b); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SubtractRanges(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
	if got := valkey.RangesFromSlots([]int{3, 1, 2, 9}); !reflect.DeepEqual(got, []sr{{1, 3}, {9, 9}}) {
		t.Errorf("RangesFromSlots = %v", got)
	}
	if !valkey.ContainsSlot(want, 12) || valkey.ContainsSlot(want, 9) {
		t.Error("ContainsSlot")
	}
	if s := valkey.FormatRanges(want); s != "0-8,10-30,16380-16383" {
		t.Errorf("FormatRanges = %q", s)
	}
	back, err := valkey.ParseRanges("0-8, 10-30 16380-16383")
	if err != nil || !reflect.DeepEqual(back, want) {
		t.Errorf("ParseRanges = %v, %v", back, err)
	}
	for _, bad := range []string{"", "-", "1-", "-1", "a", "3-2", "16384", "+1", "1-+2", "0-99999999999999999999"} {
		if _, err := valkey.ParseSlotRange(bad); err == nil {
			t.Errorf("ParseSlotRange(%q) accepted", bad)
		}
	}
}

func TestKeySlot(t *testing.T) {
	tests := map[string]int{
		"foo": 12182, "hello": 866, "somekey": 11058, "": 0,
		"{user1000}.following": valkey.KeySlot("user1000"),
		"foo{}{bar}":           valkey.KeySlot("foo{}{bar}"),
		"foo{{bar}}zap":        valkey.KeySlot("{bar"),
		"foo{bar}{zap}":        valkey.KeySlot("bar"),
	}
	for k, want := range tests {
		if got := valkey.KeySlot(k); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", k, got, want)
		}
	}
	if valkey.KeySlot("foo{}{bar}") == valkey.KeySlot("bar") {
		t.Error("an empty hash tag must hash the whole key")
	}
}

// applyAndCheck applies the plan and checks the end state: every target
// within one slot of even, non-targets empty, no slot lost, and exactly
// wantMoved slots moved.
func applyAndCheck(t *testing.T, current map[string][]sr, targets []string, wantMoved int) map[string][]sr {
	t.Helper()
	moves := valkey.PlanMoves(current, targets)
	if again := valkey.PlanMoves(current, targets); !reflect.DeepEqual(moves, again) {
		t.Fatalf("plan is not deterministic:\n%v\n%v", moves, again)
	}
	moved := 0
	for _, m := range moves {
		moved += valkey.CountSlots(m.Slots)
		if m.From == m.To || len(m.Slots) == 0 {
			t.Errorf("useless move %v", m)
		}
	}
	if moved != wantMoved {
		t.Errorf("moved %d slots, want %d; plan %v", moved, wantMoved, moves)
	}
	after := valkey.ApplyMoves(current, moves)
	checkBalanced(t, current, after, targets)
	return after
}

func checkBalanced(t *testing.T, before, after map[string][]sr, targets []string) {
	t.Helper()
	total := 0
	for _, rs := range before {
		total += valkey.CountSlots(rs)
	}
	isTarget := map[string]bool{}
	lo, hi, sum := valkey.SlotCount, 0, 0
	for _, id := range targets {
		if id == "" || isTarget[id] {
			continue
		}
		isTarget[id] = true
		n := valkey.CountSlots(after[id])
		lo, hi, sum = min(lo, n), max(hi, n), sum+n
	}
	for id, rs := range after {
		if !isTarget[id] && len(rs) > 0 {
			t.Errorf("%s is not a target but keeps %v", id, rs)
		}
	}
	if hi-lo > 1 || sum != total {
		t.Errorf("after the plan targets hold %d..%d slots, %d in all, want within one and %d", lo, hi, sum, total)
	}
}

func TestPlanMovesScale(t *testing.T) {
	even := valkey.EvenRanges(3)
	three := map[string][]sr{"s0": even[0], "s1": even[1], "s2": even[2]}
	five := []string{"s0", "s1", "s2", "s3", "s4"}
	// New shards need 3277+3276 slots; nothing else moves.
	after5 := applyAndCheck(t, three, five, 6553)
	for _, id := range five {
		if len(after5[id]) > 2 {
			t.Errorf("%s holds %d ranges after 3->5, want contiguous blocks", id, len(after5[id]))
		}
	}
	// 5 -> 2: everything on s2..s4 moves, nothing between s0 and s1.
	after2 := applyAndCheck(t, after5, []string{"s0", "s1"}, valkey.SlotCount-3277-3277)
	// 2 -> 3 again.
	applyAndCheck(t, after2, []string{"s0", "s1", "s2"}, 5461)
	// Balanced already: no move.
	applyAndCheck(t, three, []string{"s0", "s1", "s2"}, 0)
}

func TestPlanMovesEdgeCases(t *testing.T) {
	even := valkey.EvenRanges(2)
	two := map[string][]sr{"a": even[0], "b": even[1]}
	if got := valkey.PlanMoves(two, nil); got != nil {
		t.Errorf("no targets: %v", got)
	}
	// Repeated and empty targets are ignored.
	applyAndCheck(t, two, []string{"a", "", "a", "b", "c"}, 5461)
	// Replace b by c: b drains into c only.
	moves := valkey.PlanMoves(two, []string{"a", "c"})
	if len(moves) != 1 || moves[0].From != "b" || moves[0].To != "c" || !reflect.DeepEqual(moves[0].Slots, even[1]) {
		t.Errorf("replace b by c: %v", moves)
	}
	// Overlapping claims count once; unassigned slots are not planned.
	overlap := map[string][]sr{"a": {{0, 99}}, "b": {{50, 149}}, "c": nil}
	moves = valkey.PlanMoves(overlap, []string{"a", "b", "c"})
	want := []valkey.Move{{Slots: []sr{{50, 99}}, From: "a", To: "c"}}
	if !reflect.DeepEqual(moves, want) {
		t.Errorf("overlapping claims: %v, want %v", moves, want)
	}
	// Uneven totals: the extra slot stays with the owner that has it.
	odd := map[string][]sr{"a": {{0, 2}}, "b": {{3, 3}}}
	applyAndCheck(t, odd, []string{"a", "b"}, 1)
	if s := (valkey.Move{From: "a", To: "b", Slots: []sr{{1, 2}}}).String(); s != "a -> b: 1-2" {
		t.Errorf("Move.String() = %q", s)
	}
}
