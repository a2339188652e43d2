package acl

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func TestDecideHold(t *testing.T) {
	cluster := func(paused bool, rotate string) *v1alpha1.ValkeyCluster {
		vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		if rotate != "" {
			vc.Annotations[v1alpha1.AnnotationRotateSystemPasswords] = rotate
		}
		st := metav1.ConditionFalse
		if paused {
			st = metav1.ConditionTrue
		}
		vc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionPaused, Status: st}}
		return vc
	}
	published := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{annotationRevision: "old"}}}
	for _, tc := range []struct {
		name           string
		vc             *v1alpha1.ValkeyCluster
		published      *corev1.Secret
		rendered       string
		rot            Rotation
		file, rotation bool
	}{
		{"not paused: nothing held", cluster(false, "t1"), published, "new", Rotation{}, false, false},
		{"paused, same file", cluster(true, ""), published, "old", Rotation{}, false, false},
		{"paused, changed file", cluster(true, ""), published, "new", Rotation{}, true, false},
		{"paused, first file: never held", cluster(true, ""), nil, "new", Rotation{}, false, false},
		{"paused, rotation requested", cluster(true, "t1"), published, "old", Rotation{}, false, true},
		{"paused, rotation served already", cluster(true, "t1"), published, "old", Rotation{Completed: "t1"}, false, false},
		{"paused, rotation under way", cluster(true, "t1"), published, "new", Rotation{Phase: PhaseAdding, Token: "t1"}, true, true},
	} {
		h := decideHold(tc.vc, tc.published, File{Revision: tc.rendered}, tc.rot)
		if h.file != tc.file || h.rotation != tc.rotation {
			t.Errorf("%s: hold file=%v rotation=%v, want %v %v", tc.name, h.file, h.rotation, tc.file, tc.rotation)
		}
	}
}

func TestHeldCondition(t *testing.T) {
	c := heldCondition(hold{file: true, rendered: File{Revision: "new", Users: make([]User, 3)}, rotation: true},
		File{Revision: "old"}, Rotation{Phase: PhasePropagating}, 4)
	want := "the cluster is paused: aclfile revision new with 3 users is held, and the rotation of the system users' passwords stays in phase Propagating " +
		"until it is resumed; members keep aclfile revision old, and users changed on a server are still put back"
	if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonPaused || c.Message != want || c.ObservedGeneration != 4 {
		t.Errorf("heldCondition = %s %s %q (gen %d), want False Paused %q", c.Status, c.Reason, c.Message, c.ObservedGeneration, want)
	}
}
