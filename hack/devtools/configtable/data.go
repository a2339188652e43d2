package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Server is what one real server says of its configuration keys: the data file
// valkeyconf/measured/valkey-<version>.json that `make config-table` writes and
// `make generate` renders into valkeyconf's key table.
type Server struct {
	// Version is the server's own (valkey-server --version), e.g. "8.0.1".
	Version string `json:"version"`
	// Package is the Debian package it came from, when known.
	Package string `json:"package,omitempty"`
	// Keys are every key of CONFIG GET *, by name.
	Keys map[string]Key `json:"keys"`
}

// The kinds of value a server takes, told apart by the message its config parser
// gives for a value of no kind ("x-probe"; see classify).
const (
	KindBool            = "bool"            // yes or no
	KindInteger         = "integer"         // a whole number in [Min, Max]
	KindOctal           = "octal"           // an octal number in [Min, Max]
	KindMemory          = "memory"          // a byte count, with an optional unit
	KindMemoryOrPercent = "memoryOrPercent" // a byte count, or a percentage up to MaxPercent
	KindEnum            = "enum"            // one of Values
	KindFlags           = "flags"           // one or more of Values, separated by spaces
	KindString          = "string"          // any word (the probe's word is taken)
	KindOther           = "other"           // its own syntax (save, client-output-buffer-limit, ...)
)

// Key is one key's type on one server.
type Key struct {
	Kind string `json:"kind"`
	// Min and Max bound integer, octal and memory values, in decimal (they may be
	// beyond int64: an unsigned key's maximum can be 2^64-1).
	Min string `json:"min,omitempty"`
	Max string `json:"max,omitempty"`
	// MaxPercent bounds the percentage of a memoryOrPercent key.
	MaxPercent string `json:"maxPercent,omitempty"`
	// Values of an enum or flags key, as the server lists them.
	Values []string `json:"values,omitempty"`
	// Refusal is what the server says to the probe's word, for kind other.
	Refusal string `json:"refusal,omitempty"`
	// Unlisted is true for a key the server takes at start but does not list with
	// CONFIG GET * (hidden, or deprecated and ignored); only keys that another measured
	// version lists are probed for it.
	Unlisted bool `json:"unlisted,omitempty"`
	// Default is the value CONFIG GET returns on a server started with no config but
	// the measurement's own (absent for those keys: port, unixsocket, dir).
	Default *string `json:"default,omitempty"`
}

// readServers reads every valkey-*.json of dir, oldest version first.
func readServers(dir string) ([]Server, error) {
	files, err := filepath.Glob(filepath.Join(dir, "valkey-*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no valkey-*.json in %s", dir)
	}
	var out []Server
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var s Server
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		if _, err := parseVersion(s.Version); err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := parseVersion(out[i].Version)
		b, _ := parseVersion(out[j].Version)
		return less(a, b)
	})
	return out, nil
}

// writeServer writes s as dir/valkey-<version>.json.
func writeServer(dir string, s Server) error {
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "valkey-"+s.Version+".json"), append(raw, '\n'), 0o644)
}

func parseVersion(s string) ([3]int, error) {
	var v [3]int
	if _, err := fmt.Sscanf(s, "%d.%d.%d", &v[0], &v[1], &v[2]); err != nil {
		return v, fmt.Errorf("bad version %q", s)
	}
	return v, nil
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
