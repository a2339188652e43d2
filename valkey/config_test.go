package valkey_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var goldenConfigs = map[string]valkey.ServerConfig{
	"minimal": {
		Port: 6379, DataDir: "/data", ClusterConfigFile: "/data/nodes.conf",
		ACLFile: "/etc/valkey/acl/users.acl", PrimaryUser: "_replication",
		PrimaryAuthInclude: "/etc/valkey/auth/primaryauth.conf",
	},
	"tls-9.0-user": {
		Port: 6380, DataDir: "/data", ClusterConfigFile: "nodes.conf",
		TLS:     &valkey.TLSFiles{CertFile: "/tls/tls.crt", KeyFile: "/tls/tls.key", CAFile: "/tls/ca.crt"},
		Version: valkey.Version{Major: 9, Minor: 0, Patch: 1},
		User: map[string]string{
			"maxmemory": "1gb", "MaxMemory-Policy": "allkeys-lru", "save": "900 1 300 10",
			"cluster-node-timeout": "15000", "notify-keyspace-events": "",
			"syslog-ident": "a \"quoted\" \\ value\nport 1234", "io-threads": "4",
			// Owned or malformed: never rendered.
			"port": "1", "TLS-PORT": "2", "include": "/etc/passwd", "requirepass": "x",
			"cluster-announce-ip": "1.2.3.4", "bad key": "x", "x\ny": "z", "": "empty",
		},
	},
}

func TestRenderConfigGolden(t *testing.T) {
	for name, c := range goldenConfigs {
		t.Run(name, func(t *testing.T) {
			got := valkey.RenderConfig(c)
			if again := valkey.RenderConfig(c); !bytes.Equal(got, again) {
				t.Fatal("two renders of the same input differ")
			}
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("rendered config differs from %s:\n%s", path, got)
			}
			checkUserSection(t, got)
		})
	}
}

// checkUserSection parses the rendered config like the server does and
// checks that no operator-owned key appears after the user marker.
func checkUserSection(t *testing.T, conf []byte) {
	t.Helper()
	user := false
	for _, line := range strings.Split(string(conf), "\n") {
		if strings.HasPrefix(line, "# User config") {
			user = true
		}
		args, err := configLine(line)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if user && len(args) > 0 && valkeyconf.Owned(args[0]) {
			t.Errorf("owned key %q rendered from user config", args[0])
		}
	}
}

func TestOwnedAndLiveKeys(t *testing.T) {
	owned := []string{"port", "PORT", " dir ", "tls-cert-file", "TLS-Port", "cluster-announce-ip",
		"cluster-announce-hostname", "include", "rename-command", "masterauth", "primaryauth", "aclfile",
		"cluster-enabled", "cluster-config-file", "daemonize", "requirepass", "bind", "logfile", "user"}
	for _, k := range owned {
		if !valkeyconf.Owned(k) {
			t.Errorf("%q should be operator-owned", k)
		}
	}
	notOwned := []string{"maxmemory", "save", "io-threads", "cluster-node-timeout", "dbfilename", "tls", "users", "portx"}
	for _, k := range notOwned {
		if valkeyconf.Owned(k) {
			t.Errorf("%q should not be operator-owned", k)
		}
	}
	v80 := valkey.Version{Major: 8}
	for _, k := range []string{"maxmemory", "MAXMEMORY-policy", "maxclients", "timeout", "hz"} {
		if !valkeyconf.Live(k, v80) || !valkeyconf.Live(k, valkey.Version{}) {
			t.Errorf("%q should be live on 8.0", k)
		}
	}
	for _, k := range []string{"io-threads", "port", "tls-cert-file", "appendonly", "databases", "nope"} {
		if valkeyconf.Live(k, valkey.Version{Major: 99}) {
			t.Errorf("%q should not be live", k)
		}
	}
	if valkeyconf.Live("cluster-manual-failover-timeout", v80) || !valkeyconf.Live("cluster-manual-failover-timeout", valkey.Version{Major: 8, Minor: 1}) {
		t.Error("cluster-manual-failover-timeout is live from 8.1 on")
	}
	live := valkeyconf.LiveKeys(v80)
	if !slices.IsSorted(live) || len(live) < 50 || slices.ContainsFunc(live, valkeyconf.Owned) {
		t.Errorf("LiveKeys(8.0) = %v", live)
	}
}

