package operator

import (
	"slices"
	"strings"
	"testing"
)

func TestAlone(t *testing.T) {
	cs := []Component{{Name: "cluster-controller"}, {Name: "node-controller"}}
	for _, tc := range []struct {
		args     []string
		want     string
		wantRest []string
	}{
		{args: []string{"node-controller", "--leader-elect=true"}, want: "node-controller", wantRest: []string{"--leader-elect=true"}},
		{args: []string{"cluster-controller"}, want: "cluster-controller", wantRest: []string{}},
		{args: []string{"--controllers=node-controller"}},
		{args: []string{"--", "node-controller"}},
		{args: []string{"webhooks"}},
		{args: nil},
	} {
		c, rest, ok := alone(cs, tc.args)
		if ok != (tc.want != "") || c.Name != tc.want || (ok && !slices.Equal(rest, tc.wantRest)) {
			t.Errorf("alone(%q) = %q, %q, %t; want %q, %q", tc.args, c.Name, rest, ok, tc.want, tc.wantRest)
		}
	}
}

// A positional argument that names no component is refused, naming it, before
// anything starts.
func TestRunRefusesAStrayArgument(t *testing.T) {
	cs := []Component{{Name: "cluster-controller"}, {Name: "node-controller"}}
	err := run("manager", cs, true, []string{"--leader-elect=false", "nodes-controller"})
	if err == nil || !strings.Contains(err.Error(), `"nodes-controller"`) || !strings.Contains(err.Error(), "cluster-controller, node-controller") {
		t.Errorf("manager with a stray argument: %v; want an error naming it and the components", err)
	}
	err = run("node-controller", cs[1:], false, []string{"cluster-controller"})
	if err == nil || !strings.Contains(err.Error(), `"cluster-controller"`) {
		t.Errorf("node-controller with an argument: %v; want an error naming it", err)
	}
}
