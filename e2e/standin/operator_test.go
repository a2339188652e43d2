package standin

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/valkey-operator/valkey-operator/internal/envtestenv"
)

// TestRenderChart checks what the stand-in takes of the chart in each mode: the
// processes to run with their flags and accounts, and the RBAC to apply.
func TestRenderChart(t *testing.T) {
	root, err := envtestenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm, err := FindHelm(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		combined bool
		want     []string
	}{
		{false, []string{"acl-controller", "backup-controller", "cluster-controller", "node-controller", "tls-controller"}},
		{true, []string{"manager"}},
	} {
		set := "controllers.combined=false"
		if tc.combined {
			set = "controllers.combined=true"
		}
		t.Run(set, func(t *testing.T) {
			ch, err := RenderChart(context.Background(), helm, root, "metrics.secure=false", "webhooks.enabled=false", set)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range ch.Components {
				names = append(names, c.Name)
				// Every controller runs the manager binary: alone, with its name first.
				if c.Binary != "manager" || (!tc.combined && c.Args[0] != c.Name) || c.ServiceAccount == "" || c.Replicas != 1 {
					t.Errorf("%s: binary %q, account %q, %d replicas", c.Name, c.Binary, c.ServiceAccount, c.Replicas)
				}
				if !slices.Contains(c.Args, "--leader-elect=true") || !slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--metrics-bind-address=") }) {
					t.Errorf("%s: args %v lack the chart's leader election or metrics address", c.Name, c.Args)
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.want) {
				t.Errorf("components %v, want %v", names, tc.want)
			}
			kinds := map[string]int{}
			for _, o := range ch.RBAC {
				kinds[o.GetKind()]++
			}
			if kinds["ServiceAccount"] != len(tc.want) || kinds["ClusterRole"] == 0 || kinds["ClusterRoleBinding"] == 0 {
				t.Errorf("RBAC objects by kind: %v", kinds)
			}
		})
	}
}
