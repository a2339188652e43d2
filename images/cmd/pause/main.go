// Command pause is the sandbox ("pause") container of the local Kubernetes:
// it sleeps until it receives SIGTERM or SIGINT and then exits 0. As PID 1 of a
// pod that shares its process namespace it also reaps orphaned children.
//
// It is built statically (CGO_ENABLED=0) into the image registry.k8s.io/pause:3.10
// by the images package (the images module).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is reported by -v, like the upstream pause binary.
const version = "3.10-valkey-operator"

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-v" || os.Args[1] == "--version") {
		fmt.Println("pause", version)
		return
	}
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: pause [-v]")
		os.Exit(1)
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}
	os.Exit(run())
}

// run waits for a terminating signal, reaping children on every SIGCHLD.
func run() int {
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	reap()
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "Shutting down, got signal: %v\n", sig)
		return 0
	}
	return 0
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
