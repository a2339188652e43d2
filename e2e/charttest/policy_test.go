package charttest

import (
	"strings"
	"testing"
)

// Every component gets the same policy flags (the webhooks and each controller's guard
// must agree on which specs are valid), with the documented defaults.
func TestPolicyReachesEveryComponent(t *testing.T) {
	cases := []struct {
		name string
		sets []string
		want []string
		not  []string
	}{
		{name: "defaults",
			want: []string{"--max-members-per-cluster=100"},
			not:  []string{"--refuse-sidecars"}},
		{name: "set", sets: []string{"policy.maxMembersPerCluster=300"},
			want: []string{"--max-members-per-cluster=300"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, tc.sets...)
			for _, name := range components {
				args := deploymentArgs(objs, name)
				for _, w := range tc.want {
					if !strings.Contains(args, w) {
						t.Errorf("%s: args lack %s: %s", name, w, args)
					}
				}
				for _, n := range tc.not {
					if strings.Contains(args, n) {
						t.Errorf("%s: args have %s: %s", name, n, args)
					}
				}
			}
		})
	}
}

// The schema refuses what would turn a cap off or could not be a flag's value.
func TestPolicySchema(t *testing.T) {
	for _, set := range []string{
		"policy.maxMembersPerCluster=0",
	} {
		if _, err := helm(t, "template", "vko", "charts/valkey-operator", "--kube-version", kubeVersion, "--set", set); err == nil {
			t.Errorf("%s was accepted", set)
		}
	}
}
