// Package netns opens connections from another network namespace of this machine: a
// named one (/run/netns/<name>) or a process's (/proc/<pid>/ns/net), so that a test sees
// the network as a pod or an outside client does.
package netns

import (
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Dial runs dial on an OS thread moved into the network namespace at path: the socket it
// creates belongs to that namespace for its whole life, wherever it is used afterwards.
// The thread is never handed back to the Go scheduler (the goroutine ends locked, so the
// runtime ends the thread).
func Dial(path string, dial func() (net.Conn, error)) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(path)
		if err != nil {
			ch <- result{err: fmt.Errorf("network namespace %s: %w", path, err)}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("enter network namespace %s: %w", path, err)}
			return
		}
		c, err := dial()
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}
