package framework

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/e2e/netns"
)

// SignalContainer sends sig to the main process of a container, from the host.
//
// Why from the host: a container's main process is PID 1 of the pod's PID namespace, and
// the kernel drops a signal sent to a namespace's init from inside that namespace unless
// the process installed a handler for it, so `kubectl exec ... -- kill -KILL 1` does
// nothing. The host is in an ancestor PID namespace, from which SIGKILL always reaches
// it. The process is found in /proc by the container ID in its cgroup path and by being
// PID 1 of its innermost namespace; this works when the test runs on the machine whose
// kernel runs the containers (the local provider, and kind on the local Docker daemon).
// It returns the host PID that was signalled.
func SignalContainer(pod *corev1.Pod, container string, sig syscall.Signal) (int, error) {
	pid, err := containerPID(pod, container)
	if err != nil {
		return 0, err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return 0, fmt.Errorf("signal %s to pid %d (container %s of %s): %w", sig, pid, container, pod.Name, err)
	}
	return pid, nil
}

// ContainerID returns the runtime's ID of a running container of the pod (without the
// "containerd://" prefix).
func ContainerID(pod *corev1.Pod, container string) (string, error) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != container {
			continue
		}
		if cs.State.Running == nil || cs.ContainerID == "" {
			return "", fmt.Errorf("container %s of pod %s is not running: %s", container, pod.Name, DescribePod(pod))
		}
		_, id, ok := strings.Cut(cs.ContainerID, "://")
		if !ok || id == "" {
			return "", fmt.Errorf("container %s of pod %s: unexpected ID %q", container, pod.Name, cs.ContainerID)
		}
		return id, nil
	}
	return "", fmt.Errorf("pod %s has no container %s", pod.Name, container)
}

// containerPID is the host PID of a running container's main process.
func containerPID(pod *corev1.Pod, container string) (int, error) {
	id, err := ContainerID(pod, container)
	if err != nil {
		return 0, err
	}
	return findContainerInit("/proc", id)
}

// findContainerInit finds under procRoot the process whose cgroup path names the
// container ID and which is PID 1 of its innermost PID namespace.
func findContainerInit(procRoot, id string) (int, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", procRoot, err)
	}
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join(procRoot, e.Name())
		cg, err := os.ReadFile(filepath.Join(dir, "cgroup"))
		if err != nil || !strings.Contains(string(cg), id) {
			continue
		}
		if innermostPID(filepath.Join(dir, "status")) == 1 {
			found = append(found, pid)
		}
	}
	switch len(found) {
	case 0:
		return 0, fmt.Errorf("no process of container %s in %s (does this machine run the container?)", id, procRoot)
	case 1:
		return found[0], nil
	}
	return 0, fmt.Errorf("container %s: several init processes %v", id, found)
}

// innermostPID returns the last PID of the NSpid line of a /proc/<pid>/status file: the
// process's PID in its own PID namespace (0 when unreadable).
func innermostPID(statusFile string) int {
	f, err := os.Open(statusFile)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "NSpid:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0
		}
		n, _ := strconv.Atoi(fields[len(fields)-1])
		return n
	}
	return 0
}

// KillPod takes a pod down without warning, as a node crash would: SIGKILL to its Valkey
// server from the host (so no preStop hook or SIGTERM handler can hand anything over),
// then the pod deleted with grace period 0. A pod deleted with grace 0 alone is not
// enough: the kubelet still gives the containers a short grace period and runs the
// preStop hook, which may complete a planned failover in time.
func KillPod(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	if _, err := SignalContainer(pod, "server", syscall.SIGKILL); err != nil {
		return err
	}
	return c.Delete(ctx, pod, client.GracePeriodSeconds(0))
}

// Partition makes the network namespace of a pod drop every packet to and from the given
// IPs, while the rest of the network still reaches the pod: an asymmetric partition. The
// rules are iptables rules of the pod's own namespace, entered from the host through the
// namespace of the container's main process (so, like SignalContainer, it needs the
// machine whose kernel runs the containers). The returned function lifts the partition;
// the pod's namespace lives as long as the pod, so it works after the container restarted
// too, as long as the process found here still runs or the namespace is held elsewhere.
func Partition(ctx context.Context, pod *corev1.Pod, container string, peers []string) (func(context.Context) error, error) {
	pid, err := containerPID(pod, container)
	if err != nil {
		return nil, err
	}
	// Hold the namespace open, so the rules can be removed whatever the process does.
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, fmt.Errorf("network namespace of %s: %w", pod.Name, err)
	}
	iptables := func(ctx context.Context, op string) error {
		var errs []error
		for _, ip := range peers {
			for _, rule := range [][]string{{"INPUT", "-s", ip}, {"OUTPUT", "-d", ip}} {
				args := append([]string{"--net=/proc/self/fd/3", "iptables", "-w", op}, append(rule, "-j", "DROP")...)
				cmd := exec.CommandContext(ctx, "nsenter", args...)
				cmd.ExtraFiles = []*os.File{ns}
				if out, err := cmd.CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("iptables %s %v in the namespace of %s: %w: %s", op, rule, pod.Name, err, out))
					if op == "-I" {
						return errors.Join(errs...)
					}
				}
			}
		}
		return errors.Join(errs...)
	}
	if err := iptables(ctx, "-I"); err != nil {
		_ = iptables(context.Background(), "-D")
		ns.Close()
		return nil, err
	}
	return func(ctx context.Context) error {
		defer ns.Close()
		return iptables(ctx, "-D")
	}, nil
}

// DialFrom opens a TCP connection to addr from the network namespace of a pod (entered
// from the host through the namespace of the container's main process, as Partition
// does): the connection is seen, by network policies and by the server, as one the pod
// opened. With cfg set it completes a TLS handshake; with TLS 1.3 a server that refuses
// the client's certificate says so on the first read, not in the handshake.
func DialFrom(ctx context.Context, pod *corev1.Pod, container, addr string, cfg *tls.Config) (net.Conn, error) {
	pid, err := containerPID(pod, container)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := netns.Dial(fmt.Sprintf("/proc/%d/ns/net", pid), func() (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) })
	if err != nil {
		return nil, fmt.Errorf("dial %s from pod %s: %w", addr, pod.Name, err)
	}
	if cfg == nil {
		return c, nil
	}
	tc := tls.Client(c, cfg)
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("TLS handshake with %s from pod %s: %w", addr, pod.Name, err)
	}
	return tc, nil
}
