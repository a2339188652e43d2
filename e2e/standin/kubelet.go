package standin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// Kubelet stands in for the scheduler and the kubelets of the members' pods (those
// labelled app.kubernetes.io/name=valkey). It binds each pod to NodeName, gives it a
// loopback address of its own (the pod IP), writes its volumes into a directory, runs
// its server container's own command there as a host process (paths under the mounts
// pointing at the volumes' directories, the config's bind lines turned to the pod IP),
// and reports the pod Running and Ready with the statuses of its containers once the
// server listens. A server that exits is restarted after a back-off (restartPolicy
// Always) or ends the pod (Never). A pod being deleted has its server stopped with
// SIGTERM (SIGKILL after the grace period) and is then removed, as the kubelet removes
// it.
//
// What it does not do: it runs only the server container (the exporter sidecar and
// other containers are reported running without running), runs no probes nor preStop
// hooks, does not follow later changes of the projected files, and enforces no
// resources, security context or network policy.
type Kubelet struct {
	c        client.Client
	dir      string
	ips      *ipPool
	nodeName string
	// Run decides which containers of a pod run; the others are reported running.
	run func(*corev1.Container) bool

	mu      sync.Mutex
	running map[types.UID]*container
	exited  chan event.GenericEvent
}

// container is the process of a pod's server container.
type container struct {
	pod      types.NamespacedName
	name     string
	ip       string
	dir      string
	cmd      *exec.Cmd
	started  time.Time
	done     chan struct{}
	restarts int32
	// last is the end of the previous run (after a restart), or of this one.
	last *corev1.ContainerStateTerminated
	// restartAt is when an exited container starts again (zero: it does not).
	restartAt time.Time
	// stopping: the stand-in stops it (the pod goes); its exit is no news.
	stopping atomic.Bool
}

func (p *container) exitedNow() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// NodeName is the node the stand-in binds every pod to (a Node object of that name is
// created with the stand-in's API server).
const NodeName = "standin"

// NewKubelet returns a stand-in that keeps its pods' files under dir and gives them
// addresses 127.<octet>.x.y.
func NewKubelet(c client.Client, dir string, octet int) *Kubelet {
	return &Kubelet{c: c, dir: dir, ips: &ipPool{octet: octet}, nodeName: NodeName,
		run:     func(c *corev1.Container) bool { return c.Name == v1alpha1.ServerContainerName },
		running: map[types.UID]*container{}, exited: make(chan event.GenericEvent, 1024)}
}

// SetupWithManager registers the stand-in on mgr; workers pods are handled at once.
func (k *Kubelet) SetupWithManager(mgr manager.Manager, workers int) error {
	members := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[v1alpha1.LabelName] == v1alpha1.AppName
	})
	return builder.ControllerManagedBy(mgr).Named("standin-kubelet").
		For(&corev1.Pod{}, builder.WithPredicates(members)).
		WatchesRawSource(source.Channel(k.exited, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(k)
}

// Reconcile moves one pod along: bind, start, report, restart, stop and remove.
func (k *Kubelet) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pod corev1.Pod
	if err := k.c.Get(ctx, req.NamespacedName, &pod); err != nil {
		if apierrors.IsNotFound(err) {
			k.forget(req.NamespacedName, "")
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	k.forget(req.NamespacedName, pod.UID) // an earlier pod of that name
	switch {
	case pod.DeletionTimestamp != nil:
		return reconcile.Result{}, k.remove(ctx, &pod)
	case pod.Spec.NodeName == "":
		return reconcile.Result{}, k.bind(ctx, &pod)
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
		return reconcile.Result{}, nil
	}
	p, err := k.ensure(ctx, &pod)
	if err != nil {
		log.FromContext(ctx).Error(err, "start the pod's server")
		return reconcile.Result{RequeueAfter: 5 * time.Second}, k.report(ctx, &pod, nil, err)
	}
	wait := k.restartIfDue(&pod, p)
	if err := k.report(ctx, &pod, p, nil); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}

// bind assigns the pod to the stand-in's node, as the scheduler would.
func (k *Kubelet) bind(ctx context.Context, pod *corev1.Pod) error {
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target: corev1.ObjectReference{Kind: "Node", Name: k.nodeName}}
	if err := k.c.SubResource("binding").Create(ctx, pod, b); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("bind pod %s: %w", pod.Name, err)
	}
	return nil
}

