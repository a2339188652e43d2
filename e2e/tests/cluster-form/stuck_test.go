//go:build e2e

package clusterform

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// refusedImage is an image on a local address where nothing listens: the pull fails at
// once, and no name lookup leaves the machine.
const refusedImage = "127.0.0.1:1/valkey/valkey:8.0.1"

// stuckCase is a cluster that cannot start, and what its status must say.
type stuckCase struct {
	name   string
	mutate func(*v1alpha1.ValkeyClusterSpec)
	reason string
	// says is a part of the Ready message that names the cause.
	says string
}

var stuckCases = []stuckCase{
	{name: "pull", mutate: func(s *v1alpha1.ValkeyClusterSpec) { s.Image = refusedImage },
		reason: v1alpha1.ReasonImagePullBackOff, says: refusedImage},
	{name: "priority", mutate: func(s *v1alpha1.ValkeyClusterSpec) {
		s.Scheduling = &v1alpha1.SchedulingSpec{PriorityClassName: "e2e-missing-priority"}
	}, reason: v1alpha1.ReasonPriorityClassNotFound, says: "e2e-missing-priority"},
	{name: "storage", mutate: func(s *v1alpha1.ValkeyClusterSpec) {
		s.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("64Mi"), StorageClassName: ptr.To("e2e-missing-class")}
	}, reason: v1alpha1.ReasonStorageClassNotFound, says: "e2e-missing-class"},
	{name: "crash", mutate: func(s *v1alpha1.ValkeyClusterSpec) {
		// A key of its own syntax, whose value validation leaves to the server: Valkey
		// refuses the event class '2' and exits at start. The cause quotes the server's
		// line with the value redacted, as every configuration line it quotes.
		s.Config = map[string]string{"notify-keyspace-events": "e2e-crash"}
	}, reason: v1alpha1.ReasonCrashLoop, says: "'notify-keyspace-events <redacted>': Invalid event class character"},
}

// TestStuckCauses creates clusters that cannot start, one per cause a user meets in the
// first weeks, and checks what they read on the ValkeyCluster alone: Ready=False with the
// cause as reason, a message with the cause and how many members have it, state Failed,
// and one Warning event of that reason. Fixing the spec of one of them forms it.
func TestStuckCauses(t *testing.T) {
	f := framework.NewFeature(suite, "a stuck cluster names its cause").
		Assess("Ready and the state say the cause and how many members have it", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			clusters := map[string]*v1alpha1.ValkeyCluster{}
			for _, c := range stuckCases {
				vc := framework.NewValkeyCluster(framework.Namespace(ctx), "stuck-"+c.name, 1, 1)
				c.mutate(&vc.Spec)
				if err := k.Client.Create(ctx, vc); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				clusters[c.name] = vc
			}
			for _, c := range stuckCases {
				vc := clusters[c.name]
				start := time.Now()
				err := framework.WaitFor(ctx, k.Client, vc, 3*time.Minute, "name its cause "+c.reason, func(vc *v1alpha1.ValkeyCluster) (bool, string) {
					ready := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionReady)
					if ready == nil {
						return false, "no Ready condition"
					}
					ok := ready.Status == metav1.ConditionFalse && ready.Reason == c.reason &&
						strings.Contains(ready.Message, "2 members cannot run") && strings.Contains(ready.Message, c.says) &&
						vc.Status.State == v1alpha1.StateFailed
					return ok, fmt.Sprintf("state %s, Ready=%s %s: %s", vc.Status.State, ready.Status, ready.Reason, ready.Message)
				})
				if err != nil {
					t.Errorf("%s: %v", c.name, err)
					continue
				}
				ready := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionReady)
				t.Logf("%s: after %s, state %s, Ready=False %s: %s", c.name, time.Since(start).Round(100*time.Millisecond),
					vc.Status.State, ready.Reason, ready.Message)
			}
			// One Warning event per cluster and cause, from the cluster-controller. The
			// cause is told once its members have it for a few seconds (the members'
			// conditions come first), so wait until each cluster has its event.
			eventsOf := func() (map[string]int, []eventsv1.Event) {
				evs := k.Events(ctx, t, framework.Namespace(ctx), v1alpha1.ReasonImagePullBackOff, v1alpha1.ReasonPriorityClassNotFound,
					v1alpha1.ReasonStorageClassNotFound, v1alpha1.ReasonCrashLoop)
				n := map[string]int{}
				for _, c := range stuckCases {
					for _, e := range evs {
						if e.Regarding.Kind == "ValkeyCluster" && e.Regarding.Name == clusters[c.name].Name && e.Reason == c.reason {
							n[c.name]++
						}
					}
				}
				return n, evs
			}
			n, evs := eventsOf()
			for deadline := time.Now().Add(time.Minute); len(n) < len(stuckCases) && time.Now().Before(deadline); {
				time.Sleep(time.Second)
				n, evs = eventsOf()
			}
			for _, c := range stuckCases {
				if n[c.name] != 1 {
					t.Errorf("%s: %d Warning events %s on the cluster, want 1:\n%s", c.name, n[c.name], c.reason, framework.DescribeEvents(evs))
				}
			}

			// Fixing the spec is enough: no member has to be deleted by hand.
			vc := clusters["priority"]
			k.UpdateSpec(ctx, t, vc, func(s *v1alpha1.ValkeyClusterSpec) { s.Scheduling = nil })
			d := k.WaitClusterReady(ctx, t, vc, 3*time.Minute)
			t.Logf("priority: Ready %s after the priority class was removed from the spec", d.Round(100*time.Millisecond))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
