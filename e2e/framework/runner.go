package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// Command is one program to run.
type Command struct {
	// Name is the program; Args its arguments.
	Name string
	Args []string
	// Env is added to the environment of the test process.
	Env []string
	// Dir is the working directory (default: the current one).
	Dir string
	// Stdin is given on standard input when not empty.
	Stdin string
	// Echo, when set, also receives the combined output as it comes (progress of long
	// commands such as `localkube up`).
	Echo io.Writer
}

// String is the command line, for logs and errors.
func (c Command) String() string {
	return strings.TrimSpace(c.Name + " " + strings.Join(c.Args, " "))
}

// Runner runs commands; tests of the framework give a fake one.
type Runner interface {
	// Run runs cmd and returns its standard output. A failure is a *CommandError.
	Run(ctx context.Context, cmd Command) (string, error)
}

// CommandError is a command that could not start or exited non-zero.
type CommandError struct {
	Cmd      string
	ExitCode int // -1 when the command did not run to an exit
	Stderr   string
	Err      error
}

func (e *CommandError) Error() string {
	msg := fmt.Sprintf("%s: %v", e.Cmd, e.Err)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

func (e *CommandError) Unwrap() error { return e.Err }

// ExitCode returns the exit code of a failed command, or -1 when err is not a
// CommandError with one.
func ExitCode(err error) int {
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce.ExitCode
	}
	return -1
}

// ExecRunner runs commands on this machine.
type ExecRunner struct{}

// Run implements Runner.
func (ExecRunner) Run(ctx context.Context, c Command) (string, error) {
	cmd := exec.CommandContext(ctx, c.Name, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	if c.Stdin != "" {
		cmd.Stdin = strings.NewReader(c.Stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if c.Echo != nil {
		// Both streams are copied by their own goroutine: serialize the shared writer.
		echo := &lockedWriter{w: c.Echo}
		cmd.Stdout = io.MultiWriter(&stdout, echo)
		cmd.Stderr = io.MultiWriter(&stderr, echo)
	}
	if err := cmd.Run(); err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		return stdout.String(), &CommandError{Cmd: c.String(), ExitCode: code, Stderr: stderr.String(), Err: err}
	}
	return stdout.String(), nil
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
