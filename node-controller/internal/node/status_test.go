package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// testPod is a pod of the test node in the given phase.
func testPod(phase corev1.PodPhase, restart corev1.RestartPolicy, server *corev1.ContainerState) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{RestartPolicy: restart, NodeName: "worker-2"},
		Status:     corev1.PodStatus{Phase: phase, PodIP: "10.0.0.7"},
	}
	if server != nil {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ServerContainer, State: *server, RestartCount: 4, Image: "valkey/valkey:8.0.1"}}
	}
	return p
}

var (
	running    = &corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	killed     = &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}
	crashing   = &corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	imageFails = &corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}
)

func TestPodReadyCondition(t *testing.T) {
	unschedulable := testPod(corev1.PodPending, corev1.RestartPolicyAlways, nil)
	unschedulable.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints."}}
	crashed := testPod(corev1.PodRunning, corev1.RestartPolicyAlways, crashing)
	crashed.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
	deleting := testPod(corev1.PodRunning, corev1.RestartPolicyAlways, running)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	crashedWithLog := testPod(corev1.PodRunning, corev1.RestartPolicyAlways, crashing)
	crashedWithLog.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
		Message: "Valkey 8.0.1\n\n*** FATAL CONFIG FILE ERROR (Valkey 8.0.1) ***\nReading the configuration file, at line 31\n>>> 'cluster-manual-failover-timeout \"10000\"'\nBad directive or wrong number of arguments\n"}

	// redis-server 7.0.15 under the name valkey-server, on the system-users include.
	crashedQuotingSecret := testPod(corev1.PodRunning, corev1.RestartPolicyAlways, crashing)
	crashedQuotingSecret.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
		Message: "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\nReading the configuration file, at line 1\n>>> 'primaryauth s3cret'\nBad directive or wrong number of arguments\n"}
	refused := testPod(corev1.PodRunning, corev1.RestartPolicyAlways, crashing)
	refused.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: unsupportedServerExit, Reason: "Error",
		Message: "this image's valkey-server is Redis 7.0.15; the operator runs Valkey 8.0 or later\n"}
	refusedBare := testPod(corev1.PodFailed, corev1.RestartPolicyNever, &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: unsupportedServerExit, Reason: "Error", Message: "this image's valkey-server is Valkey 7.2.4; the operator runs Valkey 8.0 or later\n"}})

	// Between two crashes at start the container runs for a moment.
	started := metav1.NewTime(time.Now().Add(-time.Minute))
	runAfterCrash := func(ran time.Duration) *corev1.Pod {
		p := testPod(corev1.PodRunning, corev1.RestartPolicyAlways, running)
		p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
			StartedAt: started, FinishedAt: metav1.NewTime(started.Add(ran)),
			Message: "*** FATAL CONFIG FILE ERROR (Version 8.0.1) ***\n>>> 'no-such 1'\nBad directive or wrong number of arguments\n" +
				"1:C 01 Dec 2026 16:09:20.021 # WARNING: Changing databases number from 16 to 1 since we are in cluster mode\n"}
		return p
	}

	cases := []struct {
		name   string
		o      podObservation
		ok     bool
		reason string
		msg    string
	}{
		{"running for a moment after a crash at start: still the crash loop, with the quoted line though a warning came after it",
			podObservation{pod: runAfterCrash(time.Second), serverErr: errors.New("connection refused")}, false, v1alpha1.ReasonCrashLoop,
			"'no-such <redacted>': Bad directive or wrong number of arguments"},
		{"restarted after serving for long (killed): waiting for the server, not a crash loop",
			podObservation{pod: runAfterCrash(time.Hour), serverErr: errors.New("connection refused")}, false, v1alpha1.ReasonServerUnreachable,
			"connection refused"},
		{"no pod yet", podObservation{}, false, v1alpha1.ReasonPodPending, "waiting for the pod"},
		{"no pod, and why", podObservation{blocker: &blocker{v1alpha1.ReasonPriorityClassNotFound, "PriorityClass high not found"}},
			false, v1alpha1.ReasonPriorityClassNotFound, "PriorityClass high not found"},
		{"crash loop, with the last log line first", podObservation{pod: crashedWithLog}, false, v1alpha1.ReasonCrashLoop,
			`'cluster-manual-failover-timeout <redacted>': Bad directive or wrong number of arguments (container server of pod p restarted 4 times; exited with code 1)`},
		{"crash loop of a server that quotes the password line: the key only", podObservation{pod: crashedQuotingSecret}, false, v1alpha1.ReasonCrashLoop,
			`'primaryauth <redacted>': Bad directive or wrong number of arguments (container server of pod p restarted 4 times; exited with code 1)`},
		{"start command refused the server", podObservation{pod: refused, serverErr: errors.New("connection refused")}, false, v1alpha1.ReasonUnsupportedServer,
			"this image's valkey-server is Redis 7.0.15; the operator runs Valkey 8.0 or later (image valkey/valkey:8.0.1, container server of pod p, restarted 4 times)"},
		{"start command refused the server of a bare pod", podObservation{pod: refusedBare}, false, v1alpha1.ReasonUnsupportedServer,
			"this image's valkey-server is Valkey 7.2.4; the operator runs Valkey 8.0 or later"},
		{"server error text quoting a password", podObservation{pod: testPod(corev1.PodRunning, corev1.RestartPolicyAlways, running),
			serverErr: errors.New("ACL SETUSER: Error in ACL SETUSER modifier '<s3cret': no such password")}, false, v1alpha1.ReasonServerUnreachable,
			"modifier '<<redacted>': no such password"},
		{"bare pod gone", podObservation{missing: true, missingName: "demo-a"}, false, v1alpha1.ReasonPodMissing, "pod demo-a is gone"},
		{"deleting", podObservation{pod: deleting, answered: true}, false, v1alpha1.ReasonPodPending, "being deleted"},
		{"unschedulable", podObservation{pod: unschedulable}, false, v1alpha1.ReasonPodUnschedulable, "didn't match pod topology spread"},
		{"image pull", podObservation{pod: testPod(corev1.PodPending, corev1.RestartPolicyAlways, imageFails)}, false, v1alpha1.ReasonImagePullBackOff, "cannot pull image valkey/valkey:8.0.1"},
		{"pending", podObservation{pod: testPod(corev1.PodPending, corev1.RestartPolicyAlways, nil)}, false, v1alpha1.ReasonPodPending, "starting"},
		{"crash loop", podObservation{pod: crashed}, false, v1alpha1.ReasonCrashLoop, "restarted 4 times; last exited with code 1 (Error)"},
		{"failed bare pod", podObservation{pod: testPod(corev1.PodFailed, corev1.RestartPolicyNever, killed)}, false, v1alpha1.ReasonPodTerminated, "exited with code 137 (OOMKilled); nothing restarts it"},
		{"server dead in a running bare pod", podObservation{pod: testPod(corev1.PodRunning, corev1.RestartPolicyNever, killed)}, false, v1alpha1.ReasonPodTerminated, "code 137"},
		{"server dead in a StatefulSet pod", podObservation{pod: testPod(corev1.PodRunning, corev1.RestartPolicyAlways, killed)}, false, v1alpha1.ReasonCrashLoop, "code 137"},
		{"running, server answers with too much", podObservation{pod: testPod(corev1.PodRunning, corev1.RestartPolicyAlways, running),
			serverErr: fmt.Errorf("info: %w", &valkey.ReplyTooLargeError{Addr: "10.0.0.7:6379", Command: "INFO", Limit: 8 << 20})},
			false, v1alpha1.ReasonReplyTooLarge, "pod p runs but its server answered INFO with more than 8 MiB: the controller does not read it"},
		{"running, server silent", podObservation{pod: testPod(corev1.PodRunning, corev1.RestartPolicyAlways, running), serverErr: errors.New("dial timeout")}, false, v1alpha1.ReasonServerUnreachable, "dial timeout"},
		{"running", podObservation{pod: testPod(corev1.PodRunning, corev1.RestartPolicyAlways, running), answered: true, role: v1alpha1.RolePrimary}, true, v1alpha1.ReasonPodRunning, "answers at 10.0.0.7 as primary"},
		{"running but outdated", podObservation{pod: testPod(corev1.PodRunning, corev1.RestartPolicyAlways, running), answered: true, pending: "raise spec.revision"}, true, v1alpha1.ReasonUpdatePending, "raise spec.revision"},
		{"not running and outdated", podObservation{pod: testPod(corev1.PodRunning, corev1.RestartPolicyAlways, crashing), pending: "raise spec.revision"}, false, v1alpha1.ReasonCrashLoop, "; raise spec.revision"},
		{"unknown phase", podObservation{pod: testPod(corev1.PodUnknown, corev1.RestartPolicyAlways, nil)}, false, v1alpha1.ReasonPodPending, "phase Unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.gen = 2
			c := podReadyCondition(tc.o)
			if (c.Status == metav1.ConditionTrue) != tc.ok || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msg) || c.ObservedGeneration != 2 ||
				strings.Contains(c.Message, "s3cret") {
				t.Errorf("PodReady = %s %s %q, want %v %s ~%q", c.Status, c.Reason, c.Message, tc.ok, tc.reason, tc.msg)
			}
		})
	}
}

