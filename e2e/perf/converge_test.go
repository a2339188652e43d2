package perf

import (
	"errors"
	"strings"
	"testing"

	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestServerViewProblems(t *testing.T) {
	ids := map[string]bool{"aaaaaaaaaa": true, "bbbbbbbbbb": true}
	okInfo := map[string]string{"cluster_state": "ok", "cluster_slots_assigned": "16384", "cluster_known_nodes": "2"}
	primary := valkey.ClusterNode{ID: "aaaaaaaaaa", Primary: true, Myself: true, Slots: []valkey.SlotRange{{Start: 0, End: 16383}}}
	replica := valkey.ClusterNode{ID: "bbbbbbbbbb", Replica: true, PrimaryID: "aaaaaaaaaa"}
	cases := []struct {
		name string
		view serverView
		want string // a substring of the first problem; "" for none
	}{
		{"converged", serverView{member: "m", info: okInfo, nodes: []valkey.ClusterNode{primary, replica}, repl: valkey.Replication{Role: valkey.RolePrimary}}, ""},
		{"unreachable", serverView{member: "m", err: errors.New("dial: refused")}, "refused"},
		{"state fail", serverView{member: "m", info: map[string]string{"cluster_state": "fail", "cluster_slots_assigned": "16384", "cluster_known_nodes": "2"}}, "cluster_state fail"},
		{"stranger", serverView{member: "m", info: okInfo, nodes: []valkey.ClusterNode{primary, {ID: "cccccccccc", Flags: []string{"master"}}}}, "stranger cccccccc"},
		{"failing", serverView{member: "m", info: okInfo, nodes: []valkey.ClusterNode{primary, {ID: "bbbbbbbbbb", PFail: true, Flags: []string{"slave", "fail?"}}}}, "sees bbbbbbbb"},
		{"open slot", serverView{member: "m", info: okInfo, nodes: []valkey.ClusterNode{{ID: "aaaaaaaaaa", Myself: true, Primary: true, Migrating: map[int]string{5: "bbbbbbbbbb"}}}}, "open slots"},
		{"link down", serverView{member: "m", info: okInfo, nodes: []valkey.ClusterNode{primary, replica}, repl: valkey.Replication{Role: valkey.RoleReplica}}, "link down"},
	}
	for _, c := range cases {
		got := c.view.problems(ids)
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: unexpected problems %v", c.name, got)
		case c.want != "" && (len(got) == 0 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: problems %v, want one with %q", c.name, got, c.want)
		}
	}
}

func TestShardProblems(t *testing.T) {
	p := func(id string) valkey.ClusterNode {
		return valkey.ClusterNode{ID: id, Primary: true, Slots: []valkey.SlotRange{{Start: 0, End: 1}}}
	}
	r := func(id, of string) valkey.ClusterNode {
		return valkey.ClusterNode{ID: id, Replica: true, PrimaryID: of}
	}
	cases := []struct {
		name  string
		nodes []valkey.ClusterNode
		want  int
	}{
		{"two shards of one replica", []valkey.ClusterNode{p("a"), r("b", "a"), p("c"), r("d", "c")}, 0},
		{"a replica missing", []valkey.ClusterNode{p("a"), r("b", "a"), p("c"), p("d")}, 3}, // c and d lack a replica; three primaries serve slots
		{"two replicas on one primary", []valkey.ClusterNode{p("a"), r("b", "a"), r("d", "a"), p("c")}, 2},
	}
	for _, c := range cases {
		if got := shardProblems(c.nodes, 2, 1); len(got) != c.want {
			t.Errorf("%s: %d problems %v, want %d", c.name, len(got), got, c.want)
		}
	}
}
