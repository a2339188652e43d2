package node

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/operator"
)

// fakeReader is an API server with the given objects, events indexed as the real one
// selects them.
func fakeReader(objs ...client.Object) client.Reader {
	ev := func(f func(*corev1.Event) string) client.IndexerFunc {
		return func(o client.Object) []string { return []string{f(o.(*corev1.Event))} }
	}
	return fake.NewClientBuilder().WithScheme(operator.Scheme()).WithObjects(objs...).
		WithIndex(&corev1.Event{}, "involvedObject.kind", ev(func(e *corev1.Event) string { return e.InvolvedObject.Kind })).
		WithIndex(&corev1.Event{}, "involvedObject.name", ev(func(e *corev1.Event) string { return e.InvolvedObject.Name })).
		WithIndex(&corev1.Event{}, "reason", ev(func(e *corev1.Event) string { return e.Reason })).
		Build()
}

func TestDiagnose(t *testing.T) {
	defaultClass := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard",
		Annotations: map[string]string{defaultClassAnnotation: "true"}}, Provisioner: "x"}
	otherClass := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Provisioner: "x"}
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	pending := func(class *string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
	}
	withPriority := func(name string) *v1alpha1.ValkeyNode {
		return testNode(func(vn *v1alpha1.ValkeyNode) { vn.Spec.Scheduling = &v1alpha1.SchedulingSpec{PriorityClassName: name} })
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "demo-x7k2p", Namespace: "ns"}}
	failed := func(msg string, age time.Duration) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e" + msg[:3], Namespace: "ns"}, Reason: "FailedCreate", Type: corev1.EventTypeWarning,
			InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", Name: sts.Name}, Message: msg,
			LastTimestamp: metav1.NewTime(time.Now().Add(-age))}
	}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "demo-x7k2p", Namespace: "ns"},
		Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure,
			Status: corev1.ConditionTrue, Message: `pods "demo-x7k2p-abc" is forbidden: exceeded quota: pods`}}}}
	for _, tc := range []struct {
		name          string
		objs          []client.Object
		s             *scope
		reason, claim string // PodReady's blocker, StorageReady's blocker
	}{
		{"a named StorageClass that exists", []client.Object{otherClass}, &scope{node: testNode(), pod: &corev1.Pod{}, claim: pending(ptr.To("other"))}, "", ""},
		{"a named StorageClass missing", []client.Object{defaultClass}, &scope{node: testNode(), pod: &corev1.Pod{}, claim: pending(ptr.To("gp3"))}, "", "StorageClass gp3 not found"},
		{"no class named, a default one", []client.Object{defaultClass}, &scope{node: testNode(), pod: &corev1.Pod{}, claim: pending(nil)}, "", ""},
		{"no class named, no default", []client.Object{otherClass}, &scope{node: testNode(), pod: &corev1.Pod{}, claim: pending(nil)}, "", "has no default one"},
		{"a missing PriorityClass", nil, &scope{node: withPriority("high"), statefulSet: sts}, "PriorityClass high not found", ""},
		{"a PriorityClass that exists", []client.Object{high}, &scope{node: withPriority("high"), statefulSet: sts}, "", ""},
		{"the StatefulSet's newest refusal", []client.Object{failed("old refusal", time.Minute), failed("new refusal: violates PodSecurity", time.Second)},
			&scope{node: testNode(), statefulSet: sts}, "the pod cannot be created: new refusal: violates PodSecurity", ""},
		{"the Deployment's replica failure", nil, &scope{node: testNode(), deployment: deploy}, "exceeded quota: pods", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{APIReader: fakeReader(tc.objs...)}
			if err := r.diagnose(context.Background(), tc.s); err != nil {
				t.Fatal(err)
			}
			got := ""
			if tc.s.podBlocker != nil {
				got = tc.s.podBlocker.message
			}
			if (tc.reason == "") != (got == "") || !strings.Contains(got, tc.reason) {
				t.Errorf("pod blocker %q, want %q", got, tc.reason)
			}
			got = ""
			if tc.s.storage.blocker != nil {
				got = tc.s.storage.blocker.message
				if tc.s.storage.blocker.reason != v1alpha1.ReasonStorageClassNotFound {
					t.Errorf("storage reason %s", tc.s.storage.blocker.reason)
				}
			}
			if (tc.claim == "") != (got == "") || !strings.Contains(got, tc.claim) {
				t.Errorf("storage blocker %q, want %q", got, tc.claim)
			}
		})
	}
}
