package cluster

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// TestRollEndsWhenTheLastMemberIsBack: an in-place roll authorises a member by raising
// its revision, which makes its spec current at once. Until its pod was rebuilt for that
// revision, the roll is not over: the shard stays the one to roll and the spec does not
// count as applied (Progressing stays True).
func TestRollEndsWhenTheLastMemberIsBack(t *testing.T) {
	vc := cluster(func(s *v1alpha1.ValkeyClusterSpec) {
		s.Shards, s.ReplicasPerShard = 3, ptr.To[int32](1)
	})
	topo := build(t, threeByOne())
	for _, m := range topo.members {
		m.node.Spec = desiredSpec(vc, m.shard())
		m.node.Spec.Revision, m.node.Status.Revision = 1, 1
	}
	s := &scope{vc: vc, topo: topo}
	if sh, ok := s.nextShardToRoll(); ok {
		t.Fatalf("nothing to roll, got shard %d", sh)
	}
	if !s.membersUpToDate() {
		t.Fatal("every member runs the spec's pod: want up to date")
	}

	c2 := topo.byID("C2")
	c2.node.Spec.Revision = 2 // authorised, its pod not rebuilt yet
	if sh, ok := s.nextShardToRoll(); !ok || sh != 2 {
		t.Errorf("next shard to roll = %d %v, want 2 (c2 is restarting)", sh, ok)
	}
	if s.membersUpToDate() {
		t.Error("c2 still runs its old pod: want not up to date")
	}

	c2.node.Status.Revision = 2
	if sh, ok := s.nextShardToRoll(); ok {
		t.Errorf("c2 is back: nothing to roll, got shard %d", sh)
	}
	if !s.membersUpToDate() {
		t.Error("c2 is back: want up to date")
	}
}
