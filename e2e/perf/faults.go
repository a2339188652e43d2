package perf

import (
	"sort"
	"time"

	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// Fault is one fault a chaos run injected.
type Fault struct {
	At   time.Time
	Kind string
	// Target names what was hit (a pod, a component).
	Target string
	// MayLoseWrites is set for faults that may lose acknowledged writes a primary had
	// not replicated yet (its pod killed or deleted).
	MayLoseWrites bool
	// Slots are the slots the target served as a primary, when it was one.
	Slots []valkey.SlotRange
	Note  string
}

// Windows around a fault in which a lost write is attributed to it: a write the
// primary acknowledged just before the kill reached it (the kubelet acts a moment after
// the API call) and was not replicated.
const (
	LossWindowBefore = time.Second
	LossWindowAfter  = 5 * time.Second
)

// AttributeLost counts, for each fault that may lose writes, the lost writes of its
// slots acknowledged within its window (the nearest such fault wins), and returns the
// lost writes no fault explains: those are losses of the planned operations.
func AttributeLost(lost []checker.LostWrite, faults []Fault) (perFault []int, unexplained []checker.LostWrite) {
	perFault = make([]int, len(faults))
	for _, w := range lost {
		best, bestDist := -1, time.Duration(0)
		for i, f := range faults {
			if !f.MayLoseWrites || w.AckedAt.Before(f.At.Add(-LossWindowBefore)) || w.AckedAt.After(f.At.Add(LossWindowAfter)) {
				continue
			}
			if len(f.Slots) > 0 && !valkey.ContainsSlot(f.Slots, w.Slot) {
				continue
			}
			if d := absDuration(w.AckedAt.Sub(f.At)); best < 0 || d < bestDist {
				best, bestDist = i, d
			}
		}
		if best < 0 {
			unexplained = append(unexplained, w)
			continue
		}
		perFault[best]++
	}
	return perFault, unexplained
}

// GapCause is a write gap and the fault that happened in it, if any (-1).
type GapCause struct {
	Gap   checker.Gap
	Fault int
}

// AttributeGaps matches each gap with the last fault injected between a second before
// it started and its end, and sorts the gaps by start.
func AttributeGaps(gaps []checker.Gap, faults []Fault) []GapCause {
	out := make([]GapCause, 0, len(gaps))
	for _, g := range gaps {
		cause := -1
		end := g.Start.Add(g.Length)
		for i, f := range faults {
			if !f.At.Before(g.Start.Add(-time.Second)) && !f.At.After(end) {
				cause = i
			}
		}
		out = append(out, GapCause{Gap: g, Fault: cause})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Gap.Start.Before(out[j].Gap.Start) })
	return out
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
