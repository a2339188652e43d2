package node

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func TestServerDownCondition(t *testing.T) {
	exited := &corev1.ContainerStateTerminated{ExitCode: 137, Signal: 9, Reason: "Error",
		FinishedAt: metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))}
	withServer := func(phase corev1.PodPhase, state corev1.ContainerState, restarts int32, last *corev1.ContainerStateTerminated) *corev1.Pod {
		p := testPod(phase, corev1.RestartPolicyAlways, &state)
		p.Status.ContainerStatuses[0].RestartCount = restarts
		p.Status.ContainerStatuses[0].LastTerminationState.Terminated = last
		return p
	}
	deleting := withServer(corev1.PodRunning, corev1.ContainerState{Terminated: exited}, 0, nil)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	failedBare := testPod(corev1.PodFailed, corev1.RestartPolicyNever, nil)
	cases := []struct {
		name     string
		pod      *corev1.Pod
		podName  string // the pod the recorded count is of
		answered bool
		recorded int32
		// vacated is the watch's proof; prevDown, a ServerDown=True of an earlier pass.
		vacated, prevDown string
		want              metav1.ConditionStatus
		msg               string
	}{
		{name: "no pod: unknown", want: metav1.ConditionUnknown},
		{name: "the server answers", pod: withServer(corev1.PodRunning, *running, 3, exited), recorded: 2, answered: true, want: metav1.ConditionFalse},
		{name: "the container terminated", pod: withServer(corev1.PodRunning, corev1.ContainerState{Terminated: exited}, 0, nil),
			want: metav1.ConditionTrue, msg: "exited with code 137 after signal 9 (Error) at 2026-12-01T12:00:00Z"},
		{name: "waiting to restart after a termination", pod: withServer(corev1.PodRunning, *crashing, 1, exited), recorded: 1,
			want: metav1.ConditionTrue, msg: "code 137"},
		{name: "restarted, not answering yet (a restarted server waiting to start)", pod: withServer(corev1.PodRunning, *running, 1, exited),
			want: metav1.ConditionTrue, msg: "code 137"},
		{name: "running as when it last answered, but silent: a partition, not a death", pod: withServer(corev1.PodRunning, *running, 1, exited),
			recorded: 1, want: metav1.ConditionFalse},
		{name: "a new pod: its restarts count from zero", pod: withServer(corev1.PodRunning, *running, 0, nil), podName: "old-pod", recorded: 4,
			want: metav1.ConditionFalse},
		{name: "a pod being deleted is never down (its hand-over may run)", pod: deleting, want: metav1.ConditionFalse},
		{name: "a failed bare pod", pod: failedBare, want: metav1.ConditionTrue, msg: "failed"},
		{name: "the pod went with its server, whose address refuses connections", vacated: "pod p is gone and its server no longer listens at 10.88.1.5",
			want: metav1.ConditionTrue, msg: "no longer listens at 10.88.1.5"},
		{name: "its server died in the running pod: the held connection's proof", pod: withServer(corev1.PodRunning, *running, 0, nil),
			vacated: "the server of pod p no longer listens at 10.88.1.5", want: metav1.ConditionTrue, msg: "the server of pod p no longer listens"},
		{name: "proven down, then the kubelet's report: its message, which says more", pod: withServer(corev1.PodRunning, *crashing, 1, exited),
			vacated: "the server of pod p no longer listens at 10.88.1.5", prevDown: "the server of pod p no longer listens at 10.88.1.5",
			want: metav1.ConditionTrue, msg: "exited with code 137"},
		{name: "proven down, no pod yet: still down", prevDown: "pod p is gone", want: metav1.ConditionTrue, msg: "pod p is gone"},
		{name: "proven down, the next pod pending: still down", pod: testPod(corev1.PodPending, corev1.RestartPolicyAlways, nil), prevDown: "pod p is gone",
			want: metav1.ConditionTrue, msg: "pod p is gone"},
		{name: "proven down, the next pod's server answers: up", pod: withServer(corev1.PodRunning, *running, 0, nil), answered: true, prevDown: "pod p is gone",
			want: metav1.ConditionFalse},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vn := testNode()
			vn.Status.PodName = "p"
			if c.podName != "" {
				vn.Status.PodName = c.podName
			}
			if c.prevDown != "" {
				vn.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionServerDown, Status: metav1.ConditionTrue,
					Reason: v1alpha1.ReasonContainerExited, Message: c.prevDown}}
			}
			got := serverDownCondition(vn, c.pod, c.answered, c.recorded, c.vacated, 1)
			if got.Status != c.want || !strings.Contains(got.Message, c.msg) {
				t.Errorf("ServerDown = %s %s %q, want %s ~%q", got.Status, got.Reason, got.Message, c.want, c.msg)
			}
			if got.Status == metav1.ConditionTrue && got.Reason != v1alpha1.ReasonContainerExited {
				t.Errorf("reason %s", got.Reason)
			}
		})
	}
}

func TestServerRestarts(t *testing.T) {
	vn := testNode()
	vn.Status.PodName, vn.Status.ServerRestarts = "p", 2
	pod := testPod(corev1.PodRunning, corev1.RestartPolicyAlways, running)
	pod.Status.ContainerStatuses[0].RestartCount = 3
	if got := serverRestarts(vn, pod, true); got != 3 {
		t.Errorf("answering: %d, want the container's 3", got)
	}
	if got := serverRestarts(vn, pod, false); got != 2 {
		t.Errorf("silent: %d, want the recorded 2", got)
	}
	vn.Status.PodName = "old"
	if got := serverRestarts(vn, pod, false); got != 0 {
		t.Errorf("silent new pod: %d, want 0", got)
	}
}
