package perf

import (
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestAttributeLost(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	faults := []Fault{
		{At: at(10), Kind: "kill primary", MayLoseWrites: true, Slots: []valkey.SlotRange{{Start: 0, End: 5460}}},
		{At: at(12), Kind: "restart cluster-controller"},
		{At: at(30), Kind: "kill primary", MayLoseWrites: true, Slots: []valkey.SlotRange{{Start: 5461, End: 10922}}},
		{At: at(33), Kind: "kill primary", MayLoseWrites: true},
	}
	lost := []checker.LostWrite{
		{Key: "a", Slot: 0, AckedAt: at(9.9)},      // fault 0
		{Key: "b", Slot: 0, AckedAt: at(14)},       // fault 0 (after the kill, within its window)
		{Key: "c", Slot: 0, AckedAt: at(20)},       // no fault near: unexplained
		{Key: "d", Slot: 6000, AckedAt: at(10)},    // other slots than fault 0's: unexplained
		{Key: "e", Slot: 6000, AckedAt: at(32.9)},  // faults 2 and 3 both fit; 3 is nearer
		{Key: "f", Slot: 6000, AckedAt: at(30.1)},  // fault 2
		{Key: "g", Slot: 100, AckedAt: at(12)},     // the restart never loses writes; fault 0 does
		{Key: "h", Slot: 16000, AckedAt: at(28.5)}, // before fault 2's window, other slots: unexplained
	}
	per, unexplained := AttributeLost(lost, faults)
	if want := []int{3, 0, 1, 1}; !equalInts(per, want) {
		t.Errorf("per fault %v, want %v", per, want)
	}
	var keys []string
	for _, w := range unexplained {
		keys = append(keys, w.Key)
	}
	if len(keys) != 3 || keys[0] != "c" || keys[1] != "d" || keys[2] != "h" {
		t.Errorf("unexplained %v, want [c d h]", keys)
	}
}

func TestAttributeGaps(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	faults := []Fault{{At: at(10)}, {At: at(11)}, {At: at(40)}}
	gaps := []checker.Gap{
		{Start: at(50), Length: 2 * time.Second},           // no fault in it
		{Start: at(10.5), Length: 6 * time.Second},         // faults 0 (half a second before) and 1: the last wins
		{Start: at(38.5), Length: 1500 * time.Millisecond}, // fault 2 at its very end
	}
	got := AttributeGaps(gaps, faults)
	want := []int{1, 2, -1}
	for i, g := range got {
		if g.Fault != want[i] {
			t.Errorf("gap %d (start %s): fault %d, want %d", i, g.Gap.Start.Sub(t0), g.Fault, want[i])
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