func TestRunningRevision(t *testing.T) {
	vn := testNode()
	vn.Status.Revision = 2
	pod := testPod(corev1.PodRunning, corev1.RestartPolicyAlways, running)
	pod.Annotations[AnnotationTemplateHash] = "h1"
	cases := []struct {
		name string
		s    scope
		want int64
	}{
		{"no pod", scope{node: vn, workloadAnn: workloadAnnotations(3, "h1")}, 2},
		{"pod of the workload's template", scope{node: vn, pod: pod, workloadAnn: workloadAnnotations(3, "h1")}, 3},
		{"old pod during a roll", scope{node: vn, pod: pod, workloadAnn: workloadAnnotations(3, "h2")}, 2},
		{"no workload", scope{node: vn, pod: pod}, 2},
	}
	for _, tc := range cases {
		if got := runningRevision(&tc.s); got != tc.want {
			t.Errorf("%s: revision = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestDesiredStatus(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	vn := testNode()
	vn.Status = v1alpha1.ValkeyNodeStatus{PodName: "old", Role: v1alpha1.RoleReplica, Version: "8.0.1", Revision: 1}
	pod := testPod(corev1.PodRunning, corev1.RestartPolicyAlways, running)
	base := func() *scope {
		return &scope{node: vn, pod: pod, configCond: configAppliedCond(vn),
			validity: conditions.New(v1alpha1.ConditionInvalidSpec, false, v1alpha1.ReasonValid, "ok", 1)}
	}

	s := base()
	s.server, s.role, s.serverVersion = fakeServer{}, v1alpha1.RolePrimary, valkey.Version{Major: 8, Minor: 1, Patch: 1}
	got := desiredStatus(s, now)
	if got.PodName != "p" || got.PodIP != "10.0.0.7" || got.NodeName != "worker-2" || got.Role != v1alpha1.RolePrimary || got.Version != "8.1.1" {
		t.Errorf("answered: %+v", got)
	}
	if len(got.Conditions) != len(ownedConditions) || got.Conditions[0].Type != v1alpha1.ConditionPodReady || !got.Conditions[0].LastTransitionTime.Equal(&metav1.Time{Time: now}) {
		t.Errorf("conditions = %+v", got.Conditions)
	}

	s = base()
	s.serverErr = errors.New("timeout")
	if got := desiredStatus(s, now); got.Role != v1alpha1.RoleReplica || got.Version != "8.0.1" {
		t.Errorf("a silent running server keeps the last role and version: %+v", got)
	}

	s = base()
	s.pod = nil
	if got := desiredStatus(s, now); got.Role != "" || got.PodName != "old" || got.PodIP != "" {
		t.Errorf("no pod: %+v, want no role, no IP, the last pod name kept", got)
	}
}

func TestInvalidStatus(t *testing.T) {
	vn := testNode()
	vn.Status.Conditions = []metav1.Condition{conditions.New(v1alpha1.ConditionPodReady, true, v1alpha1.ReasonPodRunning, "runs", 1)}
	invalid := conditions.New(v1alpha1.ConditionInvalidSpec, true, v1alpha1.ReasonInvalid, "spec.image: Required value", 1)
	got := invalidStatus(vn, invalid, time.Now())
	if len(got.Conditions) != len(ownedConditions) {
		t.Fatalf("conditions = %+v", got.Conditions)
	}
	byType := map[string]metav1.Condition{}
	for _, c := range got.Conditions {
		byType[c.Type] = c
	}
	if byType[v1alpha1.ConditionPodReady].Reason != v1alpha1.ReasonPodRunning {
		t.Error("a known condition was not kept")
	}
	if byType[v1alpha1.ConditionStorageReady].Status != metav1.ConditionUnknown {
		t.Error("a condition never set is not Unknown")
	}
	if byType[v1alpha1.ConditionInvalidSpec].Status != metav1.ConditionTrue {
		t.Error("InvalidSpec is not True")
	}
}

// fakeServer is a Server that answers nothing.
type fakeServer struct{}

func (fakeServer) Info(context.Context, ...string) (valkey.Info, error) { return valkey.Info{}, nil }
func (fakeServer) ConfigSet(context.Context, map[string]string) error   { return nil }
