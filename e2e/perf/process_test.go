package perf

import (
	"os"
	"strings"
	"testing"
)

func TestParseProcStatus(t *testing.T) {
	status := "Name:\tcluster-control\nVmPeak:\t 1293340 kB\nVmRSS:\t   52436 kB\nRssAnon:\t   30000 kB\nRssFile:\t   22436 kB\nRssShmem:\t       0 kB\nThreads:\t8\n"
	m, err := ParseProcStatus(strings.NewReader(status))
	if err != nil {
		t.Fatal(err)
	}
	if want := (ProcessMemory{RSS: 52436 * 1024, RSSAnon: 30000 * 1024, RSSFile: 22436 * 1024}); m != want {
		t.Errorf("got %+v, want %+v", m, want)
	}
	if _, err := ParseProcStatus(strings.NewReader("Name:\tx\nVmRSS:\t1 kB\n")); err == nil {
		t.Error("a status without RssAnon and RssFile was read without an error")
	}
}

func TestParseSmapsRollup(t *testing.T) {
	rollup := "559fa7c1c000-7fff826a6000 ---p 00000000 00:00 0                          [rollup]\n" +
		"Rss:                1612 kB\nPss:                 349 kB\nPss_Dirty:           112 kB\nPss_Anon:            112 kB\n"
	pss, err := ParseSmapsRollup(strings.NewReader(rollup))
	if err != nil {
		t.Fatal(err)
	}
	if pss != 349*1024 {
		t.Errorf("Pss %v, want %v", pss, 349*1024)
	}
	if _, err := ParseSmapsRollup(strings.NewReader("Rss: 1 kB\n")); err == nil {
		t.Error("a rollup without Pss was read without an error")
	}
}

// The test process's own memory, read as the stand-in reads its processes': its PSS is
// at most its RSS, and the file pages part of it.
func TestReadProcessMemory(t *testing.T) {
	m, err := ReadProcessMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.RSSFile <= 0 || m.RSSFile > m.RSS || m.PSS <= 0 || m.PSS > m.RSS {
		t.Errorf("own memory %+v: want 0 < RssFile <= RSS and 0 < PSS <= RSS", m)
	}
}

func TestParseProcStat(t *testing.T) {
	// A command name with a space and a parenthesis; utime 250, stime 50 ticks.
	line := "4242 (my (proc) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 9 0 12345 1300000000 13000 18446744073709551615"
	got, err := ParseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if got != 3 {
		t.Errorf("CPU %v s, want 3 s", got)
	}
	if _, err := ParseProcStat("4242 (short) S 1 2"); err == nil {
		t.Error("a short stat line was read without an error")
	}
}

func TestSettled(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []float64
		n      int
		want   bool
	}{
		{"too few samples", []float64{10, 10}, 3, false},
		{"still falling", []float64{20, 15, 12, 11}, 3, false},
		{"flat within the tolerance", []float64{20, 15, 10.5, 10, 10.9}, 3, true},
		{"a spike in the window", []float64{10, 10, 13, 10}, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Settled(tc.values, tc.n, 1); got != tc.want {
				t.Errorf("Settled(%v, %d, 1) = %v, want %v", tc.values, tc.n, got, tc.want)
			}
		})
	}
}
