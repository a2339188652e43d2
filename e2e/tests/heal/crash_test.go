//go:build e2e

package heal

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestServerKilledOn80(t *testing.T) { testServerKilled(t, 8, 0, v1alpha1.WorkloadStatefulSet) }
func TestServerKilledOn81(t *testing.T) { testServerKilled(t, 8, 1, v1alpha1.WorkloadStatefulSet) }
func TestServerKilledOn91(t *testing.T) { testServerKilled(t, 9, 1, v1alpha1.WorkloadStatefulSet) }

// The same crash under the other workload types: a Deployment's pod restarts its
// container as a StatefulSet's does; a bare pod (restartPolicy Never) ends Failed and its
// member is replaced by a new one.
func TestServerKilledDeployment(t *testing.T) { testServerKilled(t, 8, 0, v1alpha1.WorkloadDeployment) }
func TestServerKilledPod(t *testing.T)        { testServerKilled(t, 8, 0, v1alpha1.WorkloadPod) }

// testServerKilled kills the server process of a primary with SIGKILL from the host, as
// the kernel's OOM killer would: the container restarts in the same pod. The kubelet
// reports the exit, the node-controller says ServerDown, and the cluster-controller
// promotes the replica at once (one promotion, counted as forced) instead of waiting for
// Valkey's failure detection. The restarted server waits until a peer shows its slots
// taken over, then joins, empty, as the new replica; its old identity is forgotten.
// No acknowledged write is lost. The primaries stay where the promotion put them
// (primaryPlacement policy None): the placement suite checks the planned failover that
// gives the shard back to the member once it is in sync.
func testServerKilled(t *testing.T, major, minor int, workload v1alpha1.WorkloadType) {
	f := framework.NewFeature(suite, fmt.Sprintf("primary server killed on %d.%d (%s)", major, minor, workload)).
		Assess("one promotion, no acknowledged write lost, the member back as a replica", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			img, err := k.ValkeyImage(major, minor)
			if err != nil {
				t.Fatal(err)
			}
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			vc.Spec.Image = img.Ref
			vc.Spec.WorkloadType = workload
			vc.Spec.PrimaryPlacement = &v1alpha1.PrimaryPlacementSpec{Policy: v1alpha1.PrimaryPlacementNone}
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			p := k.Member(ctx, t, vc, 0, v1alpha1.RolePrimary)
			r := k.Member(ctx, t, vc, 0, v1alpha1.RoleReplica)
			pod := k.PodOf(ctx, t, vc, p.Name)
			restarts := framework.ContainerRestarts(pod, "server")
			var slots []int
			for _, s := range vc.Status.Shards {
				rg, _ := valkey.ParseSlotRange(s.Slots[0])
				slots = append(slots, rg.Start)
			}
			owners := framework.WatchOwners(func(ctx context.Context) (*valkey.Client, error) { return k.AnyAdmin(ctx, vc) }, slots)
			ch := k.StartChecker(ctx, t, vc)
			time.Sleep(time.Second)

			start := time.Now()
			if _, err := framework.SignalContainer(pod, "server", syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			owner := k.WaitOwnerChange(ctx, t, vc, slots[0], p.Status.NodeID, 2*time.Minute)
			promotedAt := time.Now()
			t.Logf("shard 0 served by %.8s %s after the kill", owner, promotedAt.Sub(start).Round(10*time.Millisecond))
			if owner != r.Status.NodeID {
				t.Errorf("shard 0 is served by %.8s, want its replica %s (%.8s)", owner, r.Name, r.Status.NodeID)
			}
			took := k.WaitNotReadyThenReady(ctx, t, vc, start, 4*time.Minute)
			t.Logf("full redundancy back %s after the kill", took.Round(100*time.Millisecond))
			time.Sleep(500 * time.Millisecond)
			changes := owners.Stop()
			rep := framework.StopChecker(ctx, t, ch, "primary server killed", true)
			t.Logf("write gap of shard 0: %s", rep.GapOf(slots[0]).Round(time.Millisecond))
			if changes[slots[0]] != 1 {
				t.Errorf("shard 0 changed owner %d times, want one promotion (changes per shard slot: %v)", changes[slots[0]], changes)
			}
			k.CheckPromotion(ctx, t, vc, p.Name, promotedAt)

			if workload == v1alpha1.WorkloadPod {
				// A bare pod is not restarted: its member is replaced by a new one.
				vn := &v1alpha1.ValkeyNode{}
				err := k.Client.Get(ctx, client.ObjectKeyFromObject(&p), vn)
				if err == nil && vn.DeletionTimestamp == nil {
					t.Errorf("member %s of the failed bare pod is kept (%s, node %.8s)", p.Name, vn.Status.Role, vn.Status.NodeID)
				}
				k.ForgottenEverywhere(ctx, t, vc, p.Status.NodeID)
				return ctx
			}
			var now corev1.Pod
			if err := k.Client.Get(ctx, client.ObjectKeyFromObject(pod), &now); err != nil {
				t.Fatal(err)
			}
			if now.UID != pod.UID {
				t.Errorf("pod %s was replaced (UID %s -> %s): only its container should restart", pod.Name, pod.UID, now.UID)
			}
			if got := framework.ContainerRestarts(&now, "server"); got <= restarts {
				t.Errorf("the server container of %s restarted %d times, want more than %d", pod.Name, got, restarts)
			}
			vn := &v1alpha1.ValkeyNode{}
			if err := k.Client.Get(ctx, client.ObjectKeyFromObject(&p), vn); err != nil {
				t.Fatal(err)
			}
			if vn.Status.NodeID == p.Status.NodeID || vn.Status.Role != v1alpha1.RoleReplica {
				t.Errorf("member %s: node %.8s role %s, want a new node ID as a replica", p.Name, vn.Status.NodeID, vn.Status.Role)
			}
			k.ForgottenEverywhere(ctx, t, vc, p.Status.NodeID)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
