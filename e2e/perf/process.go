package perf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// ProcessMemory is what the kernel says about one process's memory
// (/proc/<pid>/status and smaps_rollup), in bytes.
type ProcessMemory struct {
	// RSS is VmRSS: the process's pages in memory, RSSAnon plus RSSFile (and shared memory).
	RSS float64 `json:"rss"`
	// RSSAnon is the memory the process allocated (the Go heap, stacks, runtime).
	RSSAnon float64 `json:"rss_anon"`
	// RSSFile is the pages of files mapped in memory (the binary's code and data).
	RSSFile float64 `json:"rss_file"`
	// PSS is the proportional set size: RSS with each page shared with other processes
	// (a binary several of them run) divided among them, so the PSS of a set of
	// processes adds up to what the machine holds for them. 0 when the kernel has no
	// smaps_rollup.
	PSS float64 `json:"pss,omitempty"`
}

// ReadProcessMemory reads VmRSS, RssAnon and RssFile of a process, and its Pss when the
// kernel tells it.
func ReadProcessMemory(pid int) (ProcessMemory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcessMemory{}, fmt.Errorf("read memory of process %d: %w", pid, err)
	}
	defer f.Close()
	m, err := ParseProcStatus(f)
	if err != nil {
		return m, err
	}
	rollup, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("read memory of process %d: %w", pid, err)
	}
	defer rollup.Close()
	m.PSS, err = ParseSmapsRollup(rollup)
	return m, err
}

// ParseProcStatus reads the memory lines of a /proc/<pid>/status file.
func ParseProcStatus(r io.Reader) (ProcessMemory, error) {
	var m ProcessMemory
	if err := parseKB(r, map[string]*float64{"VmRSS": &m.RSS, "RssAnon": &m.RSSAnon, "RssFile": &m.RSSFile}); err != nil {
		return m, fmt.Errorf("status: %w", err)
	}
	return m, nil
}

// ParseSmapsRollup reads the Pss of a /proc/<pid>/smaps_rollup file, in bytes.
func ParseSmapsRollup(r io.Reader) (float64, error) {
	var pss float64
	if err := parseKB(r, map[string]*float64{"Pss": &pss}); err != nil {
		return 0, fmt.Errorf("smaps_rollup: %w", err)
	}
	return pss, nil
}

// parseKB reads the "Key:   52436 kB" lines of a /proc file named in fields into them,
// in bytes; every one must be there.
func parseKB(r io.Reader, fields map[string]*float64) error {
	found := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		dst, want := fields[key]
		if !ok || !want {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
		if err != nil {
			return fmt.Errorf("read %s of %q: %w", key, rest, err)
		}
		*dst = kb * 1024
		found++
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if found != len(fields) {
		return fmt.Errorf("want %s, found %d of them", strings.Join(SortedKeys(fields), ", "), found)
	}
	return nil
}

// clockTicks is the unit of the CPU times of /proc/<pid>/stat (USER_HZ, 100 on Linux
// whatever the kernel's own tick).
const clockTicks = 100

// ReadProcessCPU returns the CPU time a process used so far (user and system).
func ReadProcessCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read CPU time of process %d: %w", pid, err)
	}
	return ParseProcStat(string(b))
}

// ParseProcStat returns utime plus stime, in seconds, of a /proc/<pid>/stat line.
func ParseProcStat(line string) (float64, error) {
	// The command name (field 2) is in parentheses and may hold spaces: count from after it.
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, fmt.Errorf("read /proc stat %q: no command name", line)
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("read /proc stat %q: %d fields after the command name", line, len(f))
	}
	var total float64
	for _, s := range f[11:13] {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("read /proc stat %q: %w", line, err)
		}
		total += v
	}
	return total / clockTicks, nil
}

// GoMemory is the Go runtime's view of a process's memory, read from the go_memstats
// series of its metrics endpoint, in bytes.
type GoMemory struct {
	// HeapInuse is the heap in spans in use: live objects and the garbage not yet swept.
	HeapInuse float64 `json:"heap_inuse"`
	// HeapIdle is the heap the runtime holds without using it; HeapReleased of it was
	// returned to the kernel (counted in no RSS).
	HeapIdle     float64 `json:"heap_idle"`
	HeapReleased float64 `json:"heap_released"`
	// StackInuse is the goroutines' stacks.
	StackInuse float64 `json:"stack_inuse"`
	// NextGC is the heap size at which the next collection starts (the GC goal).
	NextGC float64 `json:"next_gc"`
	// Sys is everything the runtime obtained from the kernel.
	Sys float64 `json:"sys"`
	// Goroutines running at the scrape.
	Goroutines float64 `json:"goroutines"`
}

// GoMemoryOf picks the Go runtime's figures out of a metrics scrape.
func GoMemoryOf(series []Series) GoMemory {
	return GoMemory{
		HeapInuse:    Sum(series, "go_memstats_heap_inuse_bytes", nil),
		HeapIdle:     Sum(series, "go_memstats_heap_idle_bytes", nil),
		HeapReleased: Sum(series, "go_memstats_heap_released_bytes", nil),
		StackInuse:   Sum(series, "go_memstats_stack_inuse_bytes", nil),
		NextGC:       Sum(series, "go_memstats_next_gc_bytes", nil),
		Sys:          Sum(series, "go_memstats_sys_bytes", nil),
		Goroutines:   Sum(series, "go_goroutines", nil),
	}
}

// Settled reports whether the last n values lie within tolerance of each other: the
// figure (a process's RSS) stopped moving.
func Settled(values []float64, n int, tolerance float64) bool {
	if n <= 0 || len(values) < n {
		return false
	}
	lo, hi := values[len(values)-n], values[len(values)-n]
	for _, v := range values[len(values)-n:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	return hi-lo <= tolerance
}
