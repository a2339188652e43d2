package node

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/status"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf/redact"
)

// ownedConditions are the condition types the node-controller writes, in the order
// they are sent.
var ownedConditions = []string{
	v1alpha1.ConditionPodReady, v1alpha1.ConditionStorageReady,
	v1alpha1.ConditionConfigApplied, v1alpha1.ConditionServerDown, v1alpha1.ConditionInvalidSpec,
}

// ownedStatus holds exactly the ValkeyNode status fields the node-controller owns.
type ownedStatus struct {
	PodName  string        `json:"podName,omitempty"`
	PodIP    string        `json:"podIP,omitempty"`
	NodeName string        `json:"nodeName,omitempty"`
	Role     v1alpha1.Role `json:"role,omitempty"`
	Version  string        `json:"version,omitempty"`
	Revision int64         `json:"revision,omitempty"`
	Replicas int32         `json:"replicas,omitempty"`
	// ServerRestarts: see v1alpha1.ValkeyNodeStatus.
	ServerRestarts int32              `json:"serverRestarts,omitempty"`
	Conditions     []metav1.Condition `json:"conditions,omitempty"`
}

// currentStatus is the owned part of a node's status as stored.
func currentStatus(vn *v1alpha1.ValkeyNode) ownedStatus {
	st := vn.Status
	return ownedStatus{
		PodName: st.PodName, PodIP: st.PodIP, NodeName: st.NodeName, Role: st.Role, Version: st.Version, Revision: st.Revision, Replicas: st.Replicas,
		ServerRestarts: st.ServerRestarts, Conditions: conditions.Owned(st.Conditions, ownedConditions...),
	}
}

// writeStatus applies the owned status when it differs from the stored one: a pass
// that changes nothing writes nothing.
func (r *Reconciler) writeStatus(ctx context.Context, vn *v1alpha1.ValkeyNode, want ownedStatus) error {
	if status.Equal(currentStatus(vn), want) {
		return nil
	}
	return status.Apply(ctx, r.Client, FieldManager, vn, v1alpha1.GroupVersion.WithKind("ValkeyNode"), want)
}

// desiredStatus computes the owned status from what the pass observed and did.
func desiredStatus(s *scope, now time.Time) ownedStatus {
	vn := s.node
	out := ownedStatus{
		PodName:  vn.Status.PodName,
		Version:  vn.Status.Version,
		Revision: runningRevision(s),
	}
	if s.pod != nil {
		out.PodName, out.PodIP, out.NodeName, out.Replicas = s.pod.Name, s.pod.Status.PodIP, s.pod.Spec.NodeName, 1
	}
	switch {
	case s.server != nil:
		out.Role, out.Version = s.role, s.serverVersion.String()
	case serverRunning(s.pod):
		out.Role = vn.Status.Role // transiently unreachable: keep the last known role
	}
	answered := s.server != nil
	out.ServerRestarts = serverRestarts(vn, s.pod, answered)
	out.Conditions = conditions.Resolve(vn.Status.Conditions, now,
		podReadyCondition(s.podObservation()),
		storageCondition(s.storage, vn.Generation),
		s.configCond,
		serverDownCondition(vn, s.pod, answered, vn.Status.ServerRestarts, s.vacated, vn.Generation),
		s.validity,
	)
	return out
}

// runningRevision is the spec revision the running pod was built for: the workload's
// revision when the pod carries the workload's template hash, otherwise (no pod yet,
// or the old pod of a roll) the revision recorded before.
func runningRevision(s *scope) int64 {
	if s.pod == nil || s.workloadAnn == nil {
		return s.node.Status.Revision
	}
	if s.pod.Annotations[AnnotationTemplateHash] != s.workloadAnn[AnnotationTemplateHash] {
		return s.node.Status.Revision
	}
	rev, err := strconv.ParseInt(s.workloadAnn[AnnotationRevision], 10, 64)
	if err != nil {
		return s.node.Status.Revision
	}
	return rev
}

