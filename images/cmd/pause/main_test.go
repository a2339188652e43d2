package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestPauseExitsZeroOnSignal builds the program and checks that it keeps
// running until SIGTERM or SIGINT and then exits 0.
func TestPauseExitsZeroOnSignal(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pause")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build pause: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin)
			if err := cmd.Start(); err != nil {
				t.Fatalf("start pause: %v", err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				t.Fatalf("pause exited before a signal: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatalf("signal pause: %v", err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("pause exited with %v, want exit 0", err)
				}
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("pause did not exit after the signal")
			}
		})
	}
}
