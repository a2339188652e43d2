//go:build e2e

package node

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

func TestPodNode(t *testing.T) {
	const name = "demo-pod"
	f := framework.NewFeature(suite, "bare pod node").
		WithSetup("a Pod node", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ctx = setUp(ctx, t, cfg)
			fx := fixtureFrom(ctx, t)
			fx.create(ctx, t, fx.newNode(name, v1alpha1.WorkloadPod))
			return ctx
		}).
		Assess("the server runs the rendered config, answers an authenticated PING and is scraped", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			fx := fixtureFrom(ctx, t)
			pod := fx.serverPod(ctx, t, name)
			if pod.Name != name || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("pod %s restartPolicy %s", pod.Name, pod.Spec.RestartPolicy)
			}
			fx.checkServer(ctx, t, name, pod)
			return ctx
		}).
		Assess("a live config change is applied without a restart", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			liveChange(ctx, t, fixtureFrom(ctx, t), name)
			return ctx
		}).
		Assess("a killed server leaves the pod Failed, reported, and nothing restarts it", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			fx := fixtureFrom(ctx, t)
			pod := fx.serverPod(ctx, t, name)
			op := fx.valkey(t, pod, v1alpha1.UserOperator)
			claimAllSlots(ctx, t, op)
			writeKey(ctx, t, op, "lost", pod.Name)
			_, err := framework.SignalContainer(pod, "server", syscall.SIGKILL)
			must(t, err, "kill the server")
			must(t, framework.WaitFor(ctx, fx.c, pod, podTimeout, "fail", framework.PodPhase(corev1.PodFailed)), "pod phase")
			fx.waitCondition(ctx, t, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonPodTerminated, "exited with code 137")
			holds(ctx, t, 10*time.Second, "the dead pod stays dead", func(ctx context.Context) error {
				var p corev1.Pod
				if err := fx.c.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
					return err
				}
				if p.UID != pod.UID || p.Status.Phase != corev1.PodFailed {
					return fmt.Errorf("the pod changed: %s", framework.DescribePod(&p))
				}
				for _, cs := range p.Status.ContainerStatuses {
					if cs.RestartCount != 0 || cs.State.Running != nil {
						return fmt.Errorf("container %s restarted: %s", cs.Name, framework.DescribePod(&p))
					}
				}
				return nil
			})
			return ctx
		}).
		Assess("a deleted pod is reported missing and not recreated", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			fx := fixtureFrom(ctx, t)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fx.ns, Name: name}}
			must(t, fx.c.Delete(ctx, pod), "delete pod")
			must(t, framework.WaitForDeletion(ctx, fx.c, pod, podTimeout), "pod deletion")
			fx.waitCondition(ctx, t, name, v1alpha1.ConditionPodReady, metav1.ConditionFalse, v1alpha1.ReasonPodMissing, "pod "+name+" is gone")
			holds(ctx, t, 10*time.Second, "no new pod", func(ctx context.Context) error {
				err := fx.c.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
				if apierrors.IsNotFound(err) {
					return nil
				}
				return fmt.Errorf("the pod was recreated (err %v)", err)
			})
			return ctx
		}).
		Assess("a new revision brings a new pod, without the old data", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			fx := fixtureFrom(ctx, t)
			fx.update(ctx, t, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Revision = 2 })
			pod := fx.serverPod(ctx, t, name)
			op := fx.valkey(t, pod, v1alpha1.UserOperator)
			claimAllSlots(ctx, t, op)
			got, err := readKey(ctx, op, "lost")
			must(t, err, "GET lost")
			if got != "" {
				t.Errorf("GET lost = %q on a new bare pod, want nothing", got)
			}
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}