// podObservation is what PodReady is computed from.
type podObservation struct {
	pod *corev1.Pod
	// missing: a bare pod that existed is gone and will not be recreated.
	missing     bool
	missingName string
	// answered: the server answered INFO this pass; serverErr says why not.
	answered  bool
	serverErr error
	role      v1alpha1.Role
	// pending explains an update held back by the revision gate ("" when none).
	pending string
	// blocker names why the pod is not created, when it is not.
	blocker *blocker
	gen     int64
}

// podReadyCondition computes PodReady. It is True only when the server container runs
// and the server answered; an update held back by the gate keeps it True with reason
// UpdatePending.
func podReadyCondition(o podObservation) metav1.Condition {
	ok, reason, msg := podReadiness(o)
	if ok && o.pending != "" {
		reason, msg = v1alpha1.ReasonUpdatePending, o.pending
	} else if o.pending != "" {
		msg += "; " + o.pending
	}
	return conditions.New(v1alpha1.ConditionPodReady, ok, reason, msg, o.gen)
}

// podReadiness is PodReady without the pending update.
func podReadiness(o podObservation) (bool, string, string) {
	p := o.pod
	switch {
	case o.missing:
		return false, v1alpha1.ReasonPodMissing, fmt.Sprintf(
			"pod %s is gone; a bare pod is not recreated: the cluster-controller replaces the member", o.missingName)
	case p == nil && o.blocker != nil:
		return false, o.blocker.reason, o.blocker.message
	case p == nil:
		return false, v1alpha1.ReasonPodPending, "waiting for the pod to be created"
	case p.DeletionTimestamp != nil:
		return false, v1alpha1.ReasonPodPending, fmt.Sprintf("pod %s is being deleted", p.Name)
	}
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		if msg, ok := unsupportedServer(p, serverStatus(p)); ok {
			return false, v1alpha1.ReasonUnsupportedServer, msg
		}
		return false, v1alpha1.ReasonPodTerminated, terminatedMessage(p, serverStatus(p))
	case corev1.PodRunning:
		return runningReadiness(o)
	case corev1.PodPending, "":
		reason, msg := pendingReadiness(p)
		return false, reason, msg
	}
	return false, v1alpha1.ReasonPodPending, fmt.Sprintf("pod %s is in phase %s (its Kubernetes node may be unreachable)", p.Name, p.Status.Phase)
}

// runningReadiness judges a pod in phase Running by its server container and server.
func runningReadiness(o podObservation) (bool, string, string) {
	p := o.pod
	st := serverStatus(p)
	switch {
	case st == nil:
		return false, v1alpha1.ReasonPodPending, fmt.Sprintf("pod %s reports no status of container %s yet", p.Name, ServerContainer)
	case !o.answered && refusedServer(st) != nil:
		msg, _ := unsupportedServer(p, st)
		return false, v1alpha1.ReasonUnsupportedServer, msg
	case st.State.Terminated != nil && p.Spec.RestartPolicy == corev1.RestartPolicyNever:
		return false, v1alpha1.ReasonPodTerminated, terminatedMessage(p, st)
	case st.State.Waiting != nil && st.State.Waiting.Reason == "CrashLoopBackOff", st.State.Terminated != nil:
		return false, v1alpha1.ReasonCrashLoop, crashMessage(p, st)
	case st.State.Waiting != nil:
		return false, v1alpha1.ReasonPodPending, waitingMessage(p, st)
	case !o.answered && crashedAtStart(st):
		// Between two crashes the container runs for a moment: still the same crash loop.
		return false, v1alpha1.ReasonCrashLoop, crashMessage(p, st)
	case !o.answered && valkey.AsReplyTooLarge(o.serverErr) != nil:
		e := valkey.AsReplyTooLarge(o.serverErr)
		return false, v1alpha1.ReasonReplyTooLarge, fmt.Sprintf("pod %s runs but its server answered %s with more than %s: the controller does not read it",
			p.Name, e.Command, valkey.FormatBytes(e.Limit))
	case !o.answered:
		return false, v1alpha1.ReasonServerUnreachable, fmt.Sprintf("pod %s runs but its server does not answer: %s", p.Name, redact.Text(fmt.Sprint(o.serverErr)))
	}
	return true, v1alpha1.ReasonPodRunning, fmt.Sprintf("the server of pod %s answers at %s as %s", p.Name, p.Status.PodIP, roleOr(o.role))
}

