//go:build e2e

package localkube

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

type drainedKey struct{}

func TestDrain(t *testing.T) {
	const app = "drain"
	f := framework.NewFeature(suite, "drain moves pods").WithLabel(labelDisruptive, "true").
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			createDeploymentAndWait(ctx, t, k, framework.Namespace(ctx), app, int32(2*k.Provider.Workers()))
			nodes := nodeNames(ctx, t, k)
			return context.WithValue(ctx, drainedKey{}, nodes[len(nodes)-1])
		}).
		Assess("kubectl drain moves the node's pods to the other nodes", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns, node := framework.Namespace(ctx), ctx.Value(drainedKey{}).(string)
			replicas := 2 * k.Provider.Workers()
			before := waitAppPods(ctx, t, k, ns, app, replicas)
			start := time.Now()
			must(t, k.Drain(ctx, node, time.Minute), "drain")
			t.Logf("timing: kubectl drain %s returned after %s", node, since(start))

			var list corev1.PodList
			err := framework.WaitForList(ctx, k.Client, &list, podTimeout, "all pods Ready off "+node,
				func(l *corev1.PodList) (bool, string) {
					ok, detail := framework.PodsReady(replicas)(l)
					for _, p := range l.Items {
						if p.Spec.NodeName == node {
							return false, "a pod is still on " + node + ": " + detail
						}
					}
					return ok, detail
				}, client.InNamespace(ns), client.MatchingLabels{"app": app})
			must(t, err, "pods moved")
			after := framework.ReadyPods(&list)
			t.Logf("timing: all %d pods Ready on the other nodes %s after the drain started", replicas, since(start))

			counts := framework.PodsPerNode(after)
			for _, n := range nodeNames(ctx, t, k) {
				if n != node && counts[n] != replicas/(k.Provider.Workers()-1) {
					t.Errorf("node %s runs %d pods after the drain, want an even share (all: %v)", n, counts[n], counts)
				}
			}
			moved := 0
			for _, p := range before {
				if p.Spec.NodeName == node {
					moved++
				}
			}
			t.Logf("%d pods left %s; pods per node now %v", moved, node, counts)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			node := ctx.Value(drainedKey{}).(string)
			must(t, k.Uncordon(ctx, node), "uncordon")
			waitNode(ctx, t, k, node, "become schedulable", framework.NodeBecomesSchedulable)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
