package node

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// TestScriptsPassShellcheck runs shellcheck on every shell program a member's pod runs,
// as the pod gets it (the embedded files put together), for each kind of member.
func TestScriptsPassShellcheck(t *testing.T) {
	bin, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Fatal("shellcheck is not installed (Debian package shellcheck): run make deps")
	}
	plain := testNode()
	persistent := testNode(func(vn *v1alpha1.ValkeyNode) { vn.Spec.Persistence = &v1alpha1.PersistenceSpec{} })
	tls := testNode(withTLS)
	commands := map[string][]string{
		"server without persistence": serverCommand(plain),
		"server with persistence":    serverCommand(persistent),
		"preStop hand-over":          handoverHook(plain).PreStop.Exec.Command,
		"preStop hand-over with TLS": handoverHook(tls).PreStop.Exec.Command,
	}
	for name, cmd := range commands {
		if len(cmd) < 3 || cmd[0] != "sh" || cmd[1] != "-c" {
			t.Errorf("%s: not a shell command: %q", name, cmd)
			continue
		}
		c := exec.Command(bin, "-s", "sh", "-")
		c.Stdin = strings.NewReader(cmd[2])
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Run(); err != nil {
			t.Errorf("%s: shellcheck: %v\n%s", name, err, out.String())
		}
	}
}

// TestStartRefusesUnsupportedServer runs prepare_start (version.sh and start.sh, as the
// server command sources them) with a valkey-server on PATH that is: a script printing a
// given --version line, the real valkey-server 8.0.1, and the real redis-server (Debian's
// redis-server package) under the name valkey-server when it is installed. A server that
// is not Valkey 8.0 or later is refused with exit code unsupportedServerExit and one
// line, before anything reads valkey.conf.
func TestStartRefusesUnsupportedServer(t *testing.T) {
	fake := func(banner string) string {
		return "#!/bin/sh\necho '" + banner + "'\n"
	}
	link := func(bin string) string {
		path, err := exec.LookPath(bin)
		if err != nil {
			return ""
		}
		return path
	}
	cases := []struct {
		name string
		// script is the fake server's content, or link the real binary to run.
		script, link string
		exit         int
		last         string
	}{
		{"Valkey 8.0.1", fake("Valkey server v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=39f7c371e0a96e3d"), "", 0, "Valkey 8.0.1"},
		{"Valkey 9.1.2", fake("Valkey server v=9.1.2 sha=00000000:0 malloc=libc bits=64 build=1"), "", 0, "Valkey 9.1.2"},
		{"Valkey 7.2.4", fake("Valkey server v=7.2.4 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=1"), "", unsupportedServerExit,
			"this image's valkey-server is Valkey 7.2.4; the operator runs Valkey 8.0 or later"},
		{"Redis 7.0.15", fake("Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d7c971a948f0"), "", unsupportedServerExit,
			"this image's valkey-server is Redis 7.0.15; the operator runs Valkey 8.0 or later"},
		{"no version", fake("something else"), "", unsupportedServerExit,
			"this image's valkey-server is something of an unknown version; the operator runs Valkey 8.0 or later"},
		{"real valkey-server", "", link("valkey-server"), 0, "Valkey "},
		{"real redis-server", "", link("redis-server"), unsupportedServerExit, "this image's valkey-server is Redis 7."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.script == "" && tc.link == "" {
				t.Skipf("%s: the server is not on PATH (hack/deps.txt lists it; make deps installs it)", tc.name)
			}
			dir := t.TempDir()
			server := filepath.Join(dir, "bin", "valkey-server")
			if err := os.MkdirAll(filepath.Dir(server), 0o755); err != nil {
				t.Fatal(err)
			}
			var err error
			if tc.link != "" {
				err = os.Symlink(tc.link, server)
			} else {
				err = os.WriteFile(server, []byte(tc.script), 0o755)
			}
			if err != nil {
				t.Fatal(err)
			}
			defaults := filepath.Join(dir, "defaults")
			if err := os.WriteFile(defaults, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := shell(versionSh+startSh+"prepare_start \"$@\"\n", "server", "-", "-", defaults, filepath.Join(dir, "include"))
			c := exec.Command(cmd[0], cmd[1:]...)
			c.Env = []string{"PATH=" + filepath.Dir(server) + ":/usr/bin:/bin"}
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			err = c.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if code != tc.exit || !strings.HasPrefix(lines[len(lines)-1], tc.last) {
				t.Errorf("exit %d, output:\n%s\nwant exit %d, last line %q", code, out.String(), tc.exit, tc.last)
			}
		})
	}
}
