package framework

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/e2e/clients"
)

// ClientProgram is a client library users run, wrapped in a writer that keeps the client
// matrix's contract (e2e/clients/README.md): configuration from the environment, a
// "ready" line, one writer loop until the end of stdin, every acknowledged key read back,
// one "report" line.
type ClientProgram struct {
	// Name is the library's name ("ioredis").
	Name string
	// prepare makes the program ready to run (builds or installs it under the cache) and
	// returns its command line and extra environment.
	prepare func(ctx context.Context, p Paths) (argv, env []string, err error)
}

// ClientPrograms are the clients of the matrix: go-redis from the Go module proxy,
// redis-py from Debian's python3-redis, ioredis from npm.
var ClientPrograms = []ClientProgram{
	{Name: "go-redis", prepare: goRedis},
	// go-redis dials a member's address up to five times (DialerRetries) before it gives
	// up on it; an address a roll or a scale-in took away answers nothing, so each try
	// lasts the whole dial timeout. This row dials for 500 ms, once.
	{Name: "go-redis-tuned", prepare: func(ctx context.Context, p Paths) ([]string, []string, error) {
		argv, _, err := goRedis(ctx, p)
		return argv, []string{"DIAL_TIMEOUT_MS=500", "DIAL_RETRIES=1"}, err
	}},
	{Name: "redis-py", prepare: func(ctx context.Context, p Paths) ([]string, []string, error) {
		// Debian's interpreter, whose python3-redis the project installs (hack/deps.txt),
		// not whichever python3 comes first on PATH.
		if out, err := exec.CommandContext(ctx, "/usr/bin/python3", "-c", "import redis").CombinedOutput(); err != nil {
			return nil, nil, fmt.Errorf("redis-py: /usr/bin/python3 cannot import redis (make deps installs python3-redis): %w\n%s", err, out)
		}
		return []string{"/usr/bin/python3", filepath.Join(p.RepoRoot, "e2e", "clients", "redispy", "writer.py")}, nil, nil
	}},
	{Name: "ioredis", prepare: func(ctx context.Context, p Paths) ([]string, []string, error) {
		src := filepath.Join(p.RepoRoot, "e2e", "clients", "ioredis")
		dir := filepath.Join(p.CacheDir, "clients", "ioredis")
		if err := npmInstall(ctx, src, dir); err != nil {
			return nil, nil, err
		}
		return []string{"node", filepath.Join(src, "writer.mjs")}, []string{"IOREDIS_MODULES=" + filepath.Join(dir, "node_modules")}, nil
	}},
}

// preparedPrograms holds what each program's prepare returned, by name: a suite starts
// the clients once per operation, and builds or installs them once.
var preparedPrograms sync.Map

type preparedProgram struct{ argv, env []string }

// prepared is prepare, once per process (a failure is tried again next time).
func (c ClientProgram) prepared(ctx context.Context, p Paths) ([]string, []string, error) {
	if v, ok := preparedPrograms.Load(c.Name); ok {
		pp := v.(preparedProgram)
		return pp.argv, pp.env, nil
	}
	argv, env, err := c.prepare(ctx, p)
	if err == nil {
		preparedPrograms.Store(c.Name, preparedProgram{argv, env})
	}
	return argv, env, err
}

// goRedis builds the go-redis writer.
func goRedis(ctx context.Context, p Paths) ([]string, []string, error) {
	bin := filepath.Join(p.CacheDir, "clients", "bin", "goredis")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./clients/goredis")
	cmd.Dir = filepath.Join(p.RepoRoot, "e2e")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("go build the go-redis writer: %w\n%s", err, out)
	}
	return []string{bin}, nil, nil
}

// npmInstall installs the locked packages of src's package.json into dir/node_modules
// (npm ci), once per lock file.
func npmInstall(ctx context.Context, src, dir string) error {
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		return err
	}
	if done, err := os.ReadFile(filepath.Join(dir, "package-lock.json")); err == nil && string(done) == string(lock) {
		if _, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil {
			return nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pkg, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), pkg, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "package-lock.json"), lock, 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %w\n%s", dir, err, out)
	}
	return nil
}

// ClientReport is what one client program saw in one run.
type ClientReport = clients.Report

// ClientRun is the client programs writing to one cluster.
type ClientRun struct {
	procs []*clientProc
}

type clientProc struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *tailBuffer
	done   chan error
}

