package perf

import (
	"fmt"
	"strings"
	"sync"
)

// Subject names an operator a Comparison measured: what it is and the commit it was
// built from.
type Subject struct {
	Name   string `json:"name"`
	Commit string `json:"commit"`
}

// Cell is one operator's figure of a compared measurement. Exactly one of Stat,
// Missing and Unsupported says what the cell shows.
type Cell struct {
	// Stat is the measurement over its repetitions; nil when there is none.
	Stat *Stat `json:"stat,omitempty"`
	// Missing says why a supported measurement has no figure (it failed, or a
	// repetition did); Unsupported what the operator lacks to run it at all.
	Missing     string `json:"missing,omitempty"`
	Unsupported string `json:"unsupported,omitempty"`
	// Text, when set, is shown instead of a figure for a row that compares
	// capabilities rather than numbers.
	Text string `json:"text,omitempty"`
	// Note says more about the figure (repetitions that failed, a slowdown seen).
	Note string `json:"note,omitempty"`
}

// Measured is a Cell of the measurements values.
func Measured(values []float64) Cell {
	if len(values) == 0 {
		return Cell{Missing: "no repetition completed"}
	}
	st := Summarize(values)
	return Cell{Stat: &st}
}

// CompareRow is one measurement of both operators.
type CompareRow struct {
	Key  string `json:"key"`
	Name string `json:"name"`
	Unit string `json:"unit"`
	Ours Cell   `json:"ours"`
	Peer Cell   `json:"peer"`
	// Goal is this operator's target for the measurement.
	Goal string `json:"goal,omitempty"`
}

// Comparison is the table of this operator and the official valkey-io operator measured
// one after the other on the same Kubernetes in one run (BENCH_PEER=1 make bench).
type Comparison struct {
	Ours Subject      `json:"ours"`
	Peer Subject      `json:"peer"`
	Rows []CompareRow `json:"rows"`
	// Notes are printed under the table (how the peer was installed, what was left
	// behind).
	Notes []string `json:"notes,omitempty"`

	mu sync.Mutex
}

// Add appends rows (safe for concurrent use).
func (c *Comparison) Add(rows ...CompareRow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Rows = append(c.Rows, rows...)
}

// Note adds a line under the table.
func (c *Comparison) Note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Notes = append(c.Notes, fmt.Sprintf(format, args...))
}

// Markdown renders the comparison: a title naming both commits, the table and the notes.
// The ratio is ours over the peer's, of the medians: below 1× ours is the smaller
// figure (faster, fewer lost writes, less memory).
func (c *Comparison) Markdown() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "ours: %s at %s; peer: %s at %s\n\n", c.Ours.Name, c.Ours.Commit, c.Peer.Name, c.Peer.Commit)
	b.WriteString("| Measurement | Ours (median) | Range (n) | Peer (median) | Range (n) | Ours / peer | Goal | Note |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, row := range c.Rows {
		ours, oursRange := row.Ours.format(row.Unit)
		peer, peerRange := row.Peer.format(row.Unit)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", cell(row.Name), cell(ours), oursRange, cell(peer), peerRange,
			row.ratio(), cell(row.Goal), cell(row.note()))
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	return b.String()
}

// format is the cell's median (or why it has none) and its range.
func (c Cell) format(unit string) (string, string) {
	switch {
	case c.Unsupported != "":
		return "not supported: " + c.Unsupported, ""
	case c.Text != "":
		return c.Text, ""
	case c.Stat == nil:
		missing := c.Missing
		if missing == "" {
			missing = "not run"
		}
		return "not measured: " + missing, ""
	}
	return FormatValue(c.Stat.Median, unit), formatRange(*c.Stat, unit)
}

// ratio is ours / peer of the medians, or "—" when either has no figure or the peer's
// is zero.
func (r CompareRow) ratio() string {
	if r.Ours.Stat == nil || r.Peer.Stat == nil || r.Ours.Unsupported != "" || r.Peer.Unsupported != "" || r.Peer.Stat.Median == 0 {
		return "—"
	}
	return FormatValue(r.Ours.Stat.Median/r.Peer.Stat.Median, UnitRatio)
}

// note joins both cells' notes.
func (r CompareRow) note() string {
	var parts []string
	if r.Ours.Note != "" {
		parts = append(parts, "ours: "+r.Ours.Note)
	}
	if r.Peer.Note != "" {
		parts = append(parts, "peer: "+r.Peer.Note)
	}
	return strings.Join(parts, "; ")
}
