//go:build e2e

package localkube

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/images"
)

func TestKilledServerExitCode(t *testing.T) {
	f := framework.NewFeature(suite, "killed server").
		Assess("a pod that may not restart ends Failed with the server's exit code", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			pod := valkeyPod(framework.Namespace(ctx), "crash", valkeyImage(t, k))
			pod.Spec.RestartPolicy = corev1.RestartPolicyNever
			must(t, k.Client.Create(ctx, pod), "create pod")
			must(t, framework.WaitFor(ctx, k.Client, pod, podTimeout, "become Ready", framework.PodReady), "pod")

			// valkey-server is PID 1 of the pod: the kernel ignores a SIGKILL sent to it from
			// inside (kubectl exec ... kill -KILL 1), so it is killed from the host.
			start := time.Now()
			pid, err := framework.SignalContainer(pod, "valkey", syscall.SIGKILL)
			must(t, err, "kill the server")
			t.Logf("sent SIGKILL to host pid %d", pid)
			must(t, framework.WaitFor(ctx, k.Client, pod, podTimeout, "end Failed", framework.PodPhase(corev1.PodFailed, corev1.PodSucceeded)), "pod")
			t.Logf("timing: pod %s %s after the kill", pod.Status.Phase, since(start))
			if pod.Status.Phase != corev1.PodFailed {
				t.Errorf("pod phase %s, want Failed", pod.Status.Phase)
			}
			term := framework.ContainerTerminated(pod, "valkey")
			if term == nil {
				t.Fatalf("no terminated state: %s", framework.DescribePod(pod))
			}
			if term.ExitCode != 128+int32(syscall.SIGKILL) {
				t.Errorf("exit code %d (%s), want %d (killed by SIGKILL)", term.ExitCode, term.Reason, 128+int32(syscall.SIGKILL))
			}
			t.Logf("pod status: exit code %d, reason %s", term.ExitCode, term.Reason)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestTerminationGrace(t *testing.T) {
	const grace = 5
	f := framework.NewFeature(suite, "pod termination").
		Assess("deleting a pod sends SIGTERM and waits the grace period for it to exit", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			img, err := k.ComponentImage(images.ComponentToolbox)
			must(t, err, "toolbox image")
			// The process notes SIGTERM and carries on; only the SIGKILL at the end of the
			// grace period stops it.
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: framework.Namespace(ctx), Name: "stubborn"},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](grace),
					Containers: []corev1.Container{{
						Name: "main", Image: img.Ref, ImagePullPolicy: corev1.PullIfNotPresent,
						Command: []string{"sh", "-c", `trap 'echo got SIGTERM' TERM; echo started; while :; do sleep 1; done`},
					}},
				},
			}
			logs := deleteAndMeasure(ctx, t, k, pod, "main", "started", func(d time.Duration) {
				if d < grace*time.Second || d > (grace+8)*time.Second {
					t.Errorf("the pod was gone %s after the delete, want about its %d s grace period", d, grace)
				}
			})
			if !strings.Contains(logs, "got SIGTERM") {
				t.Errorf("the process did not see SIGTERM; its log:\n%s", logs)
			}
			return ctx
		}).
		Assess("a Valkey server stops at SIGTERM without using its grace period", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			pod := valkeyPod(framework.Namespace(ctx), "valkey-term", valkeyImage(t, k))
			pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
			logs := deleteAndMeasure(ctx, t, k, pod, "valkey", "Ready to accept connections", func(d time.Duration) {
				if d > 15*time.Second {
					t.Errorf("the pod was gone %s after the delete: Valkey did not stop at SIGTERM", d)
				}
			})
			if !strings.Contains(logs, "Received SIGTERM") {
				t.Errorf("Valkey did not log SIGTERM; its log:\n%s", logs)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// deleteAndMeasure starts the pod, follows its log until startedLine shows, deletes the
// pod, checks the time until it is gone with check, and returns the container's log.
func deleteAndMeasure(ctx context.Context, t *testing.T, k *framework.Cluster, pod *corev1.Pod, container, startedLine string, check func(time.Duration)) string {
	t.Helper()
	must(t, k.Client.Create(ctx, pod), "create pod")
	must(t, framework.WaitFor(ctx, k.Client, pod, podTimeout, "run", framework.PodPhase(corev1.PodRunning)), "pod")
	follower, err := k.FollowLogs(ctx, pod.Namespace, pod.Name, container)
	must(t, err, "follow logs")
	defer follower.Stop()
	err = framework.Until(ctx, podTimeout, pod.Name+" to log "+startedLine, func(context.Context) (bool, string, error) {
		return strings.Contains(follower.String(), startedLine), follower.String(), nil
	})
	must(t, err, "process start")
	start := time.Now()
	must(t, k.Client.Delete(ctx, pod), "delete pod")
	must(t, framework.WaitForDeletion(ctx, k.Client, pod, podTimeout), "pod deletion")
	d := since(start)
	t.Logf("timing: pod %s gone %s after the delete (grace period %d s)", pod.Name, d, *pod.Spec.TerminationGracePeriodSeconds)
	check(d)
	logs, err := follower.Wait(10 * time.Second)
	if err != nil {
		t.Logf("log stream: %v", err)
	}
	return logs
}
