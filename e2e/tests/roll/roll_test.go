//go:build e2e

package roll

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// rollCase creates a cluster, changes it with mutate while the write-checker runs, and
// checks one failover per shard and no acknowledged write lost. Its primaries stay where
// the roll puts them (primaryPlacement policy None): a roll makes one failover per shard,
// and failback's later moves to spread the primaries again would add to the count.
type rollCase struct {
	name             string
	shards, replicas int32
	prepare          func(k *framework.Cluster, vc *v1alpha1.ValkeyCluster) error
	mutate           func(k *framework.Cluster, vc *v1alpha1.ValkeyCluster) error
	after            func(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, before []v1alpha1.ValkeyNode)
}

func (c rollCase) run(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
	c.check(ctx, t)
	return ctx
}

func (c rollCase) check(ctx context.Context, t *testing.T) {
	k := framework.ClusterFrom(ctx, t)
	vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", c.shards, c.replicas)
	vc.Spec.PrimaryPlacement = &v1alpha1.PrimaryPlacementSpec{Policy: v1alpha1.PrimaryPlacementNone}
	if c.prepare != nil {
		if err := c.prepare(k, vc); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Client.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
	before := k.Members(ctx, t, vc)
	match := map[string]string{"namespace": vc.Namespace, "cluster": vc.Name, "kind": "planned"}
	failoversBefore, err := k.OperatorMetric(ctx, "cluster-controller", "valkey_operator_failovers_total", match)
	if err != nil {
		t.Fatal(err)
	}
	var slots []int
	for _, s := range vc.Status.Shards {
		r, err := valkey.ParseSlotRange(s.Slots[0])
		if err != nil {
			t.Fatal(err)
		}
		slots = append(slots, r.Start)
	}
	owners := framework.WatchOwners(func(ctx context.Context) (*valkey.Client, error) { return k.AnyAdmin(ctx, vc) }, slots)
	ch := k.StartChecker(ctx, t, vc)
	time.Sleep(time.Second)

	start := time.Now()
	var mutateErr error
	k.UpdateSpec(ctx, t, vc, func(*v1alpha1.ValkeyClusterSpec) { mutateErr = c.mutate(k, vc) })
	if mutateErr != nil {
		t.Fatal(mutateErr)
	}
	k.WaitClusterReady(ctx, t, vc, 10*time.Minute)
	t.Logf("%s: roll done %s after the change", c.name, time.Since(start).Round(100*time.Millisecond))
	time.Sleep(500 * time.Millisecond)

	changes := owners.Stop()
	r := framework.StopChecker(ctx, t, ch, "", false)
	failoversAfter, err := k.OperatorMetric(ctx, "cluster-controller", "valkey_operator_failovers_total", match)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failovers: operator metric %v, owner changes seen by the servers per shard slot %v", failoversAfter-failoversBefore, changes)
	if got := int(failoversAfter - failoversBefore); got != int(c.shards) {
		t.Errorf("the operator made %d failovers, want one per shard (%d)", got, c.shards)
	}
	for _, slot := range slots {
		if changes[slot] != 1 {
			t.Errorf("slot %d changed owner %d times, want exactly once; changes counted: %q", slot, changes[slot], owners.Seen())
		}
	}
	if r.Lost != 0 {
		t.Errorf("%d acknowledged writes lost: %v", r.Lost, r.LostKeys)
	}
	if c.after != nil {
		c.after(ctx, t, k, vc, before)
	}
}

func TestUpgrade80To91(t *testing.T) {
	var to string
	c := rollCase{name: "8.0 -> 9.1", shards: 3, replicas: 1,
		prepare: func(k *framework.Cluster, vc *v1alpha1.ValkeyCluster) error {
			from, err := k.ValkeyImage(8, 0)
			if err != nil {
				return err
			}
			next, err := k.ValkeyImage(9, 1)
			if err != nil {
				return err
			}
			vc.Spec.Image, to = from.Ref, next.Version
			return nil
		},
		mutate: func(k *framework.Cluster, vc *v1alpha1.ValkeyCluster) error {
			img, err := k.ValkeyImage(9, 1)
			vc.Spec.Image = img.Ref
			return err
		},
		after: func(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, _ []v1alpha1.ValkeyNode) {
			for _, addr := range k.MemberAddrs(ctx, t, vc) {
				v, err := k.Admin(ctx, t, vc, addr).Version(ctx)
				if err != nil || v.String() != to {
					t.Errorf("%s runs %v (%v), want %s", addr, v, err, to)
				}
			}
		}}
	testenv.Test(t, framework.NewFeature(suite, "upgrade 8.0 to 9.1").Assess("one failover per shard, no write lost", c.run).Feature())
}

func TestResourcesChange3x2(t *testing.T) {
	c := rollCase{name: "resources on 3x2", shards: 3, replicas: 2,
		mutate: func(_ *framework.Cluster, vc *v1alpha1.ValkeyCluster) error {
			vc.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("96Mi"), corev1.ResourceCPU: resource.MustParse("20m")}}
			return nil
		},
		after: func(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, _ []v1alpha1.ValkeyNode) {
			for _, p := range k.Pods(ctx, t, vc) {
				for _, ctr := range p.Spec.Containers {
					if ctr.Name == "server" && ctr.Resources.Requests.Memory().String() != "96Mi" {
						t.Errorf("pod %s requests %s", p.Name, ctr.Resources.Requests.Memory())
					}
				}
			}
		}}
	testenv.Test(t, framework.NewFeature(suite, "resources change on 3x2").Assess("one failover per shard, no write lost", c.run).Feature())
}

