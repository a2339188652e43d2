package depscheck

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"strings"
)

// Entry is one row of hack/deps.txt.
type Entry struct {
	Program string // a name, or an absolute path
	Source  string // apt:<pkg>[/<suite>], go:<module>@<version> or manual:<how>
	Profile string // demo, release, test, kind or fresh
}

// Table is the setup table.
type Table []Entry

// ReadTable reads the setup table.
func ReadTable(file string) (Table, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var t Table
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s:%d: want program, source and profile", file, n)
		}
		e := Entry{Program: fields[0], Source: fields[1], Profile: fields[len(fields)-1]}
		if !strings.HasPrefix(e.Source, "apt:") && !strings.HasPrefix(e.Source, "go:") && !strings.HasPrefix(e.Source, "manual:") {
			return nil, fmt.Errorf("%s:%d: source %q: want apt:, go: or manual: before the name", file, n, e.Source)
		}
		switch e.Profile {
		case "demo", "release", "test", "kind", "clients", "fresh":
		default:
			return nil, fmt.Errorf("%s:%d: profile %q is not demo, release, test, kind, clients or fresh", file, n, e.Profile)
		}
		t = append(t, e)
	}
	return t, sc.Err()
}

// Covers reports whether prog (a name or a path) is in the table: by name, or by the
// base name of an absolute path in the table.
func (t Table) Covers(prog string) bool {
	for _, e := range t {
		if e.Program == prog || path.Base(e.Program) == path.Base(prog) {
			return true
		}
	}
	return false
}
