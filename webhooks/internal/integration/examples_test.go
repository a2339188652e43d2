package integration

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// minInvalidExamples is the least number of refused manifests the docs must show.
const minInvalidExamples = 25

// runKubectl runs kubectl as a cluster admin and returns its output and whether it
// succeeded.
func runKubectl(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// serverDryRun submits a manifest the way a user checks one: through admission and
// validation, without storing it.
func serverDryRun(t *testing.T, file string) (stdout, stderr string, err error) {
	t.Helper()
	return runKubectl(t, "create", "--dry-run=server", "--namespace=default", "-f", file)
}

func examples(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "examples", dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestExamplesAreAccepted creates every example of docs/examples as a user would, and
// expects each to be accepted without warnings.
func TestExamplesAreAccepted(t *testing.T) {
	files := examples(t, "")
	if len(files) < 15 {
		t.Fatalf("want an example per feature in docs/examples, found %d", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			out, errOut, err := serverDryRun(t, file)
			if err != nil {
				t.Fatalf("refused: %v\n%s", err, errOut)
			}
			if !strings.Contains(out, "created (server dry run)") {
				t.Errorf("unexpected output %q", out)
			}
			if strings.Contains(errOut, "Warning") {
				t.Errorf("an example should not draw warnings: %s", errOut)
			}
		})
	}
}

// TestInvalidExamplesAreRefused submits every manifest of docs/examples/invalid and
// expects the refusal its first line announces (with the field path).
func TestInvalidExamplesAreRefused(t *testing.T) {
	files := examples(t, "invalid")
	if len(files) < minInvalidExamples {
		t.Fatalf("want at least %d refused examples, found %d", minInvalidExamples, len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			want := expectation(t, file)
			_, errOut, err := serverDryRun(t, file)
			if err == nil {
				t.Fatalf("accepted, want refused with %q", want)
			}
			if !strings.Contains(errOut, want) {
				t.Errorf("want the refusal to contain %q, got:\n%s", want, errOut)
			}
			t.Log(strings.TrimSpace(errOut))
		})
	}
}

// expectation reads the "# expect: <text>" first line of an invalid example.
func expectation(t *testing.T, file string) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		t.Fatalf("read first line: %v", err)
	}
	want, ok := strings.CutPrefix(strings.TrimSpace(line), "# expect: ")
	if !ok || !strings.Contains(want, ".") {
		t.Fatalf("first line must be `# expect: <message with the field path>`, got %q", line)
	}
	return want
}

// TestShortGracePeriodIsAWarning checks that kubectl shows the warning and the
// cluster is still created.
func TestShortGracePeriodIsAWarning(t *testing.T) {
	file := filepath.Join(t.TempDir(), "short.yaml")
	manifest := `apiVersion: valkey.io/v1alpha1
kind: ValkeyCluster
metadata:
  name: short-grace
spec:
  terminationGracePeriodSeconds: 5
`
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := serverDryRun(t, file)
	if err != nil {
		t.Fatalf("refused: %v\n%s", err, errOut)
	}
	const want = "Warning: spec.terminationGracePeriodSeconds: 5 s is shorter than the 15 s"
	if !strings.Contains(errOut, want) {
		t.Errorf("want %q on stderr, got %q", want, errOut)
	}
}
