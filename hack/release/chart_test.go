package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrepareChart copies the project's chart and checks the release's version and
// image in the copy, the original untouched.
func TestPrepareChart(t *testing.T) {
	chart := filepath.Join("..", "..", "charts", "valkey-operator")
	before, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := prepareChart(chart, "1.2.3", "registry.example.com:5000/team/valkey-operator:ignored", out); err != nil {
		t.Fatal(err)
	}
	chartYAML, _ := os.ReadFile(filepath.Join(out, "valkey-operator", "Chart.yaml"))
	for _, want := range []string{"\nversion: \"1.2.3\"\n", "\nappVersion: \"1.2.3\"\n"} {
		if !strings.Contains(string(chartYAML), want) {
			t.Errorf("Chart.yaml lacks %q:\n%s", want, chartYAML)
		}
	}
	values, _ := os.ReadFile(filepath.Join(out, "valkey-operator", "values.yaml"))
	for _, want := range []string{"\nimage:\n", "  registry: \"registry.example.com:5000\"\n", "  repository: \"team/valkey-operator\"\n", "  tag: \"\"\n"} {
		if !strings.Contains(string(values), want) {
			t.Errorf("values.yaml lacks %q", want)
		}
	}
	if strings.Count(string(values), "registry.example.com") != 1 {
		t.Errorf("values.yaml names the registry more than once (a component's own image block changed?)")
	}
	after, _ := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if string(after) != string(before) {
		t.Error("the chart in the repository was changed")
	}
	if _, err := os.Stat(filepath.Join(out, "valkey-operator", "templates", "_helpers.tpl")); err != nil {
		t.Errorf("templates not copied: %v", err)
	}
}

func TestCheckChartRegistry(t *testing.T) {
	for _, tc := range []struct {
		img, registry string
		ok            bool
	}{
		{"registry.example.com/valkey/valkey-operator:1.0", "oci://registry.example.com/valkey/charts", true},
		{"registry.example.com/valkey/valkey-operator:1.0", "oci://registry.example.com/valkey", false},
		{"registry.example.com/valkey/valkey-operator", "oci://registry.example.com/valkey/", false},
		{"10.99.0.1:5100/valkey/valkey-operator:0.2.0", "oci://10.99.0.1:5100/valkey", false},
		{"10.99.0.1:5100/valkey/valkey-operator:0.2.0", "oci://10.99.0.1:5100/valkey/charts", true},
		{"registry.example.com/valkey/valkey-operator:1.0", "registry.example.com/valkey/charts", false},
	} {
		err := checkChartRegistry("valkey-operator", tc.img, tc.registry)
		if (err == nil) != tc.ok {
			t.Errorf("checkChartRegistry(%s, %s) = %v, want ok=%v", tc.img, tc.registry, err, tc.ok)
		}
	}
}
