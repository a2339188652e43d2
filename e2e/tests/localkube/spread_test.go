//go:build e2e

package localkube

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

type podsKey struct{}

func TestSpreadAndPodNetwork(t *testing.T) {
	const app, perNode = "spread", 2
	f := framework.NewFeature(suite, "pods spread over the nodes and are reachable").
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			replicas := int32(perNode * k.Provider.Workers())
			pods := createDeploymentAndWait(ctx, t, k, framework.Namespace(ctx), app, replicas)
			return context.WithValue(ctx, podsKey{}, pods)
		}).
		Assess("each node runs two of the pods", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			counts := framework.PodsPerNode(ctx.Value(podsKey{}).([]corev1.Pod))
			for _, n := range nodeNames(ctx, t, k) {
				if counts[n] != perNode {
					t.Errorf("node %s runs %d pods, want %d (all: %v)", n, counts[n], perNode, counts)
				}
			}
			t.Logf("pods per node: %v", counts)
			return ctx
		}).
		Assess("each pod answers PING at its IP from the host", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			for _, p := range ctx.Value(podsKey{}).([]corev1.Pod) {
				start := time.Now()
				if err := framework.Ping(ctx, framework.PodAddr(&p), pingTimeout); err != nil {
					t.Errorf("pod %s on %s: %v", p.Name, p.Spec.NodeName, err)
					continue
				}
				t.Logf("host -> %s (%s on %s): PONG in %s", p.Status.PodIP, p.Name, p.Spec.NodeName, time.Since(start).Round(time.Microsecond))
			}
			return ctx
		}).
		Assess("each pod answers PING from a pod on another node", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			clients := startToolboxPerNode(ctx, t, k, framework.Namespace(ctx))
			for _, p := range ctx.Value(podsKey{}).([]corev1.Pod) {
				from := otherNode(clients, p.Spec.NodeName)
				out, err := k.Exec(ctx, framework.Namespace(ctx), clients[from], "", "valkey-cli", "-h", p.Status.PodIP, "ping")
				if err != nil || strings.TrimSpace(out) != "PONG" {
					t.Errorf("%s -> %s (%s on %s): %q %v", from, p.Status.PodIP, p.Name, p.Spec.NodeName, out, err)
					continue
				}
				t.Logf("pod on %s -> %s on %s: PONG", from, p.Name, p.Spec.NodeName)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// startToolboxPerNode starts one toolbox pod on each worker node and returns their
// names by node.
func startToolboxPerNode(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range nodeNames(ctx, t, k) {
		name := "toolbox-" + n
		_, err := k.StartToolbox(ctx, framework.ToolboxPod{Namespace: ns, Name: name, Node: n}, podTimeout)
		must(t, err, fmt.Sprintf("start toolbox on %s", n))
		out[n] = name
	}
	return out
}

// otherNode returns a node of the map other than node, the smallest name first.
func otherNode(byNode map[string]string, node string) string {
	best := ""
	for n := range byNode {
		if n != node && (best == "" || n < best) {
			best = n
		}
	}
	return best
}
