package perf

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	cases := []struct {
		in               []float64
		median, min, max float64
	}{
		{nil, 0, 0, 0},
		{[]float64{4}, 4, 4, 4},
		{[]float64{3, 1, 2}, 2, 1, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{5, 5, 100}, 5, 5, 100},
	}
	for _, c := range cases {
		s := Summarize(c.in)
		if s.Median != c.median || s.Min != c.min || s.Max != c.max || len(s.Values) != len(c.in) {
			t.Errorf("Summarize(%v) = %+v, want median %v min %v max %v", c.in, s, c.median, c.min, c.max)
		}
	}
	in := []float64{3, 1, 2}
	Summarize(in)
	if in[0] != 3 {
		t.Error("Summarize sorted its input")
	}
}

func TestFormatValue(t *testing.T) {
	cases := []struct {
		v    float64
		unit string
		want string
	}{
		{3.256, UnitSeconds, "3.26 s"},
		{1.5, UnitRatio, "1.50×"},
		{12.34, UnitMiB, "12.3 MiB"},
		{0, UnitPerMin, "0.0/min"},
		{42, UnitCount, "42"},
		{2.5, UnitCount, "2.5"},
		{0.456, UnitCPUPerMin, "0.46 s/min"},
		{2.94, UnitCPUmsPerMin, "2.9 ms/min"},
	}
	for _, c := range cases {
		if got := FormatValue(c.v, c.unit); got != c.want {
			t.Errorf("FormatValue(%v, %q) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

func TestMarkdownAndJSON(t *testing.T) {
	var r Results
	r.Add(Row{Key: "c", Item: "7", Name: "later", Unit: UnitCount, Stat: One(1)})
	r.Add(Row{Key: "a", Item: "1", Name: "ready | 3x1", Unit: UnitSeconds, Stat: Summarize([]float64{4, 5, 6}), Reference: "16-18 s", Goal: "5 s"},
		Row{Key: "b", Item: "7", Name: "writes", Unit: UnitPerMin, Stat: One(0)})
	md := r.Markdown()
	for _, want := range []string{"| 1 | ready \\| 3x1 | 5.00 s | 4.00 s–6.00 s (3) | 16-18 s | 5 s |  |", "| 7 | writes | 0.0/min |  |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	r.Detail("x", map[string]int{"y": 1})
	r.AddTable("fleet", "| a |\n")
	path := filepath.Join(t.TempDir(), "sub", "results.json")
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Results
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != 3 || back.Rows[0].Key != "a" || back.Rows[1].Key != "c" || back.Rows[0].Stat.Median != 5 || back.Details["x"] == nil ||
		len(back.Tables) != 1 || back.Tables[0].Title != "fleet" {
		t.Errorf("round trip lost data: %s", b)
	}
}
