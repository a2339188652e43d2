package operator

import (
	"flag"
	"strings"
	"testing"

	"github.com/valkey-operator/valkey-operator/api/validation"
)

// The flags set the policy every validation applies, with the documented defaults, and
// refuse values that would turn a limit off.
func TestPolicyFlags(t *testing.T) {
	defer validation.SetPolicy(validation.Policy{})
	cases := []struct {
		name    string
		args    []string
		check   func(t *testing.T, p validation.Policy)
		wantErr string
	}{
		{name: "defaults", check: func(t *testing.T, p validation.Policy) {
			if p.MembersPerCluster() != 100 || p.RefuseSidecars {
				t.Errorf("got %d members, refuse sidecars %v; want 100, false", p.MembersPerCluster(), p.RefuseSidecars)
			}
		}},
		{name: "every flag", args: []string{"--max-members-per-cluster=300", "--refuse-sidecars"},
			check: func(t *testing.T, p validation.Policy) {
				if p.MembersPerCluster() != 300 || !p.RefuseSidecars {
					t.Errorf("got %d members, refuse sidecars %v", p.MembersPerCluster(), p.RefuseSidecars)
				}
			}},
		{name: "no unlimited members", args: []string{"--max-members-per-cluster=0"},
			wantErr: "--max-members-per-cluster: 0: must be at least 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			validation.SetPolicy(validation.Policy{})
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			apply := PolicyFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := apply()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, validation.CurrentPolicy())
		})
	}
}
