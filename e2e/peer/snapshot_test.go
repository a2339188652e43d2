package peer

import (
	"slices"
	"testing"
)

func TestStateDiff(t *testing.T) {
	before := State{
		"CustomResourceDefinition": {"valkeybackups.valkey.io", "valkeyclusters.valkey.io"},
		"Namespace":                {"default", "valkey-operator"},
		"ClusterRole":              {"admin"},
	}
	cases := []struct {
		name  string
		after State
		want  []string
	}{
		{"the same", State{
			"CustomResourceDefinition": {"valkeybackups.valkey.io", "valkeyclusters.valkey.io"},
			"Namespace":                {"default", "valkey-operator"},
			"ClusterRole":              {"admin"},
		}, nil},
		{"the peer's namespace and role left, a CRD of ours gone", State{
			"CustomResourceDefinition": {"valkeyclusters.valkey.io"},
			"Namespace":                {"default", "valkey-operator", "valkey-operator-system"},
			"ClusterRole":              {"admin", "valkey-operator-manager-role"},
		}, []string{
			"ClusterRole: added valkey-operator-manager-role",
			"CustomResourceDefinition: removed valkeybackups.valkey.io",
			"Namespace: added valkey-operator-system",
		}},
		{"a kind missing after", State{
			"CustomResourceDefinition": {"valkeybackups.valkey.io", "valkeyclusters.valkey.io"},
			"Namespace":                {"default", "valkey-operator"},
		}, []string{"ClusterRole: removed admin"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := before.Diff(c.after); !slices.Equal(got, c.want) {
				t.Errorf("Diff = %q, want %q", got, c.want)
			}
		})
	}
	if got := before.String(); got != "ClusterRole 1, CustomResourceDefinition 2, Namespace 2" {
		t.Errorf("String() = %q", got)
	}
}
