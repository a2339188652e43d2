package plan

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestClientView(t *testing.T) {
	node := func(name, id, podIP, ext string) *v1alpha1.ValkeyNode {
		return &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: v1alpha1.ValkeyNodeStatus{NodeID: id, PodIP: podIP, ExternalAddress: ext}}
	}
	a := &Member{Node: node("a", "A", "10.0.0.1", ""), Addr: "10.0.0.1:6379", Reachable: true,
		Self: valkey.ClusterNode{ID: "A", IP: "203.0.113.1", Port: 6379, Myself: true}}
	a.View = []valkey.ClusterNode{a.Self, {ID: "B", IP: "203.0.113.2", Port: 6379}, {ID: "C", IP: "10.0.0.9", Port: 6379}}
	// b does not answer: its recorded external address says what it announces.
	b := &Member{Node: node("b", "B", "10.0.0.2", "203.0.113.2:6379"), Addr: "10.0.0.2:6379"}
	// c moved to a new pod: an entry at another address stays as it is.
	c := &Member{Node: node("c", "C", "10.0.0.3", ""), Addr: "10.0.0.3:6379", Reachable: true,
		Self: valkey.ClusterNode{ID: "C", IP: "10.0.0.3", Port: 6379, Myself: true}}
	ClientView([]*Member{a, b, c})
	want := []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.9:6379"}
	for i, n := range a.View {
		if n.Addr() != want[i] {
			t.Errorf("entry %s at %s, want %s", n.ID, n.Addr(), want[i])
		}
	}
	if a.Self.Addr() != "10.0.0.1:6379" {
		t.Errorf("self at %s", a.Self.Addr())
	}
}

func TestMarkUnseen(t *testing.T) {
	mk := func(name, id, podIP string, self valkey.ClusterNode) *Member {
		self.ID, self.Port, self.Myself = id, 6379, true
		return &Member{Node: &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: v1alpha1.ValkeyNodeStatus{NodeID: id, PodIP: podIP}}, Addr: podIP + ":6379", Reachable: true, Self: self}
	}
	// a announces its node port, b a hostname, c nothing (its pod address).
	a := mk("a", "A", "10.0.0.1", valkey.ClusterNode{IP: "198.51.100.1", Port: 31001})
	a.Self.Port = 31001
	b := mk("b", "B", "10.0.0.2", valkey.ClusterNode{IP: "10.0.0.2", Hostname: "b.vk.example.com"})
	c := mk("c", "C", "10.0.0.3", valkey.ClusterNode{IP: "10.0.0.3"})
	a.View = []valkey.ClusterNode{a.Self, {ID: "B", IP: "10.0.0.2", Port: 6379, Hostname: "b.vk.example.com"}, {ID: "C", IP: "10.0.0.3", Port: 6379}}
	// b has not heard a's announce yet, and lists c in handshake.
	b.View = []valkey.ClusterNode{b.Self, {ID: "A", IP: "10.0.0.1", Port: 6379}, {ID: "C", IP: "10.0.0.3", Port: 6379, Handshake: true}}
	// c shows a's address, and b without its hostname.
	c.View = []valkey.ClusterNode{c.Self, {ID: "A", IP: "198.51.100.1", Port: 31001}, {ID: "B", IP: "10.0.0.2", Port: 6379}}
	// d does not answer: its view is not asked.
	d := &Member{Node: &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: "d"}}, View: []valkey.ClusterNode{{ID: "A", IP: "10.0.0.1", Port: 6379}}}
	markUnseen([]*Member{a, b, c, d})
	for _, tc := range []struct {
		m    *Member
		want []string
	}{{a, []string{"b"}}, {b, []string{"c"}}, {c, nil}, {d, nil}} {
		if !slices.Equal(tc.m.UnseenBy, tc.want) {
			t.Errorf("%s unseen by %v, want %v", tc.m.Name(), tc.m.UnseenBy, tc.want)
		}
	}
	// Once gossip has spread a's address to b, nobody waits.
	b.View[1] = valkey.ClusterNode{ID: "A", IP: "198.51.100.1", Port: 31001}
	markUnseen([]*Member{a, b, c, d})
	if len(a.UnseenBy) != 0 {
		t.Errorf("a unseen by %v after gossip, want none", a.UnseenBy)
	}
}
