package framework

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/images"
)

// ToolboxPod describes a pod of the toolbox image (busybox and valkey-cli).
type ToolboxPod struct {
	Namespace string
	Name      string
	// Node pins the pod to a node (empty: the scheduler chooses).
	Node string
	// Script is run by sh -c; empty runs the image's default (sleep until stopped).
	Script string
}

// pod builds the pod of t with the given image and restart policy.
func (t ToolboxPod) pod(image string, restart corev1.RestartPolicy) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: t.Name, Labels: map[string]string{"app.kubernetes.io/name": "toolbox"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 restart,
			NodeName:                      t.Node,
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers: []corev1.Container{{
				Name: "toolbox", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
			}},
		},
	}
	if t.Script != "" {
		p.Spec.Containers[0].Command = []string{"sh", "-c", t.Script}
	}
	return p
}

// ToolboxResult is how a one-shot toolbox pod ended.
type ToolboxResult struct {
	// Output is the pod's log (standard output and error).
	Output string
	// ExitCode is the script's exit code.
	ExitCode int32
}

// RunToolbox runs a one-shot toolbox pod (restartPolicy Never) until it ends, and
// returns its log and exit code. The pod is deleted afterwards.
func (k *Cluster) RunToolbox(ctx context.Context, t ToolboxPod, timeout time.Duration) (ToolboxResult, error) {
	img, err := k.ComponentImage(images.ComponentToolbox)
	if err != nil {
		return ToolboxResult{}, err
	}
	pod := t.pod(img.Ref, corev1.RestartPolicyNever)
	if err := k.Client.Create(ctx, pod); err != nil {
		return ToolboxResult{}, fmt.Errorf("create toolbox pod %s: %w", t.Name, err)
	}
	defer func() { _ = k.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) }()
	if err := WaitFor(ctx, k.Client, pod, timeout, "end", PodPhase(corev1.PodSucceeded, corev1.PodFailed)); err != nil {
		return ToolboxResult{}, err
	}
	term := ContainerTerminated(pod, "toolbox")
	if term == nil {
		return ToolboxResult{}, fmt.Errorf("toolbox pod %s ended without a terminated state: %s", t.Name, DescribePod(pod))
	}
	out, err := k.Logs(ctx, t.Namespace, t.Name, "toolbox")
	if err != nil {
		return ToolboxResult{}, err
	}
	return ToolboxResult{Output: out, ExitCode: term.ExitCode}, nil
}

// StartToolbox creates a long-running toolbox pod (for Exec) and waits until it runs.
func (k *Cluster) StartToolbox(ctx context.Context, t ToolboxPod, timeout time.Duration) (*corev1.Pod, error) {
	img, err := k.ComponentImage(images.ComponentToolbox)
	if err != nil {
		return nil, err
	}
	pod := t.pod(img.Ref, corev1.RestartPolicyAlways)
	if err := k.Client.Create(ctx, pod); err != nil {
		return nil, fmt.Errorf("create toolbox pod %s: %w", t.Name, err)
	}
	if err := WaitFor(ctx, k.Client, pod, timeout, "become Ready", PodReady); err != nil {
		return nil, err
	}
	return pod, nil
}
