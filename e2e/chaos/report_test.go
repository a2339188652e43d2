//go:build bench

package chaos

import (
	"fmt"
	"strings"
	"time"

	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
)

// render writes the run's report.
func (s *chaosRun) render(r checker.Report, readErr error, converged bool, took time.Duration, tl perf.Timeline, detail string,
	usage map[string]perf.Usage, windowEnd time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Chaos run (seed %d, fault window %s, at most %d faults)\n\n", cfg.seed, cfg.duration, cfg.maxFaults)
	s.renderOps(&b)
	perFault, unexplained := perf.AttributeLost(r.LostWrites, s.faults)
	s.renderFaults(&b, perFault)
	s.renderWrites(&b, r, readErr, perFault, unexplained)
	s.renderGaps(&b, r.Gaps)
	if converged {
		fmt.Fprintf(&b, "\nConvergence: CONVERGED %s after the fault window ended (+%s)\n  %s\n", took.Round(100*time.Millisecond), s.since(windowEnd), tl)
	} else {
		fmt.Fprintf(&b, "\nConvergence: NOT CONVERGED within %s after the fault window: %s\n  %s\n", cfg.converge, detail, tl)
	}
	b.WriteString("\nOperator during the run:\n")
	for _, comp := range perf.SortedKeys(usage) {
		u := usage[comp]
		fmt.Fprintf(&b, "  %-20s CPU %6.2f s, peak RSS %6.1f MiB, %d pod(s)\n", comp, u.CPUSeconds, u.PeakRSSMiB, u.Pods)
	}
	return b.String()
}

func (s *chaosRun) renderOps(b *strings.Builder) {
	b.WriteString("| planned operation | applied | done (Ready) |\n|---|---|---|\n")
	for _, op := range s.ops {
		applied, done := "not applied", "not done in the window"
		if !op.applied.IsZero() {
			applied = "+" + s.since(op.applied).String()
		}
		if op.err != nil {
			applied = "FAILED: " + op.err.Error()
		}
		if !op.done.IsZero() {
			done = fmt.Sprintf("+%s (%s)", s.since(op.done), op.done.Sub(op.applied).Round(100*time.Millisecond))
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", op.name, applied, done)
	}
}

func (s *chaosRun) renderFaults(b *strings.Builder, perFault []int) {
	fmt.Fprintf(b, "\nFaults injected: %d (skipped for lack of a redundant target: %d)\n\n", len(s.faults), s.skipped)
	b.WriteString("| # | at | fault | target | acknowledged writes lost in its window |\n|---|---|---|---|---|\n")
	for i, f := range s.faults {
		lost := "—"
		if f.MayLoseWrites {
			lost = fmt.Sprint(perFault[i])
		}
		target := f.Target
		if f.Note != "" {
			target += " " + f.Note
		}
		fmt.Fprintf(b, "| %d | +%s | %s | %s | %s |\n", i+1, s.since(f.At), f.Kind, target, lost)
	}
}

func (s *chaosRun) renderWrites(b *strings.Builder, r checker.Report, readErr error, perFault []int, unexplained []checker.LostWrite) {
	fmt.Fprintf(b, "\nWrite-checker: %d writes, %d acknowledged, %d failed; %d acknowledged writes lost\n", r.Writes, r.Acked, r.Errors, r.Lost)
	if readErr != nil {
		fmt.Fprintf(b, "  READ-BACK FAILED: %v\n", readErr)
	}
	explained := 0
	for _, n := range perFault {
		explained += n
	}
	fmt.Fprintf(b, "  lost around primary kills (unreplicated writes, ±%s/%s): %d\n", perf.LossWindowBefore, perf.LossWindowAfter, explained)
	verdict := "goal met"
	if len(unexplained) > 0 {
		verdict = "GOAL MISSED"
	}
	fmt.Fprintf(b, "  lost outside any kill's window (planned operations, goal 0): %d — %s\n", len(unexplained), verdict)
	for i, w := range unexplained {
		if i == 10 {
			fmt.Fprintf(b, "    ... and %d more\n", len(unexplained)-10)
			break
		}
		fmt.Fprintf(b, "    %s (slot %d) acknowledged at +%s\n", w.Key, w.Slot, s.since(w.AckedAt))
	}
}

func (s *chaosRun) renderGaps(b *strings.Builder, gaps []checker.Gap) {
	causes := perf.AttributeGaps(gaps, s.faults)
	fmt.Fprintf(b, "\nWrite gaps of 1 s or more: %d\n", len(causes))
	for _, c := range causes {
		cause := "no fault in it (planned operation or a late effect)"
		if c.Fault >= 0 {
			cause = fmt.Sprintf("fault %d (%s)", c.Fault+1, s.faults[c.Fault].Kind)
		}
		fmt.Fprintf(b, "  +%s slot %d: %s — %s\n", s.since(c.Gap.Start), c.Gap.Slot, c.Gap.Length.Round(10*time.Millisecond), cause)
	}
}