// pendingReadiness explains a pod in phase Pending.
func pendingReadiness(p *corev1.Pod) (string, string) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return v1alpha1.ReasonPodUnschedulable, fmt.Sprintf("pod %s cannot be scheduled: %s", p.Name, c.Message)
		}
	}
	all := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for i := range all {
		if w := all[i].State.Waiting; w != nil && isImagePullFailure(w.Reason) {
			return v1alpha1.ReasonImagePullBackOff, fmt.Sprintf("pod %s cannot pull image %s of container %s: %s",
				p.Name, all[i].Image, all[i].Name, firstNonEmpty(w.Message, w.Reason))
		}
	}
	for i := range all {
		if w := all[i].State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			return v1alpha1.ReasonPodPending, waitingMessage(p, &all[i])
		}
	}
	return v1alpha1.ReasonPodPending, fmt.Sprintf("pod %s is starting", p.Name)
}

// isImagePullFailure reports whether a waiting reason means the image cannot be pulled.
func isImagePullFailure(reason string) bool {
	switch reason {
	case "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable":
		return true
	}
	return false
}

// serverStatus returns the status of the server container, or nil.
func serverStatus(p *corev1.Pod) *corev1.ContainerStatus {
	return containerStatus(p.Status.ContainerStatuses, ServerContainer)
}

// containerStatus finds a container's status by name.
func containerStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// terminatedMessage names the exit of the server of a pod that will not restart.
func terminatedMessage(p *corev1.Pod, st *corev1.ContainerStatus) string {
	if st == nil || st.State.Terminated == nil {
		return fmt.Sprintf("pod %s ended in phase %s", p.Name, p.Status.Phase)
	}
	return fmt.Sprintf("pod %s ended: container %s %s; nothing restarts it", p.Name, ServerContainer, exitText(st.State.Terminated))
}

// crashMessage describes a server container that keeps failing: its last log line first
// (the container's termination message: its logs, FallbackToLogsOnError), which is
// usually the cause ("FATAL CONFIG FILE ERROR ...", "config key ... needs Valkey 8.1").
func crashMessage(p *corev1.Pod, st *corev1.ContainerStatus) string {
	last := st.State.Terminated
	if last == nil {
		last = st.LastTerminationState.Terminated
	}
	msg := fmt.Sprintf("container %s of pod %s restarted %d times", ServerContainer, p.Name, st.RestartCount)
	if last == nil {
		return msg
	}
	if line := lastLine(redact.Text(last.Message)); line != "" {
		return fmt.Sprintf("%s (%s; exited with code %d)", truncate(line, 300), msg, last.ExitCode)
	}
	return msg + "; last " + exitText(last)
}

// unsupportedServerExit is the exit code of the server command when the image's
// valkey-server is not Valkey 8.0 or later (prepare_start in scripts/start.sh): it stops
// before the server reads valkey.conf, and its last log line says what the server is.
const unsupportedServerExit = 78

// refusedServer returns the server container's termination, current or last, when the
// start command refused the image's server, or nil.
func refusedServer(st *corev1.ContainerStatus) *corev1.ContainerStateTerminated {
	if st == nil {
		return nil
	}
	for _, t := range []*corev1.ContainerStateTerminated{st.State.Terminated, st.LastTerminationState.Terminated} {
		if t != nil {
			if t.ExitCode == unsupportedServerExit {
				return t
			}
			return nil // the latest run decides
		}
	}
	return nil
}

