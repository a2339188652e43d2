package framework

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Kubectl runs kubectl against the cluster and returns its standard output; a failure
// is a *CommandError holding the exit code and standard error.
func (k *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	return k.Runner.Run(ctx, Command{Name: k.Paths.Kubectl, Args: append([]string{"--kubeconfig", k.Kubeconfig}, args...)})
}

// Exec runs a command in a container of a pod (kubectl exec) and returns its standard
// output. An empty container means the pod's first one.
func (k *Cluster) Exec(ctx context.Context, ns, pod, container string, command ...string) (string, error) {
	args := []string{"exec", "-n", ns, pod}
	if container != "" {
		args = append(args, "-c", container)
	}
	args = append(append(args, "--"), command...)
	out, err := k.Kubectl(ctx, args...)
	if err != nil {
		return out, fmt.Errorf("exec in %s/%s: %w", ns, pod, err)
	}
	return out, nil
}

// Logs returns the logs of a container (the pod's first when container is empty).
func (k *Cluster) Logs(ctx context.Context, ns, pod, container string) (string, error) {
	b, err := k.Clientset.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("logs of %s/%s: %w", ns, pod, err)
	}
	return string(b), nil
}

// LogFollower collects the log of a container as it is written, until the container
// ends or Stop is called.
type LogFollower struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	done   chan struct{}
	cancel context.CancelFunc
	err    error
}

// FollowLogs starts following a container's log (kubectl logs -f).
func (k *Cluster) FollowLogs(ctx context.Context, ns, pod, container string) (*LogFollower, error) {
	ctx, cancel := context.WithCancel(ctx)
	stream, err := k.Clientset.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("follow logs of %s/%s: %w", ns, pod, err)
	}
	f := &LogFollower{done: make(chan struct{}), cancel: cancel}
	go f.read(stream)
	return f, nil
}

func (f *LogFollower) read(stream io.ReadCloser) {
	defer close(f.done)
	defer stream.Close()
	sc := bufio.NewScanner(stream)
	for sc.Scan() {
		f.mu.Lock()
		f.buf.Write(sc.Bytes())
		f.buf.WriteByte('\n')
		f.mu.Unlock()
	}
	f.mu.Lock()
	f.err = sc.Err()
	f.mu.Unlock()
}

// String returns what was read so far.
func (f *LogFollower) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.String()
}

// Wait waits up to timeout for the log to end (the container stopped) and returns it.
func (f *LogFollower) Wait(timeout time.Duration) (string, error) {
	select {
	case <-f.done:
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.buf.String(), f.err
	case <-time.After(timeout):
		return f.String(), fmt.Errorf("the log did not end within %s", timeout)
	}
}

// Stop ends the following.
func (f *LogFollower) Stop() { f.cancel() }
