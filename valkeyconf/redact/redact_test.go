package redact_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valkey-operator/valkey-operator/valkeyconf/redact"
)

// fixture reads what a real server printed (testdata/<name>.txt: valkey-server 8.0.1 and
// redis-server 7.0.15 from Debian, run on a config holding the secret "s3cret").
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTextServerOutput: what each server prints when it stops at a config line keeps
// the line's key and the error, and loses the value.
func TestTextServerOutput(t *testing.T) {
	tests := []struct {
		fixture string
		want    string // the quoted line after redaction
		keep    []string
	}{
		{"redis-7.0.15-primaryauth", ">>> 'primaryauth <redacted>'", []string{"Redis 7.0.15", "Bad directive or wrong number of arguments"}},
		{"redis-7.0.15-include", ">>> 'primaryauth <redacted>'", []string{"at line 1"}},
		{"redis-7.0.15-primaryauth-args", ">>> 'primaryauth <redacted>'", []string{"at line 3"}},
		{"redis-7.0.15-masterauth-quoted", ">>> 'masterauth <redacted>'", []string{"wrong number of arguments"}},
		{"valkey-8.0.1-primaryauth-extra", ">>> 'primaryauth <redacted>'", []string{"Version 8.0.1", "wrong number of arguments"}},
		{"valkey-8.0.1-user-line", ">>> 'user <redacted>'", []string{"Syntax error"}},
		{"valkey-8.0.1-bad-key", ">>> 'no-such-key <redacted>'", []string{"Bad directive"}},
		{"valkey-8.0.1-requirepass-empty", ">>> 'requirepass'", []string{"wrong number of arguments"}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			in := fixture(t, tt.fixture)
			got := redact.Text(in)
			if strings.Contains(got, "s3cret") || strings.Contains(got, "s3 cret") {
				t.Errorf("the secret survived:\n%s", got)
			}
			for _, k := range append(tt.keep, tt.want) {
				if !strings.Contains(got, k) {
					t.Errorf("lost %q:\n%s", k, got)
				}
			}
		})
	}
}

// TestTextACLReplies: the modifier ACL SETUSER quotes in its error reply.
func TestTextACLReplies(t *testing.T) {
	got := redact.Text(fixture(t, "valkey-8.0.1-acl-setuser-replies"))
	for _, secret := range []string{"s3cret", "0123456789abcdef0123456789abcdef"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q survived:\n%s", secret, got)
		}
	}
	for _, k := range []string{"modifier 'badrule': Syntax error", "modifier '#<redacted>'", "modifier '<<redacted>'", "does not exist"} {
		if !strings.Contains(got, k) {
			t.Errorf("lost %q:\n%s", k, got)
		}
	}
}

func TestText(t *testing.T) {
	hash := strings.Repeat("5e884898", 8)
	tests := []struct {
		name, in string
		secrets  []string
		want     string
	}{
		{"nothing to hide", "pod a-0 runs but its server does not answer: dial tcp 10.0.0.1:6379: i/o timeout", nil,
			"pod a-0 runs but its server does not answer: dial tcp 10.0.0.1:6379: i/o timeout"},
		{"quoted config line", ">>> 'primaryauth s3cret'\nBad directive", nil, ">>> 'primaryauth <redacted>'\nBad directive"},
		{"quoted line cut short", "x: >>> 'masterauth s3cr", nil, "x: >>> 'masterauth <redacted>"},
		{"quoted key alone", ">>> 'requirepass'", nil, ">>> 'requirepass'"},
		{"lastLine form", "'primaryauth s3cret': Bad directive or wrong number of arguments", nil,
			"'primaryauth <redacted>': Bad directive or wrong number of arguments"},
		{"CONFIG SET", "CONFIG SET masterauth s3cret failed", nil, "CONFIG SET masterauth <redacted> failed"},
		{"flag", "valkey-server --primaryauth s3cret --port 6379", nil, "valkey-server --primaryauth <redacted> --port 6379"},
		{"quoted args", `"requirepass" "s3 cret"`, nil, `"requirepass" <redacted>`},
		{"key=value", "MASTERAUTH=s3cret", nil, "MASTERAUTH=<redacted>"},
		{"AUTH", "AUTH _operator s3cret", nil, "AUTH <redacted>"},
		{"AUTH one argument", "auth s3cret", nil, "auth <redacted>"},
		{"HELLO AUTH", "HELLO 3 AUTH _operator s3cret SETNAME x", nil, "HELLO 3 AUTH <redacted> SETNAME x"},
		{"NOAUTH", "NOAUTH Authentication required.", nil, "NOAUTH Authentication required."},
		{"add password", "ACL SETUSER bob on >s3cret ~* +@all", nil, "ACL SETUSER bob on ><redacted> ~* +@all"},
		{"remove password", "ACL SETUSER bob <s3cret", nil, "ACL SETUSER bob <<redacted>"},
		{"hash", "user bob on #" + hash + " ~*", nil, "user bob on #<redacted> ~*"},
		{"remove hash", "user bob !" + hash, nil, "user bob !<redacted>"},
		{"arrows and nil stay", "a -> b, <nil>, >>> x", nil, "a -> b, <nil>, >>> x"},
		{"literal", "WRONGPASS for topsecret-value", []string{"topsecret-value"}, "WRONGPASS for <redacted>"},
		{"literal held in another", "abcdef", []string{"abc", "abcdef"}, "<redacted>"},
		{"empty literal ignored", "text", []string{""}, "text"},
		{"idempotent", "AUTH <redacted> and masterauth <redacted> and ><redacted>", nil,
			"AUTH <redacted> and masterauth <redacted> and ><redacted>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := redact.Text(tt.in, tt.secrets...)
			if got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := redact.Text(got, tt.secrets...); again != got {
				t.Errorf("not idempotent: %q then %q", got, again)
			}
		})
	}
}

// TestTextLiveServers runs the servers on PATH (valkey-server; redis-server, Debian's
// redis-server package) on a config they stop at, as the fixtures were made, and checks
// that what they print holds the secret and loses it once redacted.
func TestTextLiveServers(t *testing.T) {
	configs := map[string]string{
		"valkey-server": "port 0\nprimaryauth s3cret extra\n",
		"redis-server":  "port 0\nprimaryauth s3cret\n",
	}
	for bin, conf := range configs {
		t.Run(bin, func(t *testing.T) {
			path, err := exec.LookPath(bin)
			if err != nil {
				t.Skipf("%s is not installed", bin)
			}
			file := filepath.Join(t.TempDir(), "s.conf")
			if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			cmd := exec.Command(path, file)
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err == nil {
				t.Fatalf("%s started on %q", bin, conf)
			}
			if !strings.Contains(out.String(), ">>> 'primaryauth s3cret") {
				t.Fatalf("%s printed no quoted line with the secret:\n%s", bin, out.String())
			}
			if got := redact.Text(out.String()); strings.Contains(got, "s3cret") || !strings.Contains(got, ">>> 'primaryauth <redacted>'") {
				t.Errorf("redacted:\n%s", got)
			}
		})
	}
}
