package contract

import (
	"slices"
	"strings"
	"testing"
)

// TestRepoFindsPublishedSecretsThroughStatus runs the name rule on this checkout.
func TestRepoFindsPublishedSecretsThroughStatus(t *testing.T) {
	expectNone(t, Names)
}

// TestRepoReadersAreTheTables runs the readers' check on this checkout.
func TestRepoReadersAreTheTables(t *testing.T) {
	expectNone(t, Readers)
}

// expectNone runs check on this checkout and fails on each violation it reports.
func expectNone(t *testing.T, check func(root string) ([]Violation, error)) {
	t.Helper()
	vs, err := check("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}

// TestNamesRefusesAConsumerBuildingAName runs the name rule on a fixture whose
// cluster-controller builds the names of the system users' Secret and of the accepted
// certificate: by the builder, and by a literal suffix. The producer, the API package,
// the tests and the e2e suites may.
func TestNamesRefusesAConsumerBuildingAName(t *testing.T) {
	vs, err := Names("testdata/names")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.String())
	}
	want := []string{
		"cluster-controller/cluster/members.go:11: the literal \"%s-tls-accepted\" builds the name of the tls-controller's Secret {cluster}-tls-accepted by convention: " +
			"read status.tls.acceptedSecretName (v1alpha1.AcceptedTLSSecretOf) and wait on the tls-controller while it is empty",
		"cluster-controller/cluster/members.go:11: v1alpha1.SystemUsersSecretName builds the name of the acl-controller's Secret {cluster}-system-users by convention: " +
			"read status.acl.systemUsersSecretName (v1alpha1.SystemUsersSecretOf) and wait on the acl-controller while it is empty",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestReadersRefusesAWrongReadBy runs the readers' check on a fixture whose table says
// the node-controller reads ACLReady (it reads nothing) and leaves out the
// tls-controller (which reads ACLReady). The cluster-controller, listed, reads
// status.acl through two functions of the shared packages, which counts.
func TestReadersRefusesAWrongReadBy(t *testing.T) {
	vs, err := Readers("testdata/readers")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.String())
	}
	want := []string{
		`docs/status-contract.md:7: "` + "`ACLReady`, `status.acl` (Secret names)" + `" says node-controller reads it, but node-controller/ references none of .Status.ACL, ACLReady`,
		`docs/status-contract.md:7: "` + "`ACLReady`, `status.acl` (Secret names)" + `" does not list tls-controller, whose code in tls-controller/ reads ACLReady`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseRow(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cells   []string
		readers []string
		outside []string
		err     string
	}{
		{name: "a shared suffix names two controllers", cells: []string{"`ACLReady`", "ValkeyCluster", "acl-controller", "cluster-, node-controller, users"},
			readers: []string{"cluster-controller", "node-controller"}, outside: []string{"users"}},
		{name: "parentheses describe, their commas do not split", cells: []string{"`Restored`", "ValkeyCluster", "backup-controller",
			"acl-controller (publishes `spec.users`, then turns `_restore` off), `kubectl valkey`"},
			readers: []string{"acl-controller", "`kubectl valkey`"}},
		{name: "every controller owns InvalidSpec", cells: []string{"`InvalidSpec`", "both", "every controller, as the guard before acting", "users"},
			outside: []string{"users"}},
		{name: "an unknown reader", cells: []string{"`Ready`", "ValkeyCluster", "cluster-controller", "the scheduler"},
			err: `unknown reader "the scheduler"`},
		{name: "an unknown kind", cells: []string{"`Ready`", "ValkeyThing", "cluster-controller", "users"}, err: `unknown kind "ValkeyThing"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseRow(tc.cells, 1)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case !slices.Equal(r.Readers, tc.readers) || !slices.Equal(r.Outside, tc.outside):
				t.Errorf("readers %q, outside %q; want %q, %q", r.Readers, r.Outside, tc.readers, tc.outside)
			}
		})
	}
}

func TestEndsName(t *testing.T) {
	for s, want := range map[string]bool{
		"vk-acl": true, "%s-acl": true, "Secret vk-acl is missing": true, "acl-controller": false,
		"vk-acl-2": false, "-aclfile": false, "vk-system-users": true, "vk-system-users.": false,
	} {
		suffix := "-acl"
		if strings.Contains(s, "system") {
			suffix = "-system-users"
		}
		if got := endsName(s, suffix); got != want {
			t.Errorf("endsName(%q, %q) = %v, want %v", s, suffix, got, want)
		}
	}
}
