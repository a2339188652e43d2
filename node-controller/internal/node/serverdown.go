package node

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// serverRestarts is the restart count to record: the server container's when its server
// answered this pass, else the one recorded for the same pod (zero for a new pod).
func serverRestarts(vn *v1alpha1.ValkeyNode, pod *corev1.Pod, answered bool) int32 {
	if pod == nil {
		return vn.Status.ServerRestarts
	}
	st := serverStatus(pod)
	if answered && st != nil {
		return st.RestartCount
	}
	if vn.Status.PodName != pod.Name {
		return 0
	}
	return vn.Status.ServerRestarts
}

// serverDownCondition computes ServerDown from what the kubelet reports of the server
// container, against the restart count recorded when the server last answered.
//
// True needs the kubelet's word that the process exited: the container is terminated,
// waits to restart after a termination, or runs again with a higher restart count than
// when its server last answered (and does not answer yet); or the proof of the node's
// watch (vacated, see watchServer): the server's address now refuses connections; the
// kubelet's report, once there is one, gives the message (exit code, signal, time). A
// pod being deleted is never down (it may be running its hand-over); a pod that is
// gone, or whose node stopped reporting, tells nothing of its process otherwise. A
// server proven down stays down until the member's server answers again, through the
// passes that find no pod or a new one that has not started it yet. Unknown without a
// pod and without such a proof.
func serverDownCondition(vn *v1alpha1.ValkeyNode, pod *corev1.Pod, answered bool, recorded int32, vacated string, gen int64) metav1.Condition {
	if !answered {
		if exit, ok := reportedExit(vn, pod, recorded, gen); ok {
			return exit // the kubelet's word says most: the exit code, the signal, when
		}
		if vacated != "" {
			return conditions.New(v1alpha1.ConditionServerDown, true, v1alpha1.ReasonContainerExited, vacated, gen)
		}
		if prev := conditions.Get(vn.Status.Conditions, v1alpha1.ConditionServerDown); prev != nil && prev.Status == metav1.ConditionTrue &&
			(pod == nil || vn.Status.PodName != pod.Name || !serverRunning(pod)) {
			return conditions.New(v1alpha1.ConditionServerDown, true, prev.Reason, prev.Message, gen)
		}
	}
	if pod == nil {
		return conditions.Unknown(v1alpha1.ConditionServerDown, v1alpha1.ReasonWaiting, "the member has no pod", gen)
	}
	st := serverStatus(pod)
	if !answered && pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodFailed && (st == nil || st.State.Terminated == nil) {
		return conditions.New(v1alpha1.ConditionServerDown, true, v1alpha1.ReasonContainerExited,
			fmt.Sprintf("pod %s failed: its server does not run", pod.Name), gen)
	}
	return conditions.New(v1alpha1.ConditionServerDown, false, v1alpha1.ReasonServing,
		fmt.Sprintf("no exit of the server of pod %s reported since it last answered", pod.Name), gen)
}

// reportedExit is ServerDown=True from the kubelet's report of the server container's
// exit since the server last answered (recorded restarts), when there is one: the
// container is terminated, waits to restart after a termination, or runs again with a
// higher restart count. A pod being deleted reports none.
func reportedExit(vn *v1alpha1.ValkeyNode, pod *corev1.Pod, recorded int32, gen int64) (metav1.Condition, bool) {
	if pod == nil || pod.DeletionTimestamp != nil {
		return metav1.Condition{}, false
	}
	st := serverStatus(pod)
	if st == nil {
		return metav1.Condition{}, false
	}
	if vn.Status.PodName != pod.Name {
		recorded = 0
	}
	var exit *corev1.ContainerStateTerminated
	switch {
	case st.State.Terminated != nil:
		exit = st.State.Terminated
	case st.LastTerminationState.Terminated != nil && (st.State.Waiting != nil || st.RestartCount > recorded):
		exit = st.LastTerminationState.Terminated
	}
	if exit == nil {
		return metav1.Condition{}, false
	}
	at := ""
	if !exit.FinishedAt.IsZero() {
		at = " at " + exit.FinishedAt.UTC().Format(time.RFC3339)
	}
	return conditions.New(v1alpha1.ConditionServerDown, true, v1alpha1.ReasonContainerExited,
		fmt.Sprintf("container %s of pod %s %s%s", ServerContainer, pod.Name, exitCause(exit), at), gen), true
}
