package perf

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

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

// TestPodsConvergedChecksThePodsFirst covers what PodsConverged decides from the pods
// alone, before it asks any server.
func TestPodsConvergedChecksThePodsFirst(t *testing.T) {
	pod := func(name string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"valkey.io/cluster": "c"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "docker.io/valkey/valkey:9.1.2"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	shape := Shape{Shards: 1, Replicas: 1, Image: "valkey/valkey:9.1.2"}
	cases := []struct {
		name string
		pods []*corev1.Pod
		want string
	}{
		{"a pod missing", []*corev1.Pod{pod("a", nil)}, "1 pods, want 2"},
		{"a pod not ready", []*corev1.Pod{pod("a", nil), pod("b", func(p *corev1.Pod) { p.Status.Conditions = nil })}, "pod not ready"},
		{"a pod without an address", []*corev1.Pod{pod("a", nil), pod("b", func(p *corev1.Pod) { p.Status.PodIP = "" })}, "pod not ready"},
		{"a pod on the old image", []*corev1.Pod{pod("a", nil), pod("b", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "docker.io/valkey/valkey:9.1" })},
			"pod b does not run valkey/valkey:9.1.2"},
		{"a pod of another cluster does not count", []*corev1.Pod{pod("a", nil), pod("b", func(p *corev1.Pod) { p.Labels["valkey.io/cluster"] = "other" })}, "1 pods, want 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := fake.NewClientBuilder()
			for _, p := range c.pods {
				b = b.WithObjects(p)
			}
			ok, detail, err := PodsConverged(context.Background(), b.Build(), "ns", client.MatchingLabels{"valkey.io/cluster": "c"}, shape, "e2e", "any")
			if err != nil || ok || !strings.Contains(detail, c.want) {
				t.Errorf("PodsConverged = %t %q %v, want not converged: %q", ok, detail, err, c.want)
			}
		})
	}
}

func TestSelfIDs(t *testing.T) {
	views := []serverView{
		{nodes: []valkey.ClusterNode{{ID: "a", Myself: true}, {ID: "b"}, {ID: "old"}}},
		{nodes: []valkey.ClusterNode{{ID: "a"}, {ID: "b", Myself: true}}},
		{err: errors.New("refused")},
	}
	ids := selfIDs(views)
	if len(ids) != 2 || !ids["a"] || !ids["b"] {
		t.Errorf("selfIDs = %v, want a and b only (old is no server's own)", ids)
	}
}
