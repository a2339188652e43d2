//go:build e2e

package failures

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// TestUnschedulableAtCreation creates a cluster whose nodeSelector matches no node: the
// members' pods stay Pending, PodUnschedulable=True carries the scheduler's message for
// each member, the operator keeps running; once the selector is removed the cluster
// forms and reaches Ready.
func TestUnschedulableAtCreation(t *testing.T) {
	f := framework.NewFeature(suite, "member unschedulable at creation").
		Assess("PodUnschedulable names the members; fixing the spec forms the cluster", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			vc.Spec.Scheduling = &v1alpha1.SchedulingSpec{NodeSelector: map[string]string{"valkey.io/e2e": "nowhere"}}
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			restarts := controllerRestarts(ctx, t, k)
			if err := framework.WaitFor(ctx, k.Client, vc, 2*time.Minute, "report PodUnschedulable=True",
				framework.ConditionIs(v1alpha1.ConditionPodUnschedulable, metav1.ConditionTrue, v1alpha1.ReasonUnschedulable)); err != nil {
				t.Fatal(err)
			}
			c := condition(vc, v1alpha1.ConditionPodUnschedulable)
			t.Logf("PodUnschedulable=%s %s: %s", c.Status, c.Reason, c.Message)
			if !strings.Contains(c.Message, "vk-") || !strings.Contains(c.Message, "node(s) didn't match") {
				t.Errorf("the message names no member or not the scheduler's reason: %s", c.Message)
			}
			framework.LogCondition(t, vc, v1alpha1.ConditionReady)
			framework.LogCondition(t, vc, v1alpha1.ConditionProgressing)
			if ready := condition(vc, v1alpha1.ConditionReady); ready.Status != metav1.ConditionFalse {
				t.Errorf("Ready=%s while no pod can run", ready.Status)
			}
			if got := controllerRestarts(ctx, t, k); got != restarts {
				t.Errorf("the operator's containers restarted (%d -> %d)", restarts, got)
			}

			start := time.Now()
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Scheduling = nil })
			if err := framework.WaitFor(ctx, k.Client, vc, 4*time.Minute, "become Ready", framework.ClusterReady); err != nil {
				for _, m := range k.Members(ctx, t, vc) {
					t.Logf("member %s: lifecycle %q, spec.scheduling %+v", m.Name, m.Status.Lifecycle, m.Spec.Scheduling)
				}
				for _, p := range k.Pods(ctx, t, vc) {
					t.Logf("pod %s: nodeSelector %v, phase %s", p.Name, p.Spec.NodeSelector, p.Status.Phase)
				}
				t.Fatal(err)
			}
			t.Logf("Ready %s after the nodeSelector was removed", time.Since(start).Round(100*time.Millisecond))
			if err := framework.WaitFor(ctx, k.Client, vc, 30*time.Second, "report PodUnschedulable=False",
				framework.ConditionIs(v1alpha1.ConditionPodUnschedulable, metav1.ConditionFalse, "")); err != nil {
				t.Error(err)
			}
			if n := len(k.Members(ctx, t, vc)); n != 6 {
				t.Errorf("%d members, want 6", n)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// controllerRestarts sums the container restarts of the operator's pods.
func controllerRestarts(ctx context.Context, t *testing.T, k *framework.Cluster) int32 {
	t.Helper()
	var pods corev1.PodList
	if err := k.Client.List(ctx, &pods, client.InNamespace(framework.OperatorNamespace)); err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			n += cs.RestartCount
		}
	}
	return n
}
