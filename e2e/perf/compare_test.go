package perf

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCompareRowCells(t *testing.T) {
	stat := func(values ...float64) Cell { return Measured(values) }
	cases := []struct {
		name string
		row  CompareRow
		// want is the row as printed, from its first cell.
		want string
	}{
		{
			name: "both measured: ratio of the medians, ranges",
			row:  CompareRow{Name: "3x1 apply → converged", Unit: UnitSeconds, Ours: stat(4, 5, 6), Peer: stat(16, 20, 18), Goal: "5 s"},
			want: "| 3x1 apply → converged | 5.00 s | 4.00 s–6.00 s (3) | 18.00 s | 16.00 s–20.00 s (3) | 0.28× | 5 s |  |",
		},
		{
			name: "ours larger: ratio above 1",
			row:  CompareRow{Name: "memory", Unit: UnitMiB, Ours: stat(300), Peer: stat(60)},
			want: "| memory | 300.0 MiB |  | 60.0 MiB |  | 5.00× |  |  |",
		},
		{
			name: "peer's figure zero: no ratio",
			row:  CompareRow{Name: "lost", Unit: UnitCount, Ours: stat(0, 0, 0), Peer: stat(0, 0, 0), Goal: "0"},
			want: "| lost | 0 | 0–0 (3) | 0 | 0–0 (3) | — | 0 |  |",
		},
		{
			name: "peer's item failed: not measured, with why, and no ratio",
			row: CompareRow{Name: "scale", Unit: UnitSeconds, Ours: stat(40),
				Peer: Cell{Missing: "not converged within 10m0s", Note: "0 of 3 repetitions"}},
			want: "| scale | 40.00 s |  | not measured: not converged within 10m0s |  | — |  | peer: 0 of 3 repetitions |",
		},
		{
			name: "a cell without anything says not run",
			row:  CompareRow{Name: "crash", Unit: UnitSeconds, Ours: stat(1), Peer: Cell{}},
			want: "| crash | 1.00 s |  | not measured: not run |  | — |  |  |",
		},
		{
			name: "no repetition completed",
			row:  CompareRow{Name: "roll", Unit: UnitSeconds, Ours: Measured(nil), Peer: stat(2)},
			want: "| roll | not measured: no repetition completed |  | 2.00 s |  | — |  |  |",
		},
		{
			name: "unsupported by the peer: said so, not zero",
			row: CompareRow{Name: "Valkey 8.0 and 8.1", Unit: UnitCount, Ours: Cell{Text: "yes (items 1-4)"},
				Peer: Cell{Unsupported: "its config needs 9.0 (shutdown-on-sigterm)"}},
			want: "| Valkey 8.0 and 8.1 | yes (items 1-4) |  | not supported: its config needs 9.0 (shutdown-on-sigterm) |  | — |  |  |",
		},
		{
			name: "unsupported with a stale figure still shows no ratio",
			row:  CompareRow{Name: "backup", Unit: UnitSeconds, Ours: stat(5), Peer: Cell{Stat: &Stat{Median: 1}, Unsupported: "no backup API"}},
			want: "| backup | 5.00 s |  | not supported: no backup API |  | — |  |  |",
		},
		{
			name: "notes of both sides, pipes escaped",
			row: CompareRow{Name: "gap | shard 0", Unit: UnitSeconds, Ours: Cell{Stat: &Stat{Median: 1, Values: []float64{1}}, Note: "a|b"},
				Peer: Cell{Stat: &Stat{Median: 2, Values: []float64{2}}, Note: "1 of 3 repetitions failed"}},
			want: "| gap \\| shard 0 | 1.00 s |  | 2.00 s |  | 0.50× |  | ours: a\\|b; peer: 1 of 3 repetitions failed |",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmp := &Comparison{}
			cmp.Add(c.row)
			md := cmp.Markdown()
			if !strings.Contains(md, c.want+"\n") {
				t.Errorf("table lacks\n%s\ngot:\n%s", c.want, md)
			}
		})
	}
}

func TestComparisonNamesBothCommitsAndKeepsItsNotes(t *testing.T) {
	cmp := &Comparison{
		Ours: Subject{Name: "valkey-operator", Commit: "fba1b5c"},
		Peer: Subject{Name: "valkey-io/valkey-operator", Commit: "c33988f58364"},
	}
	cmp.Add(CompareRow{Key: "ready", Name: "ready", Unit: UnitSeconds, Ours: Measured([]float64{5}), Peer: Measured([]float64{10})})
	cmp.Note("the Kubernetes was left as found")
	md := cmp.Markdown()
	for _, want := range []string{
		"ours: valkey-operator at fba1b5c; peer: valkey-io/valkey-operator at c33988f58364\n",
		"| Measurement | Ours (median) | Range (n) | Peer (median) | Range (n) | Ours / peer | Goal | Note |\n",
		"\nthe Kubernetes was left as found\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	r := Results{Comparison: cmp}
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	var back Results
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Comparison == nil || back.Comparison.Peer.Commit != "c33988f58364" || len(back.Comparison.Rows) != 1 ||
		back.Comparison.Rows[0].Peer.Stat.Median != 10 {
		t.Errorf("the comparison did not survive results.json: %s", b)
	}
}
