package framework

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodIsReady reports whether the pod runs and its Ready condition is True.
func PodIsReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodReady is a WaitFor condition: the pod is Ready.
func PodReady(p *corev1.Pod) (bool, string) {
	return PodIsReady(p), DescribePod(p)
}

// PodPhase is a WaitFor condition: the pod reached one of the phases.
func PodPhase(phases ...corev1.PodPhase) func(*corev1.Pod) (bool, string) {
	return func(p *corev1.Pod) (bool, string) {
		for _, ph := range phases {
			if p.Status.Phase == ph {
				return true, ""
			}
		}
		return false, DescribePod(p)
	}
}

// ReadyPods returns the pods of the list that are Ready, sorted by name.
func ReadyPods(list *corev1.PodList) []corev1.Pod {
	var out []corev1.Pod
	for i := range list.Items {
		if PodIsReady(&list.Items[i]) {
			out = append(out, list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// PodsReady is a WaitForList condition: exactly n pods, all Ready (none terminating).
func PodsReady(n int) func(*corev1.PodList) (bool, string) {
	return func(list *corev1.PodList) (bool, string) {
		ready := len(ReadyPods(list))
		if ready == n && len(list.Items) == n {
			return true, ""
		}
		return false, fmt.Sprintf("%d pods, %d Ready (want %d): %s", len(list.Items), ready, n, DescribePods(list))
	}
}

// PodsPerNode counts the pods of the list by node name.
func PodsPerNode(pods []corev1.Pod) map[string]int {
	out := map[string]int{}
	for _, p := range pods {
		out[p.Spec.NodeName]++
	}
	return out
}

// DescribePod is a one-line summary of a pod's state for messages.
func DescribePod(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s phase=%s node=%s ip=%s", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.PodIP)
	if p.DeletionTimestamp != nil {
		b.WriteString(" terminating")
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
			if c.Reason != "" || c.Message != "" {
				fmt.Fprintf(&b, "(%s %s)", c.Reason, strings.TrimSpace(c.Message))
			}
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		switch {
		case cs.State.Waiting != nil:
			fmt.Fprintf(&b, " [%s waiting %s %s]", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			fmt.Fprintf(&b, " [%s terminated exit=%d %s]", cs.Name, t.ExitCode, t.Reason)
		}
		if cs.RestartCount > 0 {
			fmt.Fprintf(&b, " [%s restarts=%d]", cs.Name, cs.RestartCount)
		}
	}
	return b.String()
}

// DescribePods summarises every pod of a list, in name order.
func DescribePods(list *corev1.PodList) string {
	items := append([]corev1.Pod{}, list.Items...)
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	parts := make([]string, 0, len(items))
	for i := range items {
		parts = append(parts, DescribePod(&items[i]))
	}
	return strings.Join(parts, "; ")
}

// ContainerTerminated returns the terminated state of a container, or nil.
func ContainerTerminated(p *corev1.Pod, container string) *corev1.ContainerStateTerminated {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.State.Terminated
		}
	}
	return nil
}
