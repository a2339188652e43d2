package localkube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// run executes a command and returns its combined output; a failure carries the output.
func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// runStdin is run with data on standard input.
func runStdin(ctx context.Context, stdin string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// daemon is a long-running process of the cluster, started detached from the caller.
type daemon struct {
	Name string
	Args []string
	Env  []string
	Dir  string
}

// start launches the daemon in its own session with output to logDir/<name>.log and records
// its PID in pidDir/<name>.pid. The caller does not wait for it: it outlives localkube up.
func (d daemon) start(logDir, pidDir string) (int, error) {
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(pidDir, 0o755); err != nil {
		return 0, err
	}
	logf, err := os.OpenFile(filepath.Join(logDir, d.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer devnull.Close()
	cmd := exec.Command(d.Args[0], d.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, logf, logf
	cmd.Env = append(os.Environ(), d.Env...)
	cmd.Dir = d.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", d.Name, err)
	}
	pid := cmd.Process.Pid
	// Reap the process if it exits while this program still runs, so it never lingers as
	// our zombie; once we exit, init adopts it.
	go func() { _ = cmd.Wait() }()
	if err := os.WriteFile(filepath.Join(pidDir, d.Name+".pid"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return pid, err
	}
	return pid, nil
}

// readPid returns the PID recorded for a daemon, or 0.
func readPid(pidDir, name string) int {
	b, err := os.ReadFile(filepath.Join(pidDir, name+".pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// alive reports whether pid runs. A zombie counts as gone: this machine's init reaps
// orphans slowly, and a zombie holds nothing but its PID.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may itself hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// stopPids sends SIGTERM to every live pid, waits up to grace for them to go, then kills
// what is left and waits briefly for that too.
func stopPids(pids []int, grace time.Duration) {
	var live []int
	for _, p := range pids {
		if alive(p) {
			_ = syscall.Kill(p, syscall.SIGTERM)
			live = append(live, p)
		}
	}
	if waitGone(live, grace) {
		return
	}
	for _, p := range live {
		if alive(p) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	waitGone(live, 5*time.Second)
}

func waitGone(pids []int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		gone := true
		for _, p := range pids {
			if alive(p) {
				gone = false
				break
			}
		}
		if gone {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pidsWhere lists the processes for which match returns true.
func pidsWhere(match func(pid int) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid == 1 {
			continue
		}
		if alive(pid) && match(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// nsInode returns the inode of a namespace link ("/proc/<pid>/ns/net"), or "" if unreadable.
func nsInode(path string) string {
	target, err := os.Readlink(path)
	if err != nil {
		return ""
	}
	return target
}

// pidsInNetns lists the processes whose network namespace is the named one.
func pidsInNetns(name string) []int {
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/run/netns", name), &st); err != nil {
		return nil
	}
	want := fmt.Sprintf("net:[%d]", st.Ino)
	return pidsWhere(func(pid int) bool { return nsInode(fmt.Sprintf("/proc/%d/ns/net", pid)) == want })
}

// exeOf returns the executable path of a process, or "".
func exeOf(pid int) string {
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return exe
}

// pidsWithArg lists processes with an argument (after argv[0], the program itself)
// containing s.
func pidsWithArg(s string) []int {
	return pidsWhere(func(pid int) bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			return false
		}
		_, args, _ := bytes.Cut(b, []byte{0})
		return bytes.Contains(args, []byte(s))
	})
}

// waitFor polls check until it returns true, an error that is not errRetry, or the timeout.
func waitFor(ctx context.Context, timeout, every time.Duration, what string, check func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := check()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%s: timed out after %s: %w", what, timeout, last)
			}
			return fmt.Errorf("%s: timed out after %s", what, timeout)
		case <-time.After(every):
		}
	}
}

var errNotRunning = errors.New("the local cluster is not running")