// ensure returns the pod's running container, starting it the first time.
func (k *Kubelet) ensure(ctx context.Context, pod *corev1.Pod) (*container, error) {
	k.mu.Lock()
	p := k.running[pod.UID]
	k.mu.Unlock()
	if p != nil {
		return p, nil
	}
	spec := k.serverSpec(pod)
	if spec == nil {
		return nil, errors.New("the pod has no container the stand-in runs")
	}
	ip, err := k.ips.next()
	if err != nil {
		return nil, err
	}
	p = &container{pod: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, name: spec.Name, ip: ip, dir: filepath.Join(k.dir, "pods", string(pod.UID))}
	if err := k.start(ctx, pod, spec, p); err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.running[pod.UID] = p
	k.mu.Unlock()
	return p, nil
}

func (k *Kubelet) serverSpec(pod *corev1.Pod) *corev1.Container {
	for i := range pod.Spec.Containers {
		if k.run(&pod.Spec.Containers[i]) {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// start writes the pod's volumes (on the first start) and runs the container's command,
// then waits until it listens on its first declared port.
func (k *Kubelet) start(ctx context.Context, pod *corev1.Pod, spec *corev1.Container, p *container) error {
	dirs := volumeDirs(pod, filepath.Join(p.dir, "volumes"), filepath.Join(k.dir, "claims"))
	ms, err := mounts(spec, dirs)
	if err != nil {
		return err
	}
	if p.cmd == nil {
		rewrite := func(s string) string { return ownAddress(remapText(s, ms), p.ip) }
		if err := writeVolumes(ctx, k.c, pod, dirs, rewrite); err != nil {
			return err
		}
	}
	argv := make([]string, 0, len(spec.Command)+len(spec.Args))
	for _, a := range append(append([]string(nil), spec.Command...), spec.Args...) {
		argv = append(argv, remapText(a, ms))
	}
	if len(argv) == 0 {
		return fmt.Errorf("container %s has no command (the stand-in does not read images)", spec.Name)
	}
	logf, err := os.OpenFile(filepath.Join(p.dir, spec.Name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = containerEnv(pod, spec, p.ip)
	cmd.Dir = remapPath(spec.WorkingDir, ms)
	if spec.WorkingDir == "" {
		cmd.Dir = p.dir
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("run container %s: %w", spec.Name, err)
	}
	p.cmd, p.started, p.done, p.restartAt = cmd, time.Now(), make(chan struct{}), time.Time{}
	done := p.done
	go func() {
		err := cmd.Wait()
		logf.Close()
		p.last = terminated(cmd, err)
		close(done)
		if !p.stopping.Load() {
			k.exited <- event.GenericEvent{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}}
		}
	}()
	return waitListening(done, p.ip, firstPort(spec), 30*time.Second)
}

// terminated describes how a process ended.
func terminated(cmd *exec.Cmd, err error) *corev1.ContainerStateTerminated {
	t := &corev1.ContainerStateTerminated{FinishedAt: metav1.Now(), Reason: "Completed"}
	if st := cmd.ProcessState; st != nil {
		t.ExitCode = int32(st.ExitCode())
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.ExitCode, t.Signal = 128+int32(ws.Signal()), int32(ws.Signal())
		}
	}
	if err != nil || t.ExitCode != 0 {
		t.Reason = "Error"
	}
	return t
}

func firstPort(c *corev1.Container) int32 {
	for _, p := range c.Ports {
		if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
			return p.ContainerPort
		}
	}
	return 0
}

// waitListening waits until ip:port accepts a connection, the process exits or timeout
// passes (no port: it returns at once).
func waitListening(done <-chan struct{}, ip string, port int32, timeout time.Duration) error {
	if port == 0 {
		return nil
	}
	addr := net.JoinHostPort(ip, strconv.Itoa(int(port)))
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-done:
			return nil // reported as terminated
		default:
		}
		if conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens at %s after %s", addr, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// containerEnv is the environment of the container's process: PATH and HOSTNAME as a
// container has them, and the container's variables (values, the pod's IP, name and
// namespace from the downward API; other sources are left out).
func containerEnv(pod *corev1.Pod, c *corev1.Container, ip string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOSTNAME=" + pod.Name}
	for _, e := range c.Env {
		v := e.Value
		if f := e.ValueFrom; f != nil {
			if f.FieldRef == nil {
				continue
			}
			switch f.FieldRef.FieldPath {
			case "status.podIP":
				v = ip
			case "metadata.name":
				v = pod.Name
			case "metadata.namespace":
				v = pod.Namespace
			default:
				continue
			}
		}
		env = append(env, e.Name+"="+v)
	}
	return env
}

// restartIfDue starts an exited container again when its back-off has passed (10 s,
// doubled each restart up to 5 min, as the kubelet's), for a pod that restarts it. It
// returns how long until the next check, or 0.
func (k *Kubelet) restartIfDue(pod *corev1.Pod, p *container) time.Duration {
	if !p.exitedNow() || pod.Spec.RestartPolicy == corev1.RestartPolicyNever ||
		(pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && p.last != nil && p.last.ExitCode == 0) {
		return 0
	}
	if p.restartAt.IsZero() {
		p.restartAt = time.Now().Add(min(10*time.Second<<min(p.restarts, 5), 5*time.Minute))
	}
	if wait := time.Until(p.restartAt); wait > 0 {
		return wait
	}
	p.restarts++
	if err := k.start(context.Background(), pod, k.serverSpec(pod), p); err != nil {
		return time.Second
	}
	return 0
}

// report writes the pod's status as the kubelet would, when it changed.
func (k *Kubelet) report(ctx context.Context, pod *corev1.Pod, p *container, startErr error) error {
	want := k.status(pod, p, startErr)
	if statusEqual(pod.Status, want) {
		return nil
	}
	pod.Status = want
	if err := k.c.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("report pod %s: %w", pod.Name, err)
	}
	return nil
}

// status is the pod's status with its container p (nil: not started, startErr says why).
func (k *Kubelet) status(pod *corev1.Pod, p *container, startErr error) corev1.PodStatus {
	st := corev1.PodStatus{Phase: corev1.PodPending, HostIP: "127.0.0.1", HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}},
		StartTime: pod.Status.StartTime, QOSClass: pod.Status.QOSClass}
	if st.StartTime == nil {
		st.StartTime = ptr.To(metav1.Now())
	}
	ready := false
	for _, c := range pod.Spec.InitContainers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "standin://" + c.Image, ContainerID: "standin://not-run"}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			cs.State.Running, cs.Ready, cs.Started = &corev1.ContainerStateRunning{StartedAt: *st.StartTime}, true, ptr.To(true)
		} else {
			cs.State.Terminated = &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: *st.StartTime, FinishedAt: *st.StartTime}
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	for _, c := range pod.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "standin://" + c.Image}
		switch {
		case !k.run(&c):
			cs.ContainerID = "standin://not-run"
			cs.State.Running, cs.Ready, cs.Started = &corev1.ContainerStateRunning{StartedAt: *st.StartTime}, true, ptr.To(true)
		case p == nil:
			msg := "starting"
			if startErr != nil {
				msg = startErr.Error()
			}
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating", Message: msg}
		default:
			cs.RestartCount, cs.ContainerID = p.restarts, "standin://"+strconv.Itoa(p.cmd.Process.Pid)
			if p.restarts > 0 || p.exitedNow() {
				if last := p.last; last != nil {
					cs.LastTerminationState.Terminated = last
				}
			}
			switch {
			case !p.exitedNow():
				cs.State.Running, cs.Ready, cs.Started = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(p.started)}, true, ptr.To(true)
				cs.LastTerminationState = corev1.ContainerState{}
				if p.restarts > 0 && p.last != nil {
					cs.LastTerminationState.Terminated = p.last
				}
				ready = true
			case pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
				cs.State.Terminated, cs.LastTerminationState = p.last, corev1.ContainerState{}
				st.Phase = corev1.PodFailed
				if p.last.ExitCode == 0 {
					st.Phase = corev1.PodSucceeded
				}
			default:
				cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
					Message: fmt.Sprintf("back-off restarting failed container %s", c.Name)}
			}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	if p != nil {
		st.PodIP, st.PodIPs = p.ip, []corev1.PodIP{{IP: p.ip}}
		if st.Phase == corev1.PodPending {
			st.Phase = corev1.PodRunning
		}
	}
	cond := func(t corev1.PodConditionType, ok bool) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		c := corev1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.Now()}
		for _, old := range pod.Status.Conditions {
			if old.Type == t && old.Status == s {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		return c
	}
	st.Conditions = []corev1.PodCondition{
		cond(corev1.PodReadyToStartContainers, true), cond(corev1.PodInitialized, true),
		cond(corev1.ContainersReady, ready), cond(corev1.PodReady, ready), cond(corev1.PodScheduled, true),
	}
	return st
}