func TestInPlaceWithPersistence(t *testing.T) {
	c := rollCase{name: "in place with persistence", shards: 3, replicas: 1,
		prepare: func(_ *framework.Cluster, vc *v1alpha1.ValkeyCluster) error {
			vc.Spec.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("256Mi"), ReclaimPolicy: v1alpha1.ReclaimDelete}
			return nil
		},
		mutate: func(_ *framework.Cluster, vc *v1alpha1.ValkeyCluster) error {
			vc.Spec.Config = v1alpha1.Config{"appendonly": "yes"}
			return nil
		},
		after: func(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster, before []v1alpha1.ValkeyNode) {
			after := k.Members(ctx, t, vc)
			names := func(ns []v1alpha1.ValkeyNode) string {
				var out []string
				for _, n := range ns {
					out = append(out, n.Name)
				}
				return strings.Join(out, ",")
			}
			if names(before) != names(after) {
				t.Errorf("members changed (%s -> %s): an in-place roll keeps them", names(before), names(after))
			}
			for _, m := range after {
				if m.Spec.Revision < 2 {
					t.Errorf("%s was not restarted (revision %d)", m.Name, m.Spec.Revision)
				}
				v, err := k.Admin(ctx, t, vc, m.Status.PodIP+":6379").ConfigGet(ctx, "appendonly")
				if err != nil || v["appendonly"] != "yes" {
					t.Errorf("%s: appendonly %v %v", m.Name, v, err)
				}
			}
		}}
	testenv.Test(t, framework.NewFeature(suite, "in-place roll with persistence").Assess("one failover per shard, no write lost, same volumes", c.run).Feature())
}

// TestBlockedRoll asks for a placement no node satisfies: the successor stays Pending, the
// roll stops there and says so, the old members keep serving; fixing the spec resumes it.
func TestBlockedRoll(t *testing.T) {
	f := framework.NewFeature(suite, "roll blocked by an unschedulable successor").
		Assess("the roll stops, says why, keeps serving, resumes once fixed", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			before := k.PodUIDs(ctx, t, vc)
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) {
				s.Scheduling = &v1alpha1.SchedulingSpec{NodeSelector: map[string]string{"valkey.io/e2e": "nowhere"}}
			})
			err := framework.WaitFor(ctx, k.Client, vc, 2*time.Minute, "the roll reported blocked",
				framework.ConditionIs(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonRollBlocked))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("blocked: %s", progressMessage(vc))
			if err := framework.WaitFor(ctx, k.Client, vc, time.Minute, "PodUnschedulable reported",
				framework.ConditionIs(v1alpha1.ConditionPodUnschedulable, metav1.ConditionTrue, "")); err != nil {
				t.Error(err)
			}
			if !strings.Contains(progressMessage(vc), "vk-") {
				t.Errorf("the message does not name the member: %s", progressMessage(vc))
			}
			ready := framework.ConditionIs(v1alpha1.ConditionReady, metav1.ConditionTrue, "")
			if ok, why := ready(vc); !ok {
				t.Errorf("a blocked roll must leave the cluster Ready: %s", why)
			}
			ch := k.StartChecker(ctx, t, vc)
			time.Sleep(2 * time.Second)
			r, err := ch.Stop(ctx)
			if err != nil || r.Acked == 0 || r.Errors > 0 || r.Lost > 0 {
				t.Errorf("the old members must keep serving: %s %v", r, err)
			}
			for name, uid := range before {
				var p corev1.Pod
				if err := k.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &p); err != nil || string(p.UID) != uid {
					t.Errorf("old member pod %s was touched: %v", name, err)
				}
			}
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Scheduling = nil })
			k.WaitClusterReady(ctx, t, vc, 5*time.Minute)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func progressMessage(vc *v1alpha1.ValkeyCluster) string {
	for _, c := range vc.Status.Conditions {
		if c.Type == v1alpha1.ConditionProgressing {
			return fmt.Sprintf("%s: %s", c.Reason, c.Message)
		}
	}
	return ""
}
