//go:build e2e

package clusterform

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// gone waits until nothing of cluster name is left in ns.
func gone(ctx context.Context, t *testing.T, k *framework.Cluster, ns, name string) {
	t.Helper()
	sel := client.MatchingLabels{v1alpha1.LabelInstance: name}
	err := framework.Until(ctx, 2*time.Minute, "everything of "+name+" deleted", func(ctx context.Context) (bool, string, error) {
		lists := map[string]client.ObjectList{
			"ValkeyNodes": &v1alpha1.ValkeyNodeList{}, "pods": &corev1.PodList{}, "services": &corev1.ServiceList{},
			"secrets": &corev1.SecretList{}, "configmaps": &corev1.ConfigMapList{}, "statefulsets": &appsv1.StatefulSetList{},
			"disruption budgets": &policyv1.PodDisruptionBudgetList{},
		}
		for what, l := range lists {
			if err := k.Client.List(ctx, l, client.InNamespace(ns), sel); err != nil {
				return false, "", err
			}
			if n := len(itemsOf(l)); n > 0 {
				return false, fmt.Sprintf("%d %s left", n, what), nil
			}
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func itemsOf(l client.ObjectList) []any {
	switch v := l.(type) {
	case *v1alpha1.ValkeyNodeList:
		return toAny(v.Items)
	case *corev1.PodList:
		return toAny(v.Items)
	case *corev1.ServiceList:
		return toAny(v.Items)
	case *corev1.SecretList:
		return toAny(v.Items)
	case *corev1.ConfigMapList:
		return toAny(v.Items)
	case *appsv1.StatefulSetList:
		return toAny(v.Items)
	case *policyv1.PodDisruptionBudgetList:
		return toAny(v.Items)
	}
	return nil
}

func toAny[T any](items []T) []any {
	out := make([]any, len(items))
	for i := range items {
		out[i] = items[i]
	}
	return out
}

func TestDeletion(t *testing.T) {
	f := framework.NewFeature(suite, "cluster deletion").
		Assess("deleting a cluster removes everything it owns", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			start := time.Now()
			if err := k.Client.Delete(ctx, vc); err != nil {
				t.Fatal(err)
			}
			gone(ctx, t, k, vc.Namespace, vc.Name)
			t.Logf("everything deleted %s after the cluster", time.Since(start).Round(100*time.Millisecond))
			return ctx
		}).
		Assess("a deletion while the operator is down completes when it comes back", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk2", 1, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			k.ScaleOperator(ctx, t, "cluster-controller", 0)
			t.Cleanup(func() { k.ScaleOperator(context.Background(), t, "cluster-controller", 1) })
			if err := k.Client.Delete(ctx, vc); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Second)
			if n := len(k.Members(ctx, t, vc)); n != 0 {
				t.Logf("%d members held by their finalizer while the operator is down", n)
			}
			k.ScaleOperator(ctx, t, "cluster-controller", 1)
			gone(ctx, t, k, vc.Namespace, vc.Name)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
