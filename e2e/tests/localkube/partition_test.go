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

type (
	victimKey    struct{}
	podByNodeKey struct{}
)

func TestPartition(t *testing.T) {
	f := framework.NewFeature(suite, "node partition").WithLabel(labelDisruptive, "true").
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns, image := framework.Namespace(ctx), valkeyImage(t, k)
			nodes := nodeNames(ctx, t, k)
			pods := map[string]*corev1.Pod{}
			for _, n := range nodes {
				p := valkeyPod(ns, "valkey-"+n, image)
				p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: n}
				must(t, k.Client.Create(ctx, p), "create pod on "+n)
				pods[n] = p
			}
			for n, p := range pods {
				must(t, framework.WaitFor(ctx, k.Client, p, podTimeout, "become Ready", framework.PodReady), "pod on "+n)
			}
			ctx = context.WithValue(ctx, podByNodeKey{}, pods)
			return context.WithValue(ctx, victimKey{}, nodes[len(nodes)/2])
		}).
		Assess("a node whose link is cut goes NotReady", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			victim := ctx.Value(victimKey{}).(string)
			must(t, k.CutLink(ctx, victim), "cut link")
			d := waitNode(ctx, t, k, victim, "stop being Ready", framework.NodeNotReady)
			t.Logf("timing: %s NotReady %s after its link was cut", victim, d)
			return ctx
		}).
		Assess("its pods are unreachable while the others answer", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			victim := ctx.Value(victimKey{}).(string)
			for n, p := range ctx.Value(podByNodeKey{}).(map[string]*corev1.Pod) {
				err := framework.Ping(ctx, framework.PodAddr(p), pingTimeout)
				switch {
				case n == victim && err == nil:
					t.Errorf("pod %s on the cut node %s still answers", p.Name, n)
				case n == victim:
					t.Logf("pod on %s unreachable as expected: %v", n, err)
				case err != nil:
					t.Errorf("pod %s on %s: %v", p.Name, n, err)
				}
			}
			return ctx
		}).
		Assess("the restored node is Ready again and its pod answers", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			victim := ctx.Value(victimKey{}).(string)
			pod := ctx.Value(podByNodeKey{}).(map[string]*corev1.Pod)[victim]
			start := time.Now()
			must(t, k.RestoreLink(ctx, victim), "restore link")
			d := waitNode(ctx, t, k, victim, "become schedulable", framework.NodeBecomesSchedulable)
			t.Logf("timing: %s Ready and untainted %s after its link was restored", victim, d)
			err := framework.Until(ctx, podTimeout, "pod "+pod.Name+" to answer PING", func(ctx context.Context) (bool, string, error) {
				err := framework.Ping(ctx, framework.PodAddr(pod), pingTimeout)
				return err == nil, "", err
			})
			must(t, err, "pod on the restored node")
			t.Logf("timing: pod on %s answers %s after the link was restored", victim, since(start))
			var now corev1.Pod
			must(t, k.Client.Get(ctx, client.ObjectKeyFromObject(pod), &now), "get pod")
			if now.UID != pod.UID {
				t.Errorf("pod %s was replaced during the partition", pod.Name)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			victim := ctx.Value(victimKey{}).(string)
			must(t, k.RestoreLink(ctx, victim), "restore link")
			waitNode(ctx, t, k, victim, "become schedulable", framework.NodeBecomesSchedulable)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
