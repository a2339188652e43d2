//go:build bench

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
)

// summary is the report of the run, printed once the suite is done.
var summary string

// chaosRun is the state shared by the planned operations and the fault injector.
type chaosRun struct {
	k     *framework.Cluster
	key   client.ObjectKey
	start time.Time

	mu      sync.Mutex
	rng     *rand.Rand
	faults  []perf.Fault
	skipped int
	ops     []*plannedOp
}

// plannedOp is a spec change the run makes, and when it was applied and done.
type plannedOp struct {
	name    string
	mutate  func(*v1alpha1.ValkeyCluster)
	applied time.Time
	done    time.Time
	err     error
}

func TestChaos(t *testing.T) {
	f := framework.NewFeature(suite, "faults during scale and roll").
		Assess("the cluster converges to its spec", runChaos).
		Feature()
	testenv.Test(t, f)
}

// runChaos creates the cluster, runs the planned operations and the faults for the
// window, then waits for convergence and reports.
func runChaos(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
	k := framework.ClusterFrom(ctx, t)
	from, to := image(t, k, 8, 0), image(t, k, 9, 1)
	vc := framework.NewValkeyCluster(framework.Namespace(ctx), "chaos", 3, 1)
	vc.Spec.Image = from.Ref
	if err := k.Client.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	if _, tl, err := perf.WaitReady(ctx, k.Client, vc, time.Now(), 3*time.Minute, false); err != nil {
		t.Fatalf("the cluster did not become Ready: %v; %s", err, tl)
	}
	ch, err := checker.Start(ctx, checker.Options{Addrs: k.MemberAddrs(ctx, t, vc), Username: framework.TestUser, Password: "any", RecordGapsOver: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sampler := perf.StartOperatorSampler(context.Background(), k.Client, framework.OperatorNamespace, time.Second)
	s := &chaosRun{k: k, key: client.ObjectKeyFromObject(vc), rng: rand.New(rand.NewPCG(cfg.seed, 0)), ops: plan(to.Ref)}
	t.Logf("chaos: seed %d, window %s, at most %d faults, %s -> %s", cfg.seed, cfg.duration, cfg.maxFaults, from.Version, to.Version)
	s.start = time.Now()
	s.window(ctx, t)
	windowEnd := time.Now()
	converged, took, tl, detail := s.converge(ctx)
	r, readErr := ch.Stop(ctx)
	usage, _ := sampler.Stop(ctx)
	summary = s.render(r, readErr, converged, took, tl, detail, usage, windowEnd)
	t.Log("\n" + summary)
	if !converged {
		t.Errorf("the cluster did not converge within %s after the fault window: %s", cfg.converge, detail)
	}
	for _, op := range s.ops {
		if op.err != nil {
			t.Errorf("%s was not applied: %v", op.name, op.err)
		}
	}
	if _, err := perf.DeleteCluster(ctx, k.Client, vc, 3*time.Minute); err != nil {
		t.Error(err)
	}
	return ctx
}

// plan is the planned operations: scale out, scale in, roll to the image to.
func plan(to string) []*plannedOp {
	return []*plannedOp{
		{name: "scale 3 -> 4 shards", mutate: func(vc *v1alpha1.ValkeyCluster) { vc.Spec.Shards = 4 }},
		{name: "scale 4 -> 3 shards", mutate: func(vc *v1alpha1.ValkeyCluster) { vc.Spec.Shards = 3 }},
		{name: "roll to " + to, mutate: func(vc *v1alpha1.ValkeyCluster) { vc.Spec.Image = to }},
	}
}

// window runs the planned operations and the faults until the window ends, then
// applies the operations that had not started.
func (s *chaosRun) window(ctx context.Context, t *testing.T) {
	wctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.runPlanned(wctx, t)
	}()
	go func() {
		defer wg.Done()
		s.inject(wctx, t)
	}()
	wg.Wait()
	for _, op := range s.ops {
		if op.applied.IsZero() {
			s.apply(ctx, t, op)
		}
	}
}

// runPlanned applies each operation a few seconds after the previous one is done.
func (s *chaosRun) runPlanned(ctx context.Context, t *testing.T) {
	for _, op := range s.ops {
		if sleep(ctx, s.between(3*time.Second, 10*time.Second)) != nil {
			return
		}
		if !s.apply(ctx, t, op) {
			return
		}
		vc := &v1alpha1.ValkeyCluster{}
		vc.Name, vc.Namespace = s.key.Name, s.key.Namespace
		if _, _, err := perf.WaitReady(ctx, s.k.Client, vc, time.Now(), cfg.duration, false); err != nil {
			return
		}
		op.done = time.Now()
		t.Logf("chaos: +%s %s done", s.since(op.done), op.name)
	}
}

// apply makes one planned change; it reports false when ctx ended first.
func (s *chaosRun) apply(ctx context.Context, t *testing.T, op *plannedOp) bool {
	vc := &v1alpha1.ValkeyCluster{}
	vc.Name, vc.Namespace = s.key.Name, s.key.Namespace
	at := time.Now()
	err := perf.UpdateCluster(ctx, s.k.Client, vc, op.mutate)
	if err != nil && ctx.Err() != nil {
		return false
	}
	op.applied, op.err = at, err
	t.Logf("chaos: +%s %s applied (%v)", s.since(at), op.name, err)
	return err == nil
}

// converge waits for perf.Converged after the window.
func (s *chaosRun) converge(ctx context.Context) (bool, time.Duration, perf.Timeline, string) {
	vc := &v1alpha1.ValkeyCluster{}
	vc.Name, vc.Namespace = s.key.Name, s.key.Namespace
	detail := ""
	took, tl, err := perf.Poll(ctx, time.Now(), cfg.converge, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		ok, d, err := perf.Converged(ctx, s.k.Client, vc)
		detail = d
		return ok, perf.ConditionState(vc), err
	})
	return err == nil, took, tl, detail
}

// between returns a random duration in [lo, hi).
func (s *chaosRun) between(lo, hi time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

// since is the time from the start of the window, rounded.
func (s *chaosRun) since(at time.Time) time.Duration {
	return at.Sub(s.start).Round(100 * time.Millisecond)
}

// image returns the manifest's Valkey image of a version.
func image(t *testing.T, k *framework.Cluster, major, minor int) imageRef {
	t.Helper()
	img, err := k.ValkeyImage(major, minor)
	if err != nil {
		t.Fatal(err)
	}
	return imageRef{Ref: img.Ref, Version: img.Version}
}

type imageRef struct{ Ref, Version string }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// describe formats a fault for logs.
func describe(f perf.Fault) string {
	return fmt.Sprintf("%s %s %s", f.Kind, f.Target, f.Note)
}
