//go:build e2e

package failures

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// webhookReplicas is the chart's default replica count of the webhooks.
const webhookReplicas = 2

// TestWebhooksDownDuringRoll kills the webhook pods and keeps them down in the middle of
// a roll. The webhooks guard user writes only (their matchConditions skip the operator's
// service accounts), so the controllers keep writing ValkeyNodes, their status,
// finalizers and failover requests: the roll completes with one failover per shard and no
// acknowledged write lost. A user's edit of the cluster meanwhile is refused, since the
// chart keeps failurePolicy Fail.
func TestWebhooksDownDuringRoll(t *testing.T) {
	f := framework.NewFeature(suite, "webhooks down during a roll").
		Assess("the roll completes; user writes are refused until the webhooks are back", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k, vc := newCluster(ctx, t, 3, 1, nil)
			slots := shardSlots(t, vc)
			before, err := k.OwnerOf(ctx, vc, slots[0])
			if err != nil {
				t.Fatal(err)
			}
			owners := watchOwners(k, vc, slots)
			ch := k.StartChecker(ctx, t, vc)
			time.Sleep(time.Second)

			start := time.Now()
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) {
				s.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("72Mi")}}
			})
			k.WaitOwnerChange(ctx, t, vc, slots[0], before, 5*time.Minute)
			t.Logf("shard 0 failed over %s after the change; taking the webhooks down", time.Since(start).Round(100*time.Millisecond))
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				k.ScaleOperator(ctx, t, "webhooks", webhookReplicas)
			})
			var pods corev1.PodList
			if err := k.Client.List(ctx, &pods, client.InNamespace(framework.OperatorNamespace),
				client.MatchingLabels{"app.kubernetes.io/component": "webhooks"}); err != nil {
				t.Fatal(err)
			}
			k.ScaleOperator(ctx, t, "webhooks", 0)
			for _, p := range pods.Items {
				_ = k.Client.Delete(ctx, &p, client.GracePeriodSeconds(0))
			}

			// A user's write goes through the webhook, which does not answer. A merge
			// patch, as kubectl's: an update would carry the resourceVersion it read, and
			// the operator's status writes during the roll make it conflict before
			// admission is asked.
			var now v1alpha1.ValkeyCluster
			if err := k.Client.Get(ctx, client.ObjectKeyFromObject(vc), &now); err != nil {
				t.Fatal(err)
			}
			patch := client.MergeFrom(now.DeepCopy())
			now.Spec.Config = map[string]string{"maxmemory-policy": "allkeys-lru"}
			err = k.Client.Patch(ctx, &now, patch, client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), "webhook") {
				t.Errorf("a user's update with the webhooks down: %v, want a refusal naming the webhook", err)
			} else {
				t.Logf("a user's update with the webhooks down is refused: %v", err)
			}

			k.WaitClusterReady(ctx, t, vc, 10*time.Minute)
			t.Logf("roll done %s after the change, the webhooks down since the first failover", time.Since(start).Round(100*time.Millisecond))
			time.Sleep(500 * time.Millisecond)
			changes := owners.Stop()
			framework.StopChecker(ctx, t, ch, "whole roll", true)
			checkOwnerChanges(t, changes, slots, map[int32]int{0: 1, 1: 1, 2: 1})
			for _, m := range k.Members(ctx, t, vc) {
				if m.Spec.Resources.Requests.Memory().Cmp(resource.MustParse("72Mi")) != 0 {
					t.Errorf("member %s runs the old resources", m.Name)
				}
			}
			k.ScaleOperator(ctx, t, "webhooks", webhookReplicas)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
