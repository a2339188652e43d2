package acl

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

func TestACLReadyCondition(t *testing.T) {
	tests := []struct {
		name   string
		in     renderOutcome
		status metav1.ConditionStatus
		reason string
		msg    string
	}{
		{"rendered", renderOutcome{Revision: "abc", Users: 6}, metav1.ConditionTrue, v1alpha1.ReasonACLRendered,
			"aclfile revision abc with 6 users is published"},
		{"rotating", renderOutcome{Revision: "abc", Rotation: "rotating ..."}, metav1.ConditionTrue, v1alpha1.ReasonRotating, "rotating ..."},
		{"missing key", renderOutcome{Missing: []passwordProblem{{User: "alice", Secret: "s", Key: "k", Kept: true}}}, metav1.ConditionFalse, v1alpha1.ReasonPasswordMissing,
			"user alice: Secret s has no key k (its previous rules stay in force)"},
		{"missing secret", renderOutcome{Missing: []passwordProblem{{User: "alice", Secret: "s", SecretMissing: true}}}, metav1.ConditionFalse, v1alpha1.ReasonPasswordMissing,
			"user alice: Secret s not found (it is left out)"},
		{"refused, kept", renderOutcome{Refused: Refusals{"carol": "bad rule"}, Kept: map[string]bool{"carol": true}}, metav1.ConditionFalse, v1alpha1.ReasonUserRefused,
			"user carol: refused by Valkey: bad rule (its previous rules stay in force)"},
		{"refused, left out, sorted", renderOutcome{Refused: Refusals{"zed": "z", "carol": "c"}}, metav1.ConditionFalse, v1alpha1.ReasonUserRefused,
			"user carol: refused by Valkey: c (it is left out); user zed: refused by Valkey: z (it is left out)"},
		{"missing wins the reason", renderOutcome{Missing: []passwordProblem{{User: "a", Secret: "s", Key: "k"}}, Refused: Refusals{"b": "x"}}, metav1.ConditionFalse, v1alpha1.ReasonPasswordMissing,
			"user a: Secret s has no key k (it is left out); user b: refused by Valkey: x (it is left out)"},
		{"a reply too large, sorted by member", renderOutcome{Revision: "abc", TooLarge: map[string]*valkey.ReplyTooLargeError{
			"vk-b": {Addr: "10.0.0.2:6379", Command: "ACL USERS", Limit: 8 << 20}, "vk-a": {Addr: "10.0.0.1:6379", Command: "ACL LIST", Limit: 8 << 20}}},
			metav1.ConditionFalse, v1alpha1.ReasonReplyTooLarge,
			"member vk-a answered ACL LIST with more than 8 MiB; the controller cannot check that member's users until the reply fits; " +
				"member vk-b answered ACL USERS with more than 8 MiB; the controller cannot check that member's users until the reply fits"},
		{"a refused user wins the reason over a reply too large", renderOutcome{Refused: Refusals{"b": "x"},
			TooLarge: map[string]*valkey.ReplyTooLargeError{"vk-a": {Command: "ACL LIST", Limit: 64 << 10}}}, metav1.ConditionFalse, v1alpha1.ReasonUserRefused,
			"user b: refused by Valkey: x (it is left out); member vk-a answered ACL LIST with more than 64 KiB; the controller cannot check that member's users until the reply fits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ACLReadyCondition(tt.in, 3)
			if c.Type != v1alpha1.ConditionACLReady || c.Status != tt.status || c.Reason != tt.reason || c.Message != tt.msg || c.ObservedGeneration != 3 {
				t.Fatalf("got %s %s %q (gen %d)", c.Status, c.Reason, c.Message, c.ObservedGeneration)
			}
		})
	}
}

// A member whose reply is too large is looked at again at the resync period (no wait
// of its own), not at the short retry of a member catching up.
func TestRequeue(t *testing.T) {
	tooLarge := MemberResult{Reachable: true, TooLarge: &valkey.ReplyTooLargeError{Command: "ACL LIST", Limit: 8 << 20}}
	tests := []struct {
		name    string
		results map[string]MemberResult
		rot     rotationResult
		want    time.Duration
	}{
		{"all applied", map[string]MemberResult{"a": {Applied: true}}, rotationResult{}, 0},
		{"a member behind", map[string]MemberResult{"a": {Applied: true}, "b": {Message: "cannot reach"}}, rotationResult{}, retryPending},
		{"a reply too large", map[string]MemberResult{"a": {Applied: true}, "b": tooLarge}, rotationResult{}, 0},
		{"a reply too large and a member behind", map[string]MemberResult{"a": tooLarge, "b": {}}, rotationResult{}, retryPending},
		{"the rotation's next step comes first", map[string]MemberResult{"a": tooLarge, "b": {}}, rotationResult{after: time.Second}, time.Second},
		{"a member behind comes before a later rotation step", map[string]MemberResult{"b": {}}, rotationResult{after: time.Minute}, retryPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scope{results: tt.results}
			if got := requeue(s.pending(), tt.rot); got != tt.want {
				t.Fatalf("requeue after %s, want %s", got, tt.want)
			}
		})
	}
}

func TestACLAppliedCondition(t *testing.T) {
	if c := ACLAppliedCondition(nil, "r1", 1); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonACLPending {
		t.Errorf("no pod IP: %+v", c)
	}
	if c := ACLAppliedCondition(&MemberResult{Applied: true}, "r1", 1); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonACLApplied || c.Message != "the server runs aclfile revision r1" {
		t.Errorf("applied: %+v", c)
	}
	if c := ACLAppliedCondition(&MemberResult{Message: "cannot reach"}, "r1", 1); c.Status != metav1.ConditionFalse || c.Message != "aclfile revision r1 is not live yet: cannot reach" {
		t.Errorf("pending: %+v", c)
	}
}

func TestNextRemoved(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := File{Users: []User{{Name: "alice"}, {Name: "bob"}}}
	prev := []User{{Name: "alice"}, {Name: "carol"}}
	got := nextRemoved(removedUsers{"dave": now.Add(-time.Hour), "bob": now.Add(-time.Hour)}, prev, f, now, false, time.Minute)
	if len(got) != 2 || !got["carol"].Equal(now) || got["dave"].IsZero() {
		t.Fatalf("got %v (bob is back, carol removed now, dave kept)", got)
	}
	pruned := nextRemoved(got, nil, f, now.Add(30*time.Second), true, time.Minute)
	if len(pruned) != 1 || pruned["carol"].IsZero() {
		t.Fatalf("pruned %v: dave is old enough, carol is not", pruned)
	}
	enc := pruned.encode()
	if enc != `{"carol":"2026-01-01T00:00:00Z"}` {
		t.Fatalf("encode %s", enc)
	}
}

func TestApplyOps(t *testing.T) {
	f := File{Users: []User{{Name: "default", Rules: []string{"off"}}, {Name: "alice", Rules: []string{"on", "nopass"}}}, Revision: "r2"}
	ops := applyOps(f, []string{"default", "alice", "carol", "manual", MarkerName("r1")}, []string{"carol", "gone"})
	var got []string
	for _, op := range ops {
		if op.Delete {
			got = append(got, "del "+op.Name)
		} else {
			got = append(got, "set "+op.Name+" "+strings.Join(op.Rules, " "))
		}
	}
	want := []string{"set default reset off", "set alice reset on nopass", "del carol", "del " + MarkerName("r1"), "set " + MarkerName("r2") + " reset off"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("ops\n got %q\nwant %q", got, want)
	}
}