// statusEqual compares what the stand-in writes of a status.
func statusEqual(a, b corev1.PodStatus) bool {
	if a.Phase != b.Phase || a.PodIP != b.PodIP || len(a.ContainerStatuses) != len(b.ContainerStatuses) || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		if a.Conditions[i].Type != b.Conditions[i].Type || a.Conditions[i].Status != b.Conditions[i].Status {
			return false
		}
	}
	for i := range a.ContainerStatuses {
		x, y := a.ContainerStatuses[i], b.ContainerStatuses[i]
		if x.Ready != y.Ready || x.RestartCount != y.RestartCount || x.ContainerID != y.ContainerID ||
			(x.State.Running == nil) != (y.State.Running == nil) || (x.State.Waiting == nil) != (y.State.Waiting == nil) ||
			(x.State.Terminated == nil) != (y.State.Terminated == nil) {
			return false
		}
	}
	return true
}

// remove stops the pod's server (SIGTERM, then SIGKILL after the grace period) and
// deletes the pod for good, as the kubelet does once its containers stopped.
func (k *Kubelet) remove(ctx context.Context, pod *corev1.Pod) error {
	grace := time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 30)) * time.Second
	k.stop(pod.UID, grace)
	err := k.c.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("remove pod %s: %w", pod.Name, err)
	}
	return nil
}

