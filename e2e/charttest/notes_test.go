package charttest

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestNotesMatchTheQuickStart: the chart's NOTES print the README's quick start (the one
// the release e2e suite runs): the same Secret, the same cluster as
// docs/examples/quickstart.yaml, the same connect command.
func TestNotesMatchTheQuickStart(t *testing.T) {
	root := repoRoot(t)
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	notes := read("charts/valkey-operator/templates/NOTES.txt")
	readme := read("README.md")

	// Commands: every kubectl line of the README's block, dedented, is in the NOTES.
	block := regexp.MustCompile("(?s)<!-- quickstart: [^\n]*-->\n```sh\n(.*?)```").FindStringSubmatch(readme)
	if block == nil {
		t.Fatal("README.md has no quick start block")
	}
	dedent := func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			out = append(out, strings.TrimSpace(l))
		}
		return strings.Join(out, "\n")
	}
	run := regexp.MustCompile(`(?s)kubectl run valkey-client.*?}}'`)
	if a, b := run.FindString(dedent(block[1])), run.FindString(dedent(notes)); a == "" || a != b {
		t.Errorf("connect commands differ:\nREADME: %s\nNOTES:  %s", a, b)
	}
	for _, l := range strings.Split(block[1], "\n") {
		if strings.HasPrefix(l, "kubectl create secret") || strings.HasPrefix(l, "kubectl wait") {
			if !strings.Contains(notes, l) {
				t.Errorf("NOTES lack the README's %q", l)
			}
		}
	}

	// The cluster: the NOTES' inline manifest is docs/examples/quickstart.yaml.
	m := regexp.MustCompile(`(?s)cat <<YAML \| kubectl apply -f -\n(.*?)\n  YAML\n`).FindStringSubmatch(notes)
	if m == nil {
		t.Fatal("NOTES have no inline ValkeyCluster")
	}
	var inline, example map[string]any
	if err := yaml.Unmarshal([]byte(strings.ReplaceAll(m[1], "\n  ", "\n")[2:]), &inline); err != nil {
		t.Fatalf("NOTES manifest: %v", err)
	}
	if err := yaml.Unmarshal([]byte(read("docs/examples/quickstart.yaml")), &example); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(inline, example) {
		t.Errorf("the NOTES' cluster differs from docs/examples/quickstart.yaml:\n%v\n%v", inline, example)
	}
}