// unsupportedServer is the UnsupportedServer message of a pod whose start command
// refused its image's server: that command's line ("this image's valkey-server is Redis
// 7.0.15; ..."), the image, and how often the container restarted.
func unsupportedServer(p *corev1.Pod, st *corev1.ContainerStatus) (string, bool) {
	t := refusedServer(st)
	if t == nil {
		return "", false
	}
	line := lastLine(redact.Text(t.Message))
	if line == "" {
		line = "this image's valkey-server is not Valkey 8.0 or later"
	}
	return fmt.Sprintf("%s (image %s, container %s of pod %s, restarted %d times)", truncate(line, 300), st.Image, ServerContainer, p.Name, st.RestartCount), true
}

// crashStartWindow is how short a run counts as a crash at start.
const crashStartWindow = 10 * time.Second

// crashedAtStart reports whether the server container's last run failed within
// crashStartWindow of its start: a config error, a missing file. A server killed after
// serving for a while (a crash the cluster heals from) ran longer.
func crashedAtStart(st *corev1.ContainerStatus) bool {
	last := st.LastTerminationState.Terminated
	return st.State.Running != nil && last != nil && last.ExitCode != 0 &&
		!last.StartedAt.IsZero() && last.FinishedAt.Sub(last.StartedAt.Time) < crashStartWindow
}

// lastLine is the line of a log excerpt that says why the server stopped: the line Valkey
// quotes from its config file (">>> 'key value'") with the error after it, wherever it
// is in the excerpt (another warning may be logged after it), else the last non-empty
// line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 2; i >= 0; i-- {
		if quoted, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), ">>> "); ok {
			return quoted + ": " + strings.TrimSpace(lines[i+1])
		}
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

// waitingMessage describes a waiting container.
func waitingMessage(p *corev1.Pod, st *corev1.ContainerStatus) string {
	w := st.State.Waiting
	msg := fmt.Sprintf("container %s of pod %s is waiting: %s", st.Name, p.Name, w.Reason)
	if w.Message != "" {
		msg += ": " + redact.Text(w.Message)
	}
	return msg
}

// exitCause is "exited with code N after signal S (Reason)".
func exitCause(t *corev1.ContainerStateTerminated) string {
	s := fmt.Sprintf("exited with code %d", t.ExitCode)
	if t.Signal != 0 {
		s += fmt.Sprintf(" after signal %d", t.Signal)
	}
	if t.Reason != "" {
		s += " (" + t.Reason + ")"
	}
	return s
}

// exitText is "exited with code N (Reason)" plus the container's own message.
func exitText(t *corev1.ContainerStateTerminated) string {
	s := exitCause(t)
	if m := strings.TrimSpace(redact.Text(t.Message)); m != "" {
		s += ": " + truncate(m, 200)
	}
	return s
}

// roleOr names a role for a message.
func roleOr(r v1alpha1.Role) string {
	if r == "" {
		return "an unknown role"
	}
	return string(r)
}

// firstNonEmpty returns the first non-empty string.
func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// truncate shortens s to n bytes for a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// invalidStatus is the owned status of a node whose spec breaks a rule: the stored
// fields and conditions stay, InvalidSpec is set, and conditions never set before are
// Unknown (their input is not trusted).
func invalidStatus(vn *v1alpha1.ValkeyNode, invalid metav1.Condition, now time.Time) ownedStatus {
	out := currentStatus(vn)
	desired := make([]metav1.Condition, 0, len(ownedConditions))
	for _, t := range ownedConditions {
		switch c := conditions.Get(vn.Status.Conditions, t); {
		case t == v1alpha1.ConditionInvalidSpec:
			desired = append(desired, invalid)
		case c != nil:
			desired = append(desired, *c)
		default:
			desired = append(desired, conditions.Unknown(t, v1alpha1.ReasonInvalid, "the spec is invalid (see InvalidSpec)", vn.Generation))
		}
	}
	out.Conditions = conditions.Resolve(vn.Status.Conditions, now, desired...)
	return out
}
