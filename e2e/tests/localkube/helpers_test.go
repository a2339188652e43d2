//go:build e2e

package localkube

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// Timeouts of the waits of this suite: generous next to what is measured, so a slow
// machine does not fail them, short enough that a hang fails within the suite's budget.
const (
	podTimeout  = 90 * time.Second
	nodeTimeout = 90 * time.Second
	pingTimeout = 2 * time.Second
)

// valkeyGrace is the grace period of the suite's Valkey pods: Valkey stops at SIGTERM
// at once, and a short grace keeps the namespace controller's retries short when the
// feature's namespace is deleted.
const valkeyGrace = 3

// labelDisruptive marks features that disturb nodes (skip them with
// -args --skip-labels=disruptive=true).
const labelDisruptive = "disruptive"

// must fails the test now when err is not nil.
func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// valkeyImage is the Valkey 8.0 image of the manifest (8.0.1, Debian's
// bookworm-backports build).
func valkeyImage(t *testing.T, k *framework.Cluster) string {
	t.Helper()
	img, err := k.ValkeyImage(8, 0)
	must(t, err, "Valkey 8.0 image")
	return img.Ref
}

// valkeyContainer runs a Valkey server on ValkeyPort that anyone on the pod network may
// use, without persistence unless extra arguments ask for it.
func valkeyContainer(image string, extra ...string) corev1.Container {
	cmd := append([]string{"valkey-server", "--port", "6379", "--protected-mode", "no", "--save", "", "--appendonly", "no"}, extra...)
	return corev1.Container{
		Name: "valkey", Image: image, ImagePullPolicy: corev1.PullIfNotPresent, Command: cmd,
		Ports: []corev1.ContainerPort{{Name: "valkey", ContainerPort: framework.ValkeyPort}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(framework.ValkeyPort)}},
			PeriodSeconds: 1,
		},
	}
}

// valkeyPod is a single Valkey pod labelled app=<name>.
func valkeyPod(ns, name, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{valkeyContainer(image)},
			TerminationGracePeriodSeconds: ptr.To[int64](valkeyGrace),
		},
	}
}

// spreadDeployment runs replicas Valkey pods spread evenly over the schedulable nodes:
// maxSkew 1 on the hostname, DoNotSchedule, and nodeTaintsPolicy Honor so a cordoned or
// tainted node stops counting as a domain (without it, a drain leaves pods Pending).
func spreadDeployment(ns, name, image string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{valkeyContainer(image)},
					TerminationGracePeriodSeconds: ptr.To[int64](valkeyGrace),
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew:           1,
						TopologyKey:       corev1.LabelHostname,
						WhenUnsatisfiable: corev1.DoNotSchedule,
						LabelSelector:     &metav1.LabelSelector{MatchLabels: labels},
						NodeTaintsPolicy:  ptr.To(corev1.NodeInclusionPolicyHonor),
					}},
				},
			},
		},
	}
}

// waitAppPods waits until exactly n pods labelled app=<app> are Ready and none is
// terminating, and returns them sorted by name.
func waitAppPods(ctx context.Context, t *testing.T, k *framework.Cluster, ns, app string, n int) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	err := framework.WaitForList(ctx, k.Client, &list, podTimeout, "pods app="+app+" to be Ready", framework.PodsReady(n),
		client.InNamespace(ns), client.MatchingLabels{"app": app})
	must(t, err, "wait for pods")
	return framework.ReadyPods(&list)
}

// createDeploymentAndWait creates a spread Valkey Deployment and waits for its pods.
func createDeploymentAndWait(ctx context.Context, t *testing.T, k *framework.Cluster, ns, name string, replicas int32) []corev1.Pod {
	t.Helper()
	start := time.Now()
	must(t, k.Client.Create(ctx, spreadDeployment(ns, name, valkeyImage(t, k), replicas)), "create Deployment")
	pods := waitAppPods(ctx, t, k, ns, name, int(replicas))
	t.Logf("timing: %d pods of Deployment %s Ready %s after create", replicas, name, since(start))
	return pods
}

// nodeNames returns the names of the worker nodes.
func nodeNames(ctx context.Context, t *testing.T, k *framework.Cluster) []string {
	t.Helper()
	nodes, err := k.WorkerNodes(ctx)
	must(t, err, "list worker nodes")
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return names
}

// since is the time since start, rounded for logs.
func since(start time.Time) time.Duration { return time.Since(start).Round(10 * time.Millisecond) }

// waitNode waits for a condition on a node and returns how long it took.
func waitNode(ctx context.Context, t *testing.T, k *framework.Cluster, name, what string, cond func(*corev1.Node) (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	must(t, framework.WaitFor(ctx, k.Client, node, nodeTimeout, what, cond), "wait for node "+name)
	return since(start)
}
