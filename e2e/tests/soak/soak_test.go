//go:build e2e

package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// kills is how many times each feature kills a primary's server.
const kills = 20

// promotedWithin is how soon the killed primary's shard must have a primary again.
const promotedWithin = 3 * time.Second

func TestKilledOn80StatefulSet(t *testing.T) { soak(t, 8, 0, v1alpha1.WorkloadStatefulSet) }
func TestKilledOn80Deployment(t *testing.T)  { soak(t, 8, 0, v1alpha1.WorkloadDeployment) }
func TestKilledOn80Pod(t *testing.T)         { soak(t, 8, 0, v1alpha1.WorkloadPod) }
func TestKilledOn91StatefulSet(t *testing.T) { soak(t, 9, 1, v1alpha1.WorkloadStatefulSet) }
func TestKilledOn91Deployment(t *testing.T)  { soak(t, 9, 1, v1alpha1.WorkloadDeployment) }
func TestKilledOn91Pod(t *testing.T)         { soak(t, 9, 1, v1alpha1.WorkloadPod) }

// moment is when in a cluster's life a kill comes.
type moment int

const (
	// afterReady: a random moment in the first three seconds after the cluster is Ready.
	afterReady moment = iota
	// afterFailover: right after the previous kill's shard was taken over, the primary of
	// another shard (the config epochs have just changed).
	afterFailover
	// afterSync: as soon as the cluster is Ready again, the primary of the shard whose
	// replica has just finished its first sync (the previous kill's server, back).
	afterSync
)

func (m moment) String() string {
	return [...]string{"after Ready", "after a failover", "after a replica's sync"}[m]
}

// soak kills a primary's server kills times, in turn at each moment, on a 3x1 cluster of
// Valkey major.minor with workload members under a strict writer: every time, the shard
// has a primary again within promotedWithin, and no acknowledged write is lost. It logs
// the distribution of the writers' gaps.
func soak(t *testing.T, major, minor int, workload v1alpha1.WorkloadType) {
	f := framework.NewFeature(suite, fmt.Sprintf("primary killed %d times on %d.%d (%s)", kills, major, minor, workload)).
		Assess("each time its shard has a primary again within 3 s, no acknowledged write lost", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			img, err := k.ValkeyImage(major, minor)
			if err != nil {
				t.Fatal(err)
			}
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			vc.Spec.Image = img.Ref
			vc.Spec.WorkloadType = workload
			if err := k.Client.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			firsts := make([]int, len(vc.Status.Shards))
			for i, s := range vc.Status.Shards {
				rg, _ := valkey.ParseSlotRange(s.Slots[0])
				firsts[i] = rg.Start
			}
			ch := k.StartCheckerWith(ctx, t, vc, checker.Options{RecordGapsOver: 100 * time.Millisecond})
			logs := k.NewServerLogs(ctx, t, vc)
			defer logs.Stop(t)
			type kill struct {
				at       time.Time
				shard    int
				when     moment
				promoted time.Duration
			}
			var done []kill
			shard := 0
			for i := range kills {
				when := moment(i % 3)
				switch when {
				case afterReady:
					k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
					time.Sleep(time.Duration(rand.IntN(3000)) * time.Millisecond)
					shard = (shard + 1) % 3
				case afterFailover:
					shard = (shard + 1) % 3
				case afterSync:
					k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
				}
				logs.Follow(ctx, t)
				p := k.Member(ctx, t, vc, int32(shard), v1alpha1.RolePrimary)
				pod := k.PodOf(ctx, t, vc, p.Name)
				at := time.Now()
				if _, err := framework.SignalContainer(pod, "server", syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				owner := k.WaitOwnerChange(ctx, t, vc, firsts[shard], p.Status.NodeID, 2*time.Minute)
				kl := kill{at: at, shard: shard, when: when, promoted: time.Since(at)}
				done = append(done, kl)
				t.Logf("kill %d (%s) at %s: shard %d's primary %s, served by %.8s after %s", i+1, when, at.Format("15:04:05.000"), shard, p.Name, owner, kl.promoted.Round(10*time.Millisecond))
				if kl.promoted > promotedWithin {
					t.Errorf("kill %d (%s): shard %d had no primary for %s, want at most %s", i+1, when, shard, kl.promoted.Round(10*time.Millisecond), promotedWithin)
				}
			}
			k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			rep := framework.StopChecker(ctx, t, ch, fmt.Sprintf("%d kills", kills), true)

			// Each kill's gap: the longest the writer of its shard went without a write
			// in the gaps that began around it.
			var gaps []time.Duration
			for _, kl := range done {
				var g time.Duration
				for _, gp := range rep.Gaps {
					if gp.Slot == firsts[kl.shard] && gp.Start.Before(kl.at.Add(time.Second)) && gp.Start.Add(gp.Length).After(kl.at) {
						g = max(g, gp.Length)
					}
				}
				gaps = append(gaps, g)
			}
			t.Logf("soak %d.%d %s: %s", major, minor, workload, distribution(gaps))
			var promoted []time.Duration
			for _, kl := range done {
				promoted = append(promoted, kl.promoted)
			}
			t.Logf("soak %d.%d %s: shard served again after %s", major, minor, workload, distribution(promoted))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// distribution is "n=20 min 0.6s p50 0.9s p90 1.2s max 1.4s".
func distribution(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n=0"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	parts := []string{fmt.Sprintf("n=%d", len(s))}
	for _, x := range []struct {
		name string
		d    time.Duration
	}{{"min", s[0]}, {"p50", q(0.5)}, {"p90", q(0.9)}, {"max", s[len(s)-1]}} {
		parts = append(parts, fmt.Sprintf("%s %s", x.name, x.d.Round(10*time.Millisecond)))
	}
	return strings.Join(parts, " ")
}