func TestQuoteConfigValue(t *testing.T) {
	tests := map[string]string{
		"plain-1.0:/x@y": "plain-1.0:/x@y",
		"":               `""`,
		"a b":            `"a b"`,
		"a\"b\\c":        `"a\"b\\c"`,
		"x\ny\r\t\x00é":  `"x\ny\r\t\x00\xc3\xa9"`,
		"'":              `"'"`,
		"#c":             `"#c"`,
	}
	for in, want := range tests {
		got := valkey.QuoteConfigValue(in)
		if got != want {
			t.Errorf("QuoteConfigValue(%q) = %s, want %s", in, got, want)
		}
		args, err := configLine("k " + got)
		if err != nil || len(args) != 2 || args[1] != in {
			t.Errorf("%q does not read back: %q %v", in, args, err)
		}
	}
}

// configLine splits one line of valkey.conf the way the server does: lines
// are trimmed, '#' lines are comments, the rest is split by sdssplitargs.
func configLine(line string) ([]string, error) {
	line = strings.Trim(line, " \t\r\n")
	if line == "" || line[0] == '#' {
		return nil, nil
	}
	return splitArgs(line)
}

var errSplit = errors.New("unbalanced quotes")

// splitArgs is a port of Valkey's sdssplitargs.
func splitArgs(s string) ([]string, error) {
	var args []string
	p := 0
	for {
		for p < len(s) && isSpace(s[p]) {
			p++
		}
		if p >= len(s) {
			return args, nil
		}
		arg, next, err := splitOne(s, p)
		if err != nil {
			return nil, err
		}
		args, p = append(args, arg), next
	}
}

func isSpace(c byte) bool { return strings.IndexByte(" \t\n\r\v\f", c) >= 0 }

func isHex(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }

func hexVal(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// at returns s[i], or 0 past the end (like the C string terminator).
func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func splitOne(s string, p int) (string, int, error) {
	var cur []byte
	inq, insq := false, false
	for {
		c := at(s, p)
		switch {
		case inq:
			switch {
			case c == '\\' && at(s, p+1) == 'x' && isHex(at(s, p+2)) && isHex(at(s, p+3)):
				cur = append(cur, hexVal(s[p+2])<<4|hexVal(s[p+3]))
				p += 3
			case c == '\\' && at(s, p+1) != 0:
				p++
				cur = append(cur, map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'a': '\a'}[s[p]]|unmapped(s[p]))
			case c == '"':
				if n := at(s, p+1); n != 0 && !isSpace(n) {
					return "", 0, errSplit
				}
				return string(cur), p + 1, nil
			case c == 0:
				return "", 0, errSplit
			default:
				cur = append(cur, c)
			}
		case insq:
			switch {
			case c == '\\' && at(s, p+1) == '\'':
				p++
				cur = append(cur, '\'')
			case c == '\'':
				if n := at(s, p+1); n != 0 && !isSpace(n) {
					return "", 0, errSplit
				}
				return string(cur), p + 1, nil
			case c == 0:
				return "", 0, errSplit
			default:
				cur = append(cur, c)
			}
		default:
			switch c {
			case ' ', '\n', '\r', '\t', 0:
				return string(cur), p, nil
			case '"':
				inq = true
			case '\'':
				insq = true
			default:
				cur = append(cur, c)
			}
		}
		p++
	}
}

// unmapped returns c itself when it is not one of the letter escapes.
func unmapped(c byte) byte {
	if strings.IndexByte("nrtba", c) >= 0 {
		return 0
	}
	return c
}
