package docscheck

import (
	"reflect"
	"strings"
	"testing"
)

// TestRepoDocsSayWhatIsTrueNow runs the check on this checkout.
func TestRepoDocsSayWhatIsTrueNow(t *testing.T) {
	vs, err := Check("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}

// TestCheckAFixture runs the check on a repository whose guide narrates runs by date and
// commit and links to a missing doc and missing headings, beside names and numbers that
// only look like hashes, a CHANGELOG.md and a docs/benchmarks.md that hold dates.
func TestCheckAFixture(t *testing.T) {
	vs, err := Check("testdata/fixture")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.String())
	}
	want := []string{
		"README.md:3: " + RuleLink + ": docs/missing.md (no such file)",
		"docs/guide.md:5: " + RuleDate + ": 2026-12-02",
		"docs/guide.md:5: " + RuleCommit + ": 3c93478",
		"docs/guide.md:5: " + RuleCommit + ": a5ad28f",
		"docs/guide.md:6: " + RuleCommit + ": c02b998",
		"docs/guide.md:17: " + RuleLink + ": #how-to-walk (no such heading)",
		"docs/guide.md:18: " + RuleLink + ": ../../elsewhere.md (outside the repository)",
		"docs/guide.md:20: " + RuleLink + ": sub/b.md#nope (no such heading)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAnchors(t *testing.T) {
	for _, tc := range []struct {
		heading string
		want    string
	}{
		{"# Testing", "testing"},
		{"### Item 9 beyond the local Kubernetes: `make bench-fleet-standin`", "item-9-beyond-the-local-kubernetes-make-bench-fleet-standin"},
		{"## The 8.0 scale: `TestScaleOn80`", "the-80-scale-testscaleon80"},
		{"## Known issue: a slot lost when the importing shard's primary leaves during a scale", "known-issue-a-slot-lost-when-the-importing-shards-primary-leaves-during-a-scale"},
		{"## Waiting for a change, and health checks for GitOps tools", "waiting-for-a-change-and-health-checks-for-gitops-tools"},
		{"## See [api.md](api.md) first", "see-apimd-first"},
		{"## snake_case and dashes -- kept", "snake_case-and-dashes----kept"},
	} {
		if got := Anchors([]string{tc.heading}); !got[tc.want] || len(got) != 1 {
			t.Errorf("%q: anchors %v, want %q", tc.heading, got, tc.want)
		}
	}
	got := Anchors([]string{"# A", "```", "# not a heading", "```", "## A", "#hashtag", "## A"})
	if want := map[string]bool{"a": true, "a-1": true, "a-2": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("repeated headings: %v, want %v", got, want)
	}
}
