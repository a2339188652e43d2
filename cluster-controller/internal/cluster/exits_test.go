package cluster

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

func TestExits(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	key := types.NamespacedName{Namespace: "ns", Name: "vk"}
	member := func(id string, down bool, reason string) *v1alpha1.ValkeyNode {
		vn := &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vk-" + id}}
		vn.Spec.ClusterName, vn.Status.NodeID = "vk", id
		c := conditions.New(v1alpha1.ConditionServerDown, down, reason, "the server of pod vk-"+id+" no longer listens", 1)
		c.LastTransitionTime = metav1.NewTime(t0.Add(-time.Second))
		vn.Status.Conditions = []metav1.Condition{c}
		return vn
	}
	none := func(string) bool { return false }

	var x exits
	x.note(member("A", true, v1alpha1.ReasonContainerExited), t0)
	x.note(member("B", false, v1alpha1.ReasonServing), t0)
	x.note(member("C", true, "SomethingElse"), t0)
	got := x.get(key, t0.Add(time.Second), none)
	if len(got) != 1 || got["A"].Since != t0.Add(-time.Second) || got["A"].Why == "" {
		t.Fatalf("exits after reports of A down, B serving, C other: %+v; want A's only", got)
	}
	if other := x.get(types.NamespacedName{Namespace: "ns", Name: "other"}, t0, none); len(other) != 0 {
		t.Errorf("another cluster's exits: %+v", other)
	}
	// A answers again with its ID: forgotten for good.
	if got := x.get(key, t0.Add(time.Second), func(id string) bool { return id == "A" }); len(got) != 0 {
		t.Errorf("exits while A answers: %+v", got)
	}
	if got := x.get(key, t0.Add(time.Second), none); len(got) != 0 {
		t.Errorf("A's exit came back after A answered: %+v", got)
	}
	// An exit not reported again is forgotten after exitTTL.
	x.note(member("A", true, v1alpha1.ReasonContainerExited), t0)
	if got := x.get(key, t0.Add(exitTTL+time.Second), none); len(got) != 0 {
		t.Errorf("exits after exitTTL: %+v", got)
	}
	// One cluster's members make it remember at most maxExitsPerCluster, the newest.
	for i := range maxExitsPerCluster + 10 {
		x.note(member(fmt.Sprintf("N%03d", i), true, v1alpha1.ReasonContainerExited), t0.Add(time.Duration(i)*time.Millisecond))
	}
	got = x.get(key, t0.Add(time.Second), none)
	if _, oldest := got["N000"]; len(got) != maxExitsPerCluster || oldest {
		t.Errorf("%d exits remembered (N000 among them: %t), want the newest %d", len(got), oldest, maxExitsPerCluster)
	}
	x.forget(key)
	if got := x.get(key, t0.Add(time.Second), none); len(got) != 0 {
		t.Errorf("exits of a forgotten cluster: %+v", got)
	}
}
