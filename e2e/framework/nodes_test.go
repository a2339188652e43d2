package framework

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeSchedulable(t *testing.T) {
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	tests := []struct {
		name string
		node corev1.Node
		want bool
	}{
		{"ready", corev1.Node{Status: corev1.NodeStatus{Conditions: ready}}, true},
		{"cordoned", corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}, Status: corev1.NodeStatus{Conditions: ready}}, false},
		{"unreachable taint", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}}}, Status: corev1.NodeStatus{Conditions: ready}}, false},
		{"unknown", corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}}}, false},
		{"no condition", corev1.Node{}, false},
	}
	for _, tt := range tests {
		if got := NodeSchedulable(&tt.node); got != tt.want {
			t.Errorf("%s: %t, want %t (%s)", tt.name, got, tt.want, DescribeNode(&tt.node))
		}
	}
}

func TestIsWorker(t *testing.T) {
	cp := corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{ControlPlaneLabel: ""}}}
	if IsWorker(&cp) || !IsWorker(&corev1.Node{}) {
		t.Error("IsWorker confuses control plane and workers")
	}
}

func TestPodsReadyAndPerNode(t *testing.T) {
	readyPod := func(name, node string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.88.1.5", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	list := &corev1.PodList{Items: []corev1.Pod{readyPod("b", "n2"), readyPod("a", "n1"), readyPod("c", "n2")}}
	if ok, _ := PodsReady(3)(list); !ok {
		t.Error("three Ready pods: not ready")
	}
	waiting := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
		{Name: "valkey", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}}}}}
	list.Items = append(list.Items, waiting)
	ok, detail := PodsReady(4)(list)
	if ok || !strings.Contains(detail, "4 pods, 3 Ready (want 4)") || !strings.Contains(detail, "d phase=Pending node= ip= [valkey waiting ErrImageNeverPull") {
		t.Errorf("PodsReady(4) = %t, %q", ok, detail)
	}
	got := PodsPerNode(ReadyPods(list))
	if got["n1"] != 1 || got["n2"] != 2 || len(got) != 2 {
		t.Errorf("PodsPerNode = %v", got)
	}
}
