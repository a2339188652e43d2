//go:build e2e

package clients

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// operation is one change the clients write through; it returns once the cluster is
// Ready with the change applied.
type operation struct {
	name string
	do   func(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster)
}

var operations = []operation{
	{"roll (resources changed)", func(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) {
		k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) {
			s.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("96Mi"), corev1.ResourceCPU: resource.MustParse("20m")}}
		})
		k.WaitClusterReady(ctx, t, vc, 10*time.Minute)
	}},
	{"primary's pod deleted", func(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) {
		p := k.Member(ctx, t, vc, 0, v1alpha1.RolePrimary)
		start := time.Now()
		if err := k.Client.Delete(ctx, k.PodOf(ctx, t, vc, p.Name)); err != nil {
			t.Fatal(err)
		}
		k.WaitNotReadyThenReady(ctx, t, vc, start, 4*time.Minute)
	}},
	{"primary's server killed", func(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) {
		p := k.Member(ctx, t, vc, 1, v1alpha1.RolePrimary)
		start := time.Now()
		if _, err := framework.SignalContainer(k.PodOf(ctx, t, vc, p.Name), "server", syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		k.WaitNotReadyThenReady(ctx, t, vc, start, 4*time.Minute)
	}},
	{"scale out 3 -> 4 shards", func(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) {
		k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = 4 })
		k.WaitClusterReady(ctx, t, vc, 5*time.Minute)
	}},
	{"scale in 4 -> 3 shards", func(ctx context.Context, t *testing.T, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) {
		k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = 3 })
		k.WaitClusterReady(ctx, t, vc, 5*time.Minute)
	}},
}

// TestClientMatrix runs every client through every operation on one 3x1 cluster. A
// crash may lose writes the primary acknowledged and had not sent to its replica yet;
// the planned operations must lose none, and none did on the crash either when this
// suite was written (the table in docs/clients.md), so the suite fails on any loss.
func TestClientMatrix(t *testing.T) {
	f := framework.NewFeature(suite, "the client matrix").
		Assess("every client keeps every acknowledged write through every operation", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			vc.Spec.PrimaryPlacement = &v1alpha1.PrimaryPlacementSpec{Policy: v1alpha1.PrimaryPlacementNone}
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)

			var matrix framework.ClientMatrix
			for i, op := range operations {
				run := k.StartClients(ctx, t, vc, fmt.Sprintf("op%d", i))
				ch := k.StartChecker(ctx, t, vc)
				time.Sleep(2 * time.Second)
				start := time.Now()
				op.do(ctx, t, k, vc)
				t.Logf("%s: Ready %s after it began", op.name, time.Since(start).Round(100*time.Millisecond))
				time.Sleep(2 * time.Second)
				reports := run.Stop(k.MemberAddrs(ctx, t, vc))
				reports = append(reports, framework.CheckerReport(framework.StopChecker(ctx, t, ch, op.name, false)))
				for _, r := range reports {
					t.Logf("%s: %s", op.name, r)
					switch {
					case r.Exit != "":
						t.Errorf("%s: %s", op.name, r)
					case r.Lost > 0:
						t.Errorf("%s: %s lost %d acknowledged writes: %v", op.name, r.Client, r.Lost, r.LostKeys)
					case r.Uncaught() > 0:
						t.Errorf("%s: %s raised %d errors past the writer's handlers: %v", op.name, r.Client, r.Uncaught(), r.TopErrors(3))
					}
				}
				matrix.Add(op.name, reports)
			}
			md := matrix.Markdown()
			t.Logf("client matrix:\n%s", md)
			out := filepath.Join(k.Paths.CacheDir, "e2e", "client-matrix.md")
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err == nil {
				_ = os.WriteFile(out, []byte(md), 0o644)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
