package depscheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pathWithout returns a folder of links to every program of the table found on this
// machine, except the ones named, for use as the only PATH entry.
func pathWithout(t *testing.T, table Table, except ...string) string {
	t.Helper()
	dir := t.TempDir()
	skip := map[string]bool{}
	for _, e := range except {
		skip[e] = true
	}
	for _, e := range table {
		if strings.HasPrefix(e.Program, "/") || skip[e.Program] {
			continue
		}
		p, err := exec.LookPath(e.Program)
		if err != nil {
			continue
		}
		if err := os.Symlink(p, filepath.Join(dir, e.Program)); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	return dir
}

// runDeps runs hack/deps.sh with the given environment (PATH among it) and profile.
func runDeps(t *testing.T, env []string, profile string) (string, error) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, filepath.Join(root, "hack", "deps.sh"), profile)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// TestDepsCheckNamesAMissingProgram: with nft missing from PATH and installing switched
// off, the setup script stops and names it with its package.
func TestDepsCheckNamesAMissingProgram(t *testing.T) {
	table, err := ReadTable(filepath.Join(root, "hack", "deps.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := pathWithout(t, table, "nft")
	out, err := runDeps(t, []string{"PATH=" + dir, "DEPS=check", "HOME=" + t.TempDir()}, "demo")
	if err == nil {
		t.Fatalf("deps.sh passed without nft on PATH:\n%s", out)
	}
	if !strings.Contains(out, "nft: apt-get install nftables") {
		t.Errorf("deps.sh did not name nft and its package:\n%s", out)
	}
	if !strings.Contains(out, "not installing (DEPS=check)") {
		t.Errorf("deps.sh did not say why it does not install:\n%s", out)
	}
}

// TestDepsScriptOnAFixtureTable checks the script's decisions on a table of its own:
// present programs pass, a Go tool counts only at its recorded version, the manual
// entries print their instructions.
func TestDepsScriptOnAFixtureTable(t *testing.T) {
	tableFile := filepath.Join(t.TempDir(), "deps.txt")
	fixture := "# fixture\nbash apt:bash demo\nsh apt:dash demo\nonly-in-test apt:example/bookworm-backports test\n" +
		"toolx go:example.com/cmd/toolx@v1.2.3 demo\nmagic manual:ask a wizard demo\n"
	if err := os.WriteFile(tableFile, []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	tools := t.TempDir()
	bin := t.TempDir()
	for _, p := range []string{"bash", "sh"} {
		real, err := exec.LookPath(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, filepath.Join(bin, p)); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PATH=" + bin, "DEPS=check", "DEPS_TABLE=" + tableFile, "TOOLS_BIN=" + tools}
	writeTool := func(version string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(tools, "toolx"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tools, ".toolx.version"), []byte(version+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	magic := filepath.Join(bin, "magic")

	out, err := runDeps(t, env, "demo")
	if err == nil || !strings.Contains(out, "toolx: GOBIN="+tools+" go install example.com/cmd/toolx@v1.2.3") ||
		!strings.Contains(out, "magic: ask a wizard") {
		t.Errorf("missing tool and manual entry not reported (err %v):\n%s", err, out)
	}
	if strings.Contains(out, "only-in-test") {
		t.Errorf("the demo profile reported a test-only program:\n%s", out)
	}

	writeTool("v1.2.2")
	if err := os.Symlink("/bin/true", magic); err != nil {
		t.Fatal(err)
	}
	out, err = runDeps(t, env, "demo")
	if err == nil || !strings.Contains(out, "toolx:") {
		t.Errorf("a tool at another version passed (err %v):\n%s", err, out)
	}

	writeTool("v1.2.3")
	if out, err := runDeps(t, env, "demo"); err != nil {
		t.Errorf("everything present, deps.sh failed: %v\n%s", err, out)
	}
	out, err = runDeps(t, env, "test")
	if err == nil || !strings.Contains(out, "only-in-test: apt-get install -t bookworm-backports example") {
		t.Errorf("the test profile did not report its own program with its suite (err %v):\n%s", err, out)
	}
}
