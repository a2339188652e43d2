package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ControlPlaneLabel marks control-plane nodes (kind has one; the local cluster none).
const ControlPlaneLabel = "node-role.kubernetes.io/control-plane"

// IsWorker reports whether a node is a worker (not labelled control-plane).
func IsWorker(n *corev1.Node) bool {
	_, cp := n.Labels[ControlPlaneLabel]
	return !cp
}

// NodeReadyStatus returns the status of the node's Ready condition ("" when absent).
func NodeReadyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// NodeSchedulable reports whether the node is Ready, not cordoned and free of the
// not-ready and unreachable taints the node lifecycle controller sets.
func NodeSchedulable(n *corev1.Node) bool {
	if n.Spec.Unschedulable || NodeReadyStatus(n) != corev1.ConditionTrue {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	return true
}

// DescribeNode is a one-line summary of a node for messages.
func DescribeNode(n *corev1.Node) string {
	var taints []string
	for _, t := range n.Spec.Taints {
		taints = append(taints, t.Key+":"+string(t.Effect))
	}
	return fmt.Sprintf("%s Ready=%s unschedulable=%t taints=[%s]", n.Name, NodeReadyStatus(n), n.Spec.Unschedulable, strings.Join(taints, ","))
}

// NodeBecomesSchedulable is a WaitFor condition: Ready, uncordoned and untainted.
func NodeBecomesSchedulable(n *corev1.Node) (bool, string) {
	return NodeSchedulable(n), DescribeNode(n)
}

// NodeNotReady is a WaitFor condition: the Ready condition is no longer True.
func NodeNotReady(n *corev1.Node) (bool, string) {
	return NodeReadyStatus(n) != corev1.ConditionTrue, DescribeNode(n)
}

// WorkerNodes lists the worker nodes, sorted by name.
func (k *Cluster) WorkerNodes(ctx context.Context) ([]corev1.Node, error) {
	var list corev1.NodeList
	if err := k.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var out []corev1.Node
	for i := range list.Items {
		if IsWorker(&list.Items[i]) {
			out = append(out, list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Drain cordons a node and evicts its pods with kubectl drain (DaemonSet pods stay;
// emptyDir data and pods without a controller are deleted: this is a test cluster).
func (k *Cluster) Drain(ctx context.Context, node string, timeout time.Duration) error {
	_, err := k.Kubectl(ctx, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force",
		"--timeout="+timeout.String())
	if err != nil {
		return fmt.Errorf("drain %s: %w", node, err)
	}
	return nil
}

// Uncordon makes a node schedulable again.
func (k *Cluster) Uncordon(ctx context.Context, node string) error {
	if _, err := k.Kubectl(ctx, "uncordon", node); err != nil {
		return fmt.Errorf("uncordon %s: %w", node, err)
	}
	return nil
}

// CutLink partitions a node from the control plane and the other nodes (on the local
// provider its link to the bridge goes down).
func (k *Cluster) CutLink(ctx context.Context, node string) error {
	return k.Provider.CutLink(ctx, node)
}

// RestoreLink undoes CutLink.
func (k *Cluster) RestoreLink(ctx context.Context, node string) error {
	return k.Provider.RestoreLink(ctx, node)
}