// forget stops the servers of the pods of that name other than keep (a pod gone, or
// replaced by one of the same name).
func (k *Kubelet) forget(name types.NamespacedName, keep types.UID) {
	k.mu.Lock()
	var gone []types.UID
	for uid, p := range k.running {
		if uid != keep && p.pod == name {
			gone = append(gone, uid)
		}
	}
	k.mu.Unlock()
	for _, uid := range gone {
		k.stop(uid, 0)
	}
}

// stop ends a pod's server: SIGTERM, and SIGKILL once grace passed.
func (k *Kubelet) stop(uid types.UID, grace time.Duration) {
	k.mu.Lock()
	p := k.running[uid]
	delete(k.running, uid)
	k.mu.Unlock()
	if p == nil || p.cmd == nil {
		return
	}
	p.stopping.Store(true)
	if !p.exitedNow() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	_ = os.RemoveAll(p.dir)
}

// StopAll kills every server (the run ends).
func (k *Kubelet) StopAll() {
	k.mu.Lock()
	uids := make([]types.UID, 0, len(k.running))
	for uid := range k.running {
		uids = append(uids, uid)
	}
	k.mu.Unlock()
	for _, uid := range uids {
		k.stop(uid, 0)
	}
}

// Servers counts the servers running.
func (k *Kubelet) Servers() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, p := range k.running {
		if p.cmd != nil && !p.exitedNow() {
			n++
		}
	}
	return n
}

// ipPool hands out 127.<octet>.x.y addresses (y from 1 to 254) whose client and bus
// ports nothing else on the host holds.
type ipPool struct {
	octet int
	mu    sync.Mutex
	n     int
}

func (p *ipPool) next() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.n < 256*254 {
		ip := fmt.Sprintf("127.%d.%d.%d", p.octet, p.n/254, 1+p.n%254)
		p.n++
		if portsFree(ip, 6379, 16379) {
			return ip, nil
		}
	}
	return "", fmt.Errorf("no free address left in 127.%d.0.0/16", p.octet)
}

func portsFree(ip string, ports ...int) bool {
	for _, port := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}
