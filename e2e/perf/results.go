package perf

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Units of a Row, which decide how its numbers are printed.
const (
	UnitSeconds = "s"
	UnitCount   = "count"
	UnitRatio   = "ratio"
	UnitMiB     = "MiB"
	UnitPerMin  = "/min"
	// UnitCPUPerMin is CPU seconds per minute; UnitCPUmsPerMin CPU milliseconds per minute.
	UnitCPUPerMin   = "s/min"
	UnitCPUmsPerMin = "ms/min"
)

// Row is one line of the result table: a measurement, its summary over the repetitions,
// and the reference figure and goal it is read against.
type Row struct {
	// Key is a stable machine name ("ready_3x1_operator").
	Key string `json:"key"`
	// Item is the benchmark item the row belongs to ("1", "2", ...).
	Item string `json:"item"`
	// Name says what was measured.
	Name string `json:"name"`
	Unit string `json:"unit"`
	Stat Stat   `json:"stat"`
	// Reference is the official operator's figure on the same machine, if known.
	Reference string `json:"reference,omitempty"`
	// Goal is this operator's target.
	Goal string `json:"goal,omitempty"`
	// Note explains the row or flags a problem seen.
	Note string `json:"note,omitempty"`
}

// Results is one benchmark run: the rows of its table and details that do not fit one.
type Results struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Reps     int       `json:"reps"`
	Commit   string    `json:"commit,omitempty"`
	Rows     []Row     `json:"rows"`
	// Anomalies are problems of the operator seen on the way that no row shows.
	Anomalies []string       `json:"anomalies,omitempty"`
	Details   map[string]any `json:"details,omitempty"`
	// Tables are items' own tables, printed after the main one.
	Tables []Table `json:"tables,omitempty"`

	mu sync.Mutex
}

// Add appends rows (safe for concurrent use).
func (r *Results) Add(rows ...Row) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Rows = append(r.Rows, rows...)
}

// Anomaly records a problem seen on the way (once per distinct message).
func (r *Results) Anomaly(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	for _, a := range r.Anomalies {
		if a == msg {
			return
		}
	}
	r.Anomalies = append(r.Anomalies, msg)
}

// Detail records a value under a name in Details.
func (r *Results) Detail(name string, v any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Details == nil {
		r.Details = map[string]any{}
	}
	r.Details[name] = v
}

// Table is an item's own table, in markdown.
type Table struct {
	Title    string `json:"title"`
	Markdown string `json:"markdown"`
}

// AddTable records an item's own table.
func (r *Results) AddTable(title, markdown string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Tables = append(r.Tables, Table{Title: title, Markdown: markdown})
}

// sortRows orders the rows by item, keeping the order within an item.
func (r *Results) sortRows() {
	sort.SliceStable(r.Rows, func(i, j int) bool { return r.Rows[i].Item < r.Rows[j].Item })
}

// Markdown renders the rows, by item, as a markdown table.
func (r *Results) Markdown() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sortRows()
	var b strings.Builder
	b.WriteString("| # | Measurement | Ours (median) | Range (n) | Official operator | Goal | Note |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", row.Item, cell(row.Name),
			FormatValue(row.Stat.Median, row.Unit), formatRange(row), cell(row.Reference), cell(row.Goal), cell(row.Note))
	}
	return b.String()
}

// cell escapes the pipe characters of a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// formatRange is "min–max (n)" for repeated measurements, "" for a single one.
func formatRange(row Row) string {
	n := len(row.Stat.Values)
	if n < 2 {
		return ""
	}
	return fmt.Sprintf("%s–%s (%d)", FormatValue(row.Stat.Min, row.Unit), FormatValue(row.Stat.Max, row.Unit), n)
}

// FormatValue prints a number in its unit.
func FormatValue(v float64, unit string) string {
	switch unit {
	case UnitSeconds:
		return strconv.FormatFloat(v, 'f', 2, 64) + " s"
	case UnitRatio:
		return strconv.FormatFloat(v, 'f', 2, 64) + "×"
	case UnitMiB:
		return strconv.FormatFloat(v, 'f', 1, 64) + " MiB"
	case UnitPerMin:
		return strconv.FormatFloat(v, 'f', 1, 64) + "/min"
	case UnitCount:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case UnitCPUPerMin:
		return strconv.FormatFloat(v, 'f', 2, 64) + " s/min"
	case UnitCPUmsPerMin:
		return strconv.FormatFloat(v, 'f', 1, 64) + " ms/min"
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " " + unit
}

// WriteJSON writes the results, indented, to path (its folder is created).
func (r *Results) WriteJSON(path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sortRows()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}
