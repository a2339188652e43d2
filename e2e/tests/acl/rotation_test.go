//go:build e2e

package acl

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// afterRotation is how long the samplers keep watching once the rotation completed: a
// client still on an old password fails from the retirement of the old passwords on
// (an exporter scrapes every few seconds, a replica reconnects at once).
const afterRotation = 15 * time.Second

// TestSystemPasswordRotation rotates the operator's own users' passwords while the
// write-checker writes, and watches the replication links and the exporters throughout.
func TestSystemPasswordRotation(t *testing.T) {
	var fx *fixture
	f := framework.NewFeature(suite, "system password rotation").
		Assess("under load no link breaks, the exporter scrapes, no write fails; then only the new passwords work", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			fx = newFixture(ctx, t)
			old := systemPasswords(ctx, t, fx)
			before := fx.k.PodsState(ctx, t, fx.vc)
			members := fx.k.Members(ctx, t, fx.vc)
			syncsBefore := syncCounters(ctx, t, members)
			links := watchLinks(ctx, t, members)
			scrapes := watchExporters(members)
			ch := fx.k.StartChecker(ctx, t, fx.vc)
			time.Sleep(time.Second) // some writes before the change

			token := "e2e-" + framework.RandomSuffix(8)
			start := time.Now()
			patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationRotateSystemPasswords, token))
			if err := fx.k.Client.Patch(ctx, fx.vc, patch); err != nil {
				t.Fatal(err)
			}
			waitRotation(ctx, t, fx, token, start)
			t.Logf("rotation completed %s after the request (--secret-propagation-delay=%s)", time.Since(start).Round(100*time.Millisecond), propagationDelay)
			time.Sleep(afterRotation) // an observation window, not a wait for a state

			lr, sr := links.Stop(), scrapes.Stop()
			r := framework.StopChecker(ctx, t, ch, "", false)
			t.Logf("%s", lr)
			t.Logf("%s", sr)
			if r.Errors > 0 || r.Lost > 0 {
				t.Errorf("%d writes failed and %d acknowledged writes were lost during the rotation", r.Errors, r.Lost)
			}
			if lr.Failures > 0 {
				t.Errorf("a replication link was seen down during the rotation (%d of %d samples)", lr.Failures, lr.Samples)
			}
			if sr.Failures > 0 {
				t.Errorf("an exporter did not report redis_up 1 during the rotation (%d of %d samples)", sr.Failures, sr.Samples)
			}
			syncsAfter := syncCounters(ctx, t, members)
			for a, n := range syncsBefore {
				if syncsAfter[a] != n {
					t.Errorf("primary %s served new replica syncs during the rotation (%s -> %s): a link was re-established", a, n, syncsAfter[a])
				}
			}
			logUnhealthy(ctx, t, fx)

			now := systemPasswords(ctx, t, fx)
			registerSystemPasswords(ctx, t, fx)
			for u, pw := range old {
				if now[u] == pw {
					t.Errorf("the password of %s did not change", u)
				}
			}
			everyMember(ctx, t, fx, 10*time.Second, "the old system passwords refused and the new ones accepted",
				func(ctx context.Context, m v1alpha1.ValkeyNode) (bool, string, error) {
					var want []login
					for u := range old {
						want = append(want, login{u, old[u], false}, login{u, now[u], true})
					}
					return logins(ctx, addr(m), want)
				})
			for _, c := range fx.k.PodsState(ctx, t, fx.vc).Changes(before) {
				t.Error(c)
			}
			fx.refresh(ctx, t)
			if c := meta.FindStatusCondition(fx.vc.Status.Conditions, v1alpha1.ConditionACLReady); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonACLRendered {
				t.Errorf("after the rotation ACLReady = %+v, want True %s", c, v1alpha1.ReasonACLRendered)
			}
			return ctx
		}).
		Assess("no password in the operator's logs, the events or the statuses", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if fx == nil {
				t.Fatal("the cluster of the feature was not created")
			}
			noPasswordAnywhere(ctx, t, fx)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// waitRotation waits until the cluster's status.acl.rotation records the rotation token
// as completed, logging each phase as it is entered and registering each password the
// system users Secret holds on the way.
func waitRotation(ctx context.Context, t *testing.T, fx *fixture, token string, start time.Time) {
	t.Helper()
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: fx.vc.Namespace, Name: fx.vc.Name}}
	key := types.NamespacedName{Namespace: fx.vc.Namespace, Name: v1alpha1.SystemUsersSecretName(fx.vc.Name)}
	phase, seen := "(none)", ""
	err := framework.WaitFor(ctx, fx.k.Client, vc, 5*time.Minute, "record rotation "+token+" as completed in status.acl.rotation", func(vc *v1alpha1.ValkeyCluster) (bool, string) {
		var rot v1alpha1.PasswordRotationStatus
		if vc.Status.ACL != nil && vc.Status.ACL.Rotation != nil {
			rot = *vc.Status.ACL.Rotation
		}
		p := string(rot.Phase)
		if p == "" {
			p = "(none)"
		}
		if p != phase {
			t.Logf("+%s rotation phase %s", time.Since(start).Round(100*time.Millisecond), p)
			phase = p
		}
		s := &corev1.Secret{}
		if err := fx.k.Client.Get(ctx, key, s); err == nil && s.ResourceVersion != seen {
			seen = s.ResourceVersion
			for k, v := range s.Data {
				if strings.HasPrefix(k, "_") {
					secrets.add(s.Namespace+"/"+s.Name+"/"+k+"@"+s.ResourceVersion, string(v))
				}
			}
		}
		done := rot.Phase == v1alpha1.RotationIdle && rot.CompletedRequest == token
		return done, "phase " + p + ", completed " + rot.CompletedRequest
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := vc.Annotations[v1alpha1.AnnotationRotateSystemPasswords]; got != token {
		t.Errorf("the rotation annotation is %q after the rotation, want the %q the test set: the operator wrote it", got, token)
	}
}

// watchLinks samples INFO replication on every replica every 250 ms: a sample fails
// when a replica's link to its primary is not up. It connects as the test user, whose
// password the rotation does not touch.
func watchLinks(ctx context.Context, t *testing.T, members []v1alpha1.ValkeyNode) *framework.Sampler {
	t.Helper()
	conns := map[string]*valkey.Client{}
	for _, m := range members {
		if m.Status.Role != v1alpha1.RoleReplica {
			continue
		}
		c, err := inspect(ctx, addr(m))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		conns[m.Name] = c
	}
	if len(conns) != 3 {
		t.Fatalf("%d replicas, want 3", len(conns))
	}
	return framework.StartSampler("replication links of the 3 replicas (INFO replication every 250 ms)", 250*time.Millisecond, func(ctx context.Context) error {
		var errs []error
		for name, c := range conns {
			r, err := c.ReplicationInfo(ctx)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			case r.Role != valkey.RoleReplica || !r.LinkUp:
				errs = append(errs, fmt.Errorf("%s: role %s, link up %v (down since %d s)", name, r.Role, r.LinkUp, r.LinkDownSince))
			}
		}
		return errors.Join(errs...)
	})
}

