package cluster

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// TestStuckCause: the cluster names what keeps its members from starting, from their
// own PodReady and StorageReady conditions: the most common cause, how many members
// share it, and one of their messages.
func TestStuckCause(t *testing.T) {
	cond := func(typ, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	mk := func(name string, cs ...metav1.Condition) *member {
		m := &member{node: &v1alpha1.ValkeyNode{}}
		m.node.Name = name
		m.node.Status.Conditions = cs
		return m
	}
	pull := cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonImagePullBackOff, `pod a-0 cannot pull image 10.99.0.1:1/nope:1 of container server: Back-off pulling image "10.99.0.1:1/nope:1"`)
	for _, tc := range []struct {
		name    string
		members []*member
		reason  string
		msg     string
	}{
		{"nothing blocked", []*member{mk("a", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonPodPending, "starting"))}, "", ""},
		{"six members cannot pull the image", []*member{mk("a", pull), mk("b", pull), mk("c", pull), mk("d", pull), mk("e", pull), mk("f", pull)},
			v1alpha1.ReasonImagePullBackOff, "ImagePullBackOff: 6 members cannot run (a, b, c, d, e, f): pod a-0 cannot pull image 10.99.0.1:1/nope:1"},
		{"the missing StorageClass, behind the pods it keeps Pending", []*member{mk("a",
			cond(v1alpha1.ConditionStorageReady, v1alpha1.ReasonStorageClassNotFound, "StorageClass gp3 not found"),
			cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonPodUnschedulable, "pod has unbound immediate PersistentVolumeClaims"))},
			v1alpha1.ReasonStorageClassNotFound, "StorageClassNotFound: 1 member cannot run (a): StorageClass gp3 not found"},
		{"the cause most members share", []*member{
			mk("a", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonCrashLoop, "Bad directive")),
			mk("b", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonPriorityClassNotFound, "PriorityClass high not found")),
			mk("c", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonPriorityClassNotFound, "PriorityClass high not found"))},
			v1alpha1.ReasonPriorityClassNotFound, "PriorityClassNotFound: 2 members cannot run (b, c): PriorityClass high not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg, ok := stuckCause(tc.members)
			if ok != (tc.reason != "") || reason != tc.reason || !strings.HasPrefix(msg, tc.msg) {
				t.Errorf("stuckCause = %v %q %q, want %q %q", ok, reason, msg, tc.reason, tc.msg)
			}
		})
	}
}
