//go:build e2e

package node

import (
	"context"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

func TestStatefulSetNode(t *testing.T) {
	const name = "demo-sts"
	f := framework.NewFeature(suite, "statefulset node").
		WithSetup("a StatefulSet node with a claim", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ctx = setUp(ctx, t, cfg)
			fx := fixtureFrom(ctx, t)
			fx.create(ctx, t, fx.newNode(name, v1alpha1.WorkloadStatefulSet, func(vn *v1alpha1.ValkeyNode) {
				vn.Spec.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("256Mi"), ReclaimPolicy: v1alpha1.ReclaimDelete}
			}))
			return ctx
		}).
		Assess("the server runs the rendered config, answers an authenticated PING and is scraped", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			fx := fixtureFrom(ctx, t)
			pod := fx.serverPod(ctx, t, name)
			fx.checkServer(ctx, t, name, pod)
			fx.waitCondition(ctx, t, name, v1alpha1.ConditionStorageReady, metav1.ConditionTrue, v1alpha1.ReasonStorageBound)
			vn := fx.waitCondition(ctx, t, name, v1alpha1.ConditionConfigApplied, metav1.ConditionTrue, v1alpha1.ReasonConfigApplied)
			if vn.Status.Role != v1alpha1.RolePrimary || vn.Status.Version != "8.0.1" || vn.Status.Revision != 1 {
				t.Errorf("status = %+v", vn.Status)
			}
			return ctx
		}).
		Assess("a key written survives the deletion of the pod", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			fx := fixtureFrom(ctx, t)
			pod := fx.serverPod(ctx, t, name)
			op := fx.valkey(t, pod, v1alpha1.UserOperator)
			claimAllSlots(ctx, t, op)
			writeKey(ctx, t, op, "survivor", pod.Name)
			must(t, fx.c.Delete(ctx, pod), "delete pod")
			fresh := fx.waitReplaced(ctx, t, name, pod)
			err := framework.Until(ctx, statusTimeout, "the key on the new pod", func(ctx context.Context) (bool, string, error) {
				got, err := readKey(ctx, fx.valkey(t, fresh, v1alpha1.UserOperator), "survivor")
				return got == pod.Name, "GET survivor = " + got, err
			})
			must(t, err, "read the key back")
			return ctx
		}).
		Assess("a live config change is applied without a restart", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			fx := fixtureFrom(ctx, t)
			liveChange(ctx, t, fx, name)
			return ctx
		}).
		Assess("a refused value is reported and not applied", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			fx := fixtureFrom(ctx, t)
			refusedChange(ctx, t, fx, name)
			return ctx
		}).
		Assess("a non-live change waits for spec.revision, then the pod is replaced", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			fx := fixtureFrom(ctx, t)
			gatedChange(ctx, t, fx, name)
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}

// liveChange raises maxmemory: the server takes it while the same process runs.
func liveChange(ctx context.Context, t *testing.T, fx *fixture, name string) {
	t.Helper()
	pod := fx.serverPod(ctx, t, name)
	op := fx.valkey(t, pod, v1alpha1.UserOperator)
	runID := infoField(ctx, t, op, "server", "run_id")
	uptime, _ := strconv.Atoi(infoField(ctx, t, op, "server", "uptime_in_seconds"))
	fx.update(ctx, t, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Config["maxmemory"] = "128mb" })
	err := framework.Until(ctx, statusTimeout, "maxmemory 128mb on the server", func(ctx context.Context) (bool, string, error) {
		got := configGet(ctx, t, op, "maxmemory")
		return got == "134217728", "maxmemory " + got, nil
	})
	must(t, err, "live change")
	fx.waitCondition(ctx, t, name, v1alpha1.ConditionConfigApplied, metav1.ConditionTrue, v1alpha1.ReasonConfigApplied)
	var now corev1.Pod
	must(t, fx.c.Get(ctx, client.ObjectKeyFromObject(pod), &now), "get pod")
	later, _ := strconv.Atoi(infoField(ctx, t, op, "server", "uptime_in_seconds"))
	if now.UID != pod.UID || infoField(ctx, t, op, "server", "run_id") != runID || later < uptime {
		t.Errorf("the server restarted: pod UID %s -> %s, uptime %d -> %d", pod.UID, now.UID, uptime, later)
	}
	var cm corev1.ConfigMap
	must(t, fx.c.Get(ctx, client.ObjectKey{Namespace: fx.ns, Name: name}, &cm), "get ConfigMap")
	if !strings.Contains(cm.Data["valkey.conf"], "maxmemory 128mb") {
		t.Error("the ConfigMap does not record the applied value")
	}
}

// refusedChange sets an invalid policy: reported with the server's words, not applied.
func refusedChange(ctx context.Context, t *testing.T, fx *fixture, name string) {
	t.Helper()
	pod := fx.serverPod(ctx, t, name)
	op := fx.valkey(t, pod, v1alpha1.UserOperator)
	before := configGet(ctx, t, op, "maxmemory-policy")
	fx.update(ctx, t, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Config["maxmemory-policy"] = "bogus" })
	fx.waitCondition(ctx, t, name, v1alpha1.ConditionConfigApplied, metav1.ConditionFalse, v1alpha1.ReasonConfigRefused, "maxmemory-policy", "must be one of")
	if got := configGet(ctx, t, op, "maxmemory-policy"); got != before {
		t.Errorf("maxmemory-policy = %s, want %s", got, before)
	}
	var cm corev1.ConfigMap
	must(t, fx.c.Get(ctx, client.ObjectKey{Namespace: fx.ns, Name: name}, &cm), "get ConfigMap")
	if strings.Contains(cm.Data["valkey.conf"], "bogus") {
		t.Error("the refused value reached the ConfigMap")
	}
	fx.update(ctx, t, name, func(vn *v1alpha1.ValkeyNode) { delete(vn.Spec.Config, "maxmemory-policy") })
	fx.waitCondition(ctx, t, name, v1alpha1.ConditionConfigApplied, metav1.ConditionTrue, v1alpha1.ReasonConfigApplied)
}

// gatedChange turns appendonly on: nothing changes until the revision is raised, then
// a new pod runs with it.
func gatedChange(ctx context.Context, t *testing.T, fx *fixture, name string) {
	t.Helper()
	pod := fx.serverPod(ctx, t, name)
	op := fx.valkey(t, pod, v1alpha1.UserOperator)
	fx.update(ctx, t, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Config["appendonly"] = "yes" })
	fx.waitCondition(ctx, t, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonUpdatePending, "config appendonly", "raise spec.revision")
	var now corev1.Pod
	must(t, fx.c.Get(ctx, client.ObjectKeyFromObject(pod), &now), "get pod")
	if now.UID != pod.UID || configGet(ctx, t, op, "appendonly") != "no" {
		t.Fatal("the non-live change reached the server without a new revision")
	}
	fx.update(ctx, t, name, func(vn *v1alpha1.ValkeyNode) { vn.Spec.Revision = 2 })
	fresh := fx.waitReplaced(ctx, t, name, pod)
	if got := configGet(ctx, t, fx.valkey(t, fresh, v1alpha1.UserOperator), "appendonly"); got != "yes" {
		t.Errorf("appendonly on the new pod = %s", got)
	}
	vn := fx.waitCondition(ctx, t, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonPodRunning)
	if vn.Status.Revision != 2 {
		t.Errorf("status.revision = %d, want 2", vn.Status.Revision)
	}
}
