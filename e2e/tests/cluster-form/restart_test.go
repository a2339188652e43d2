//go:build e2e

package clusterform

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// TestOperatorRestartDuringFormation deletes the cluster-controller's pod while a cluster
// forms: the new one reads the state from the servers and finishes, with no duplicate
// member and no node the servers know that no member is.
func TestOperatorRestartDuringFormation(t *testing.T) {
	f := framework.NewFeature(suite, "operator restart during formation").
		Assess("the cluster finishes forming without duplicates or orphans", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			// As soon as the members exist, before the cluster is formed.
			var nodes v1alpha1.ValkeyNodeList
			if err := framework.WaitForList(ctx, k.Client, &nodes, time.Minute, "members created", func(l *v1alpha1.ValkeyNodeList) (bool, string) {
				return len(l.Items) > 0, strconv.Itoa(len(l.Items)) + " members"
			}, client.InNamespace(vc.Namespace)); err != nil {
				t.Fatal(err)
			}
			var pods corev1.PodList
			if err := k.Client.List(ctx, &pods, client.InNamespace(framework.OperatorNamespace),
				client.MatchingLabels{"app.kubernetes.io/component": "cluster-controller"}); err != nil {
				t.Fatal(err)
			}
			for i := range pods.Items {
				if err := k.Client.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("deleted the cluster-controller pod with %d members created", len(nodes.Items))
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			checkTopology(ctx, t, k, vc, 3, 1)
			var all v1alpha1.ValkeyNodeList
			if err := k.Client.List(ctx, &all, client.InNamespace(vc.Namespace)); err != nil {
				t.Fatal(err)
			}
			if len(all.Items) != 6 {
				t.Errorf("%d ValkeyNodes, want 6", len(all.Items))
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
