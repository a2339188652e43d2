package framework

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

func TestFeatureLabels(t *testing.T) {
	f := NewFeature("localkube", "nodes", WithoutNamespace()).WithLabel("disruptive", "true").Feature()
	if got := f.Labels()[LabelSuite]; len(got) != 1 || got[0] != "localkube" {
		t.Errorf("suite label %v, want [localkube]", got)
	}
}

// TestLabelFiltering runs features of two suites under e2e-framework's --labels and
// --skip-labels selections and checks which assessments ran.
func TestLabelFiltering(t *testing.T) {
	tests := []struct {
		name          string
		labels, skips map[string][]string
		want          string
	}{
		{name: "no selection runs all", want: "a1 a2 b1"},
		{name: "suite=a", labels: map[string][]string{LabelSuite: {"a"}}, want: "a1 a2"},
		{name: "suite=b", labels: map[string][]string{LabelSuite: {"b"}}, want: "b1"},
		{name: "skip disruptive", skips: map[string][]string{"disruptive": {"true"}}, want: "a1 b1"},
		{name: "suite=a without disruptive", labels: map[string][]string{LabelSuite: {"a"}}, skips: map[string][]string{"disruptive": {"true"}}, want: "a1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran []string
			mark := func(name string) func(context.Context, *testing.T, *envconf.Config) context.Context {
				return func(ctx context.Context, _ *testing.T, _ *envconf.Config) context.Context {
					ran = append(ran, name)
					return ctx
				}
			}
			cfg := envconf.New().WithLabels(tt.labels).WithSkipLabels(tt.skips)
			e := env.NewWithConfig(cfg)
			e.Test(t,
				NewFeature("a", "one", WithoutNamespace()).Assess("runs", mark("a1")).Feature(),
				NewFeature("a", "two", WithoutNamespace()).WithLabel("disruptive", "true").Assess("runs", mark("a2")).Feature(),
				NewFeature("b", "three", WithoutNamespace()).Assess("runs", mark("b1")).Feature(),
			)
			if got := strings.Join(ran, " "); got != tt.want {
				t.Errorf("ran %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFeatureNamespaceName(t *testing.T) {
	dns := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	for _, tc := range [][2]string{
		{"localkube", "pods spread over the nodes and are reachable from everywhere, really"},
		{"Operator_Rolling", "  --Weird  Name!! "},
		{"a", "b"},
	} {
		ns := featureNamespaceName(tc[0], tc[1])
		if len(ns) > 63 || !dns.MatchString(ns) {
			t.Errorf("%q %q: namespace %q is not a DNS label", tc[0], tc[1], ns)
		}
	}
	if got := Slug("Pods: Spread / Reachable", 63); got != "pods-spread-reachable" {
		t.Errorf("Slug = %q", got)
	}
	if a, b := featureNamespaceName("s", "f"), featureNamespaceName("s", "f"); a == b {
		t.Errorf("two namespaces of one feature are both %q", a)
	}
}
