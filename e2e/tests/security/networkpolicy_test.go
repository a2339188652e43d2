//go:build e2e

package security

import (
	"context"
	"fmt"
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

// reach runs nc from a toolbox pod of ns to every address: the addresses it connected to.
func reach(ctx context.Context, t *testing.T, k *framework.Cluster, ns, name string, addrs []string) map[string]bool {
	t.Helper()
	var script strings.Builder
	for _, a := range addrs {
		host, port, _ := strings.Cut(a, ":")
		// busybox nc has no -z: -e runs a program once connected, so it exits 0 only then.
		fmt.Fprintf(&script, "if nc -w 3 %s %s -e true; then echo open %s; else echo closed %s; fi\n", host, port, a, a)
	}
	res, err := k.RunToolbox(ctx, framework.ToolboxPod{Namespace: ns, Name: name, Script: script.String()}, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	for _, line := range strings.Split(res.Output, "\n") {
		if a, ok := strings.CutPrefix(line, "open "); ok {
			open[a] = true
		}
	}
	return open
}

func TestNetworkPolicyKeepsOtherNamespacesOut(t *testing.T) {
	f := framework.NewFeature(suite, "the cluster's NetworkPolicy refuses other namespaces").
		Assess("another namespace is refused on 6379 and 16379, the namespace is admitted on 6379, a new member still joins", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			if ok, why, err := k.NetworkPolicyEnforced(ctx); err != nil {
				t.Fatal(err)
			} else if !ok {
				t.Skip("the Kubernetes under test enforces no NetworkPolicy: " + why)
			}
			ns := framework.Namespace(ctx)
			vc := framework.NewValkeyCluster(ns, "np", 3, 0)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 4*time.Minute)
			var pods corev1.PodList
			if err := k.Client.List(ctx, &pods, client.InNamespace(ns),
				client.MatchingLabels{v1alpha1.LabelInstance: vc.Name, v1alpha1.LabelName: v1alpha1.AppName}); err != nil {
				t.Fatal(err)
			}
			var addrs []string
			for _, p := range pods.Items {
				addrs = append(addrs, p.Status.PodIP+":6379", p.Status.PodIP+":16379")
			}

			other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns + "-other"}}
			if err := k.Client.Create(ctx, other); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = k.Client.Delete(context.Background(), other) })
			for a, ok := range reach(ctx, t, k, other.Name, "intruder", addrs) {
				if ok {
					t.Errorf("a pod of another namespace reached %s", a)
				}
			}
			inside := reach(ctx, t, k, ns, "neighbour", addrs)
			for _, a := range addrs {
				if strings.HasSuffix(a, ":6379") && !inside[a] {
					t.Errorf("a pod of the cluster's namespace could not reach %s", a)
				}
				if strings.HasSuffix(a, ":16379") && inside[a] {
					t.Errorf("a pod of the namespace that is no member reached the bus at %s", a)
				}
			}

			// Members still meet each other on the bus: a fourth shard joins.
			if err := k.Client.Get(ctx, client.ObjectKeyFromObject(vc), vc); err != nil {
				t.Fatal(err)
			}
			vc.Spec.Shards = 4
			if err := k.Client.Update(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 5*time.Minute)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
