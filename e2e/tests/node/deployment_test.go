//go:build e2e

package node

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

func TestDeploymentNode(t *testing.T) {
	const name = "demo-dep"
	f := framework.NewFeature(suite, "deployment node").
		WithSetup("a Deployment node", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ctx = setUp(ctx, t, cfg)
			fx := fixtureFrom(ctx, t)
			fx.create(ctx, t, fx.newNode(name, v1alpha1.WorkloadDeployment))
			return ctx
		}).
		Assess("the server runs the rendered config, answers an authenticated PING and is scraped", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			fx := fixtureFrom(ctx, t)
			fx.checkServer(ctx, t, name, fx.serverPod(ctx, t, name))
			return ctx
		}).
		Assess("a key written does not survive the deletion of the pod", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			fx := fixtureFrom(ctx, t)
			pod := fx.serverPod(ctx, t, name)
			op := fx.valkey(t, pod, v1alpha1.UserOperator)
			claimAllSlots(ctx, t, op)
			writeKey(ctx, t, op, "lost", pod.Name)
			must(t, fx.c.Delete(ctx, pod), "delete pod")
			fresh := fx.waitReplaced(ctx, t, name, pod)
			op = fx.valkey(t, fresh, v1alpha1.UserOperator)
			claimAllSlots(ctx, t, op)
			got, err := readKey(ctx, op, "lost")
			must(t, err, "GET lost")
			if got != "" {
				t.Errorf("GET lost = %q on the new pod of an emptyDir node, want nothing", got)
			}
			return ctx
		}).
		Assess("a live config change is applied without a restart", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			liveChange(ctx, t, fixtureFrom(ctx, t), name)
			return ctx
		}).
		Assess("turning the exporter off waits for the revision, then the new pod has none", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			fx := fixtureFrom(ctx, t)
			pod := fx.serverPod(ctx, t, name)
			fx.update(ctx, t, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Exporter.Enabled = ptr.To(false) })
			fx.waitCondition(ctx, t, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonUpdatePending, "the pod template")
			fx.update(ctx, t, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Revision = 2 })
			fresh := fx.waitReplaced(ctx, t, name, pod)
			for _, c := range append(fresh.Spec.InitContainers, fresh.Spec.Containers...) {
				if c.Name == "metrics-exporter" {
					t.Errorf("the new pod runs the exporter")
				}
			}
			if _, err := metrics(ctx, fresh); err == nil {
				t.Error("port 9121 still serves metrics")
			}
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}