// watchExporters scrapes every pod's exporter every 2 s: a sample fails when one does
// not report redis_up 1.
func watchExporters(members []v1alpha1.ValkeyNode) *framework.Sampler {
	return framework.StartSampler("exporters of the 6 pods (redis_up every 2 s)", 2*time.Second, func(ctx context.Context) error {
		var mu sync.Mutex
		var errs []string
		var wg sync.WaitGroup
		for _, m := range members {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := framework.ExporterMetric(ctx, m.Status.PodIP, "redis_up", nil)
				if err == nil && v == 1 {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s: %v", m.Name, err))
				} else {
					errs = append(errs, fmt.Sprintf("%s: redis_up %v", m.Name, v))
				}
			}()
		}
		wg.Wait()
		if len(errs) == 0 {
			return nil
		}
		sort.Strings(errs)
		return errors.New(strings.Join(errs, "; "))
	})
}

// syncCounters reads, on every primary, how many replica syncs it served (full and
// partial, INFO stats): a replica whose link broke and came back adds one.
func syncCounters(ctx context.Context, t *testing.T, members []v1alpha1.ValkeyNode) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range members {
		if m.Status.Role != v1alpha1.RolePrimary {
			continue
		}
		c, err := inspect(ctx, addr(m))
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx, "stats")
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sections["stats"]
		out[m.Name] = "sync_full=" + st["sync_full"] + " sync_partial_ok=" + st["sync_partial_ok"] + " sync_partial_err=" + st["sync_partial_err"]
	}
	return out
}

// logUnhealthy logs the probe failures the kubelet reported in the namespace.
func logUnhealthy(ctx context.Context, t *testing.T, fx *fixture) {
	t.Helper()
	var list corev1.EventList
	if err := fx.k.Client.List(ctx, &list, client.InNamespace(fx.vc.Namespace)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Reason == "Unhealthy" {
			n += int(max(e.Count, 1))
			t.Logf("kubelet: %s %s x%d: %s", e.InvolvedObject.Name, e.Reason, max(e.Count, 1), e.Message)
		}
	}
	t.Logf("%s probe failures reported by the kubelet", strconv.Itoa(n))
}
