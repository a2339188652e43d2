package integration

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// minInvalidExamples is the least number of refused manifests the docs must show.
const minInvalidExamples = 25

// kubectlRun is what one kubectl command printed and whether it succeeded.
type kubectlRun struct {
	stdout, stderr string
	err            error
}

// runKubectl runs kubectl as a cluster admin. The timeout is generous: on a loaded
// 2-core machine a kubectl takes seconds to start.
func runKubectl(args ...string) kubectlRun {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return kubectlRun{out.String(), errOut.String(), err}
}

// serverDryRun submits a manifest the way a user checks one: through admission and
// validation, without storing it.
func serverDryRun(file string) kubectlRun {
	return runKubectl("create", "--dry-run=server", "--namespace=default", "-f", file)
}

// dryRunParallel is how many kubectl processes dryRunAll runs at once. All of them at
// once (54 invalid examples) can make some exceed runKubectl's timeout on a loaded machine, and
// a killed kubectl printed nothing of the refusal its example announces.
const dryRunParallel = 8

// dryRunAll submits the files dryRunParallel at a time (kubectl takes a while to start)
// and returns the runs by file.
func dryRunAll(files []string) map[string]kubectlRun {
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, dryRunParallel)
	out := map[string]kubectlRun{}
	for _, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			r := serverDryRun(f)
			mu.Lock()
			out[f] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// examples lists the manifests of docs/examples/dir, when the spec tree is built.
func examples(dir string) []string {
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "examples", dir, "*.yaml"))
	if err != nil {
		panic(err)
	}
	return files
}

// fileEntries makes one table entry per file, named after it.
func fileEntries(files []string) []TableEntry {
	var out []TableEntry
	for _, f := range files {
		out = append(out, Entry(filepath.Base(f), f))
	}
	return out
}

// Every example of docs/examples, created as a user would, is accepted without warnings.
var _ = Describe("The examples of the docs", Ordered, func() {
	files := examples("")
	var runs map[string]kubectlRun
	BeforeAll(func() { runs = dryRunAll(files) })

	It("show every feature", func() {
		Expect(len(files)).To(BeNumerically(">=", 15), "want an example per feature in docs/examples")
	})

	DescribeTable("are accepted without warnings",
		func(file string) {
			r := runs[file]
			Expect(r.err).NotTo(HaveOccurred(), "refused:\n%s", r.stderr)
			Expect(r.stdout).To(ContainSubstring("created (server dry run)"))
			Expect(r.stderr).NotTo(ContainSubstring("Warning"), "an example should not draw warnings")
		},
		fileEntries(files),
	)
})

// Every manifest of docs/examples/invalid is refused as its first line announces (with
// the field path).
var _ = Describe("The invalid examples of the docs", Ordered, func() {
	files := examples("invalid")
	var runs map[string]kubectlRun
	BeforeAll(func() { runs = dryRunAll(files) })

	It("are many", func() {
		Expect(len(files)).To(BeNumerically(">=", minInvalidExamples), "refused examples in docs/examples/invalid")
	})

	DescribeTable("are refused with the refusal they announce",
		func(file string) {
			want := expectation(file)
			r := runs[file]
			Expect(r.err).To(HaveOccurred(), "accepted, want refused with %q", want)
			Expect(r.err).NotTo(MatchError(ContainSubstring("signal: killed")), "kubectl did not answer within its timeout")
			Expect(r.stderr).To(ContainSubstring(want))
			GinkgoWriter.Println(strings.TrimSpace(r.stderr))
		},
		fileEntries(files),
	)
})

// expectation reads the "# expect: <text>" first line of an invalid example.
func expectation(file string) string {
	GinkgoHelper()
	f, err := os.Open(file)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	line, err := bufio.NewReader(f).ReadString('\n')
	Expect(err).NotTo(HaveOccurred(), "read first line")
	want, ok := strings.CutPrefix(strings.TrimSpace(line), "# expect: ")
	Expect(ok && strings.Contains(want, ".")).To(BeTrue(), "first line must be `# expect: <message with the field path>`, got %q", line)
	return want
}

// kubectl shows the warning and the cluster is still created.
var _ = It("shows a short grace period as a warning and still creates the cluster", func() {
	file := filepath.Join(GinkgoT().TempDir(), "short.yaml")
	manifest := `apiVersion: valkey.io/v1alpha1
kind: ValkeyCluster
metadata:
  name: short-grace
spec:
  terminationGracePeriodSeconds: 5
`
	Expect(os.WriteFile(file, []byte(manifest), 0o600)).To(Succeed())
	r := serverDryRun(file)
	Expect(r.err).NotTo(HaveOccurred(), "refused:\n%s", r.stderr)
	Expect(r.stderr).To(ContainSubstring("Warning: spec.terminationGracePeriodSeconds: 5 s is shorter than the 15 s"))
})
