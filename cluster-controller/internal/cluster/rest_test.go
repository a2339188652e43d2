package cluster

import (
	"testing"

	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestRestFingerprint(t *testing.T) {
	base := func() []valkey.ClusterNode {
		return []valkey.ClusterNode{
			{ID: "a", IP: "10.0.0.1", Port: 6379, Primary: true, Myself: true, ConfigEpoch: 1, Connected: true,
				Slots: []valkey.SlotRange{{Start: 0, End: 8191}}, PingSent: 1, PongRecv: 2},
			{ID: "b", IP: "10.0.0.2", Port: 6379, Replica: true, PrimaryID: "a", ConfigEpoch: 1, Connected: true, PingSent: 3, PongRecv: 4},
		}
	}
	want := restFingerprint(base())
	for _, tc := range []struct {
		name   string
		change func([]valkey.ClusterNode) []valkey.ClusterNode
		same   bool
	}{
		{"ping and pong times", func(v []valkey.ClusterNode) []valkey.ClusterNode { v[0].PingSent, v[1].PongRecv = 99, 99; return v }, true},
		{"the order of the lines", func(v []valkey.ClusterNode) []valkey.ClusterNode { return []valkey.ClusterNode{v[1], v[0]} }, true},
		{"the answering member (myself)", func(v []valkey.ClusterNode) []valkey.ClusterNode { v[0].Myself, v[1].Myself = false, true; return v }, true},
		{"a failover", func(v []valkey.ClusterNode) []valkey.ClusterNode {
			v[0].Primary, v[0].Replica, v[0].PrimaryID = false, true, "b"
			v[1].Primary, v[1].Replica, v[1].PrimaryID, v[1].ConfigEpoch = true, false, "", 2
			return v
		}, false},
		{"a member flagged failing", func(v []valkey.ClusterNode) []valkey.ClusterNode { v[1].PFail = true; return v }, false},
		{"a broken link", func(v []valkey.ClusterNode) []valkey.ClusterNode { v[1].Connected = false; return v }, false},
		{"a slot moved", func(v []valkey.ClusterNode) []valkey.ClusterNode { v[0].Slots[0].End = 8190; return v }, false},
		{"a new address", func(v []valkey.ClusterNode) []valkey.ClusterNode { v[1].IP = "10.0.0.3"; return v }, false},
		{"a member met", func(v []valkey.ClusterNode) []valkey.ClusterNode {
			return append(v, valkey.ClusterNode{ID: "c", Handshake: true})
		}, false},
	} {
		if got := restFingerprint(tc.change(base())) == want; got != tc.same {
			t.Errorf("%s: same fingerprint %v, want %v", tc.name, got, tc.same)
		}
	}
}