// StartClients starts every program of ClientPrograms writing keys prefix:<program> to
// the cluster's members as the test user, and waits until each has answered once. What
// each prints on stderr goes to .cache/e2e/clients/<prefix>-<program>.log.
func (k *Cluster) StartClients(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, prefix string) *ClientRun {
	t.Helper()
	seeds := strings.Join(k.MemberAddrs(ctx, t, vc), ",")
	run := &ClientRun{}
	t.Cleanup(run.kill)
	for _, prog := range ClientPrograms {
		argv, env, err := prog.prepared(ctx, k.Paths)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Env = append(cmd.Env, "SEEDS="+seeds, "VK_USERNAME="+TestUser, "VK_PASSWORD=any",
			"PREFIX="+prefix+":"+prog.Name)
		p := &clientProc{name: prog.Name, cmd: cmd, lines: make(chan string, 4), stderr: &tailBuffer{max: 4096}, done: make(chan error, 1)}
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = p.stderr
		// The whole of what it prints, for a diagnosis after the run.
		logDir := filepath.Join(k.Paths.CacheDir, "e2e", "clients")
		if err := os.MkdirAll(logDir, 0o755); err == nil {
			if f, err := os.Create(filepath.Join(logDir, prefix+"-"+prog.Name+".log")); err == nil {
				t.Cleanup(func() { _ = f.Close() })
				cmd.Stderr = io.MultiWriter(f, p.stderr)
			}
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start the %s writer: %v", prog.Name, err)
		}
		go func() {
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
			for sc.Scan() {
				p.lines <- sc.Text()
			}
			close(p.lines)
			p.done <- cmd.Wait()
		}()
		run.procs = append(run.procs, p)
	}
	for _, p := range run.procs {
		select {
		case line, ok := <-p.lines:
			if !ok || !strings.Contains(line, `"ready"`) {
				t.Fatalf("the %s writer did not get ready (%q): %s", p.name, line, p.stderr.String())
			}
		case <-time.After(time.Minute):
			t.Fatalf("the %s writer not ready within a minute: %s", p.name, p.stderr.String())
		}
	}
	return run
}

// Stop ends every writer (closing its stdin), waits for each to read its keys back from
// the members at seeds (the cluster's addresses now: a roll changes them all) and returns
// their reports, in the order of ClientPrograms.
func (r *ClientRun) Stop(seeds []string) []ClientReport {
	for _, p := range r.procs {
		_, _ = io.WriteString(p.stdin, "SEEDS="+strings.Join(seeds, ",")+"\n")
		_ = p.stdin.Close()
	}
	var wg sync.WaitGroup
	reports := make([]ClientReport, len(r.procs))
	for i, p := range r.procs {
		wg.Go(func() { reports[i] = p.report() })
	}
	wg.Wait()
	return reports
}

// report reads the writer's report line, or says how it ended without one.
func (p *clientProc) report() ClientReport {
	timeout := time.After(3 * time.Minute)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				err := <-p.done
				return ClientReport{Client: p.name, Exit: fmt.Sprintf("%v; stderr: %s", err, p.stderr.String())}
			}
			var rep ClientReport
			if strings.Contains(line, `"report"`) && json.Unmarshal([]byte(line), &rep) == nil {
				return rep
			}
		case <-timeout:
			_ = p.cmd.Process.Kill()
			return ClientReport{Client: p.name, Exit: "no report within 3 minutes of the stop; stderr: " + p.stderr.String()}
		}
	}
}

// kill ends writers a failed test left running (killing one that ended does nothing).
func (r *ClientRun) kill() {
	for _, p := range r.procs {
		_ = p.cmd.Process.Kill()
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b = append(b.b, p...)
	if len(b.b) > b.max {
		b.b = b.b[len(b.b)-b.max:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.b)
}

// CheckerReport is the write-checker's report as a row of the matrix (its writers, one
// per shard, write in parallel; its longest gap is the longest of any of them).
func CheckerReport(r checker.Report) ClientReport {
	return ClientReport{Client: "write-checker (rueidis)", Writes: r.Writes, Acked: r.Acked, Failed: r.Errors,
		Lost: r.Lost, LostKeys: r.LostKeys, LongestGapMs: r.MaxGap().Milliseconds()}
}

// ClientMatrix collects the client reports of several operations into the table
// docs/clients.md shows.
type ClientMatrix struct {
	rows []clientRow
}

type clientRow struct {
	op      string
	reports []ClientReport
}

// Add records the reports of one operation.
func (m *ClientMatrix) Add(op string, reports []ClientReport) {
	m.rows = append(m.rows, clientRow{op, reports})
}

// Markdown renders one row per operation and client: failed writes, acknowledged writes
// lost, the longest gap between two acknowledged writes, the most frequent errors.
func (m *ClientMatrix) Markdown() string {
	var b strings.Builder
	b.WriteString("| operation | client | writes | failed | lost | longest gap | errors |\n|---|---|---|---|---|---|---|\n")
	for _, row := range m.rows {
		for _, r := range row.reports {
			name := r.Client
			if r.Exit != "" {
				fmt.Fprintf(&b, "| %s | %s | — | — | — | — | ended without a report |\n", row.op, name)
				continue
			}
			errs := strings.Join(r.TopErrors(2), "; ")
			errs = strings.ReplaceAll(errs, "|", "\\|")
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %s s | %s |\n", row.op, name, r.Writes, r.Failed, r.Lost,
				strconv.FormatFloat(float64(r.LongestGapMs)/1000, 'f', 2, 64), errs)
		}
	}
	return b.String()
}
