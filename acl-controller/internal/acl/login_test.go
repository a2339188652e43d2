package acl

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

func TestOperatorLoginCondition(t *testing.T) {
	refusedBefore := conditions.New(v1alpha1.ConditionOperatorLoginRefused, true, v1alpha1.ReasonPasswordRefused, "refused before", 1)
	tests := []struct {
		name   string
		res    *MemberResult
		prev   *metav1.Condition
		status metav1.ConditionStatus
		reason string
		msg    string
	}{
		{name: "a wrong password", res: &MemberResult{Login: loginAnswer{known: true, refused: v1alpha1.ReasonPasswordRefused,
			message: "WRONGPASS invalid username-password pair or user is disabled."}},
			status: metav1.ConditionTrue, reason: v1alpha1.ReasonPasswordRefused,
			msg: "the server refuses the operator's login as _operator (WRONGPASS invalid username-password pair or user is disabled.): " +
				"a client with ACL rights changed that user on this server; the member is restarted so that its server loads the aclfile again"},
		{name: "a command denied", res: &MemberResult{Login: loginAnswer{known: true, refused: v1alpha1.ReasonPermissionDenied,
			message: "NOPERM User _operator has no permissions to run the 'acl|users' command"}},
			status: metav1.ConditionTrue, reason: v1alpha1.ReasonPermissionDenied,
			msg: "the server refuses the operator's login as _operator (NOPERM User _operator has no permissions to run the 'acl|users' command): " +
				"a client with ACL rights changed that user on this server; the member is restarted so that its server loads the aclfile again"},
		{name: "accepted again", res: &MemberResult{Login: loginAnswer{known: true}}, prev: &refusedBefore,
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonLoginAccepted, msg: "the server accepts the operator's login"},
		{name: "not reached: what it had stays", res: &MemberResult{Message: "cannot reach the server: connection refused"}, prev: &refusedBefore,
			status: metav1.ConditionTrue, reason: v1alpha1.ReasonPasswordRefused, msg: "refused before"},
		{name: "not reached, never seen", res: &MemberResult{Message: "cannot reach the server: connection refused"},
			status: metav1.ConditionUnknown, reason: v1alpha1.ReasonUnknown, msg: "the server was not reached yet: cannot reach the server: connection refused"},
		{name: "no pod IP yet", status: metav1.ConditionUnknown, reason: v1alpha1.ReasonUnknown, msg: "waiting for the pod IP"},
		{name: "no pod IP: what it had stays", prev: &refusedBefore, status: metav1.ConditionTrue, reason: v1alpha1.ReasonPasswordRefused, msg: "refused before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := OperatorLoginCondition(tt.res, tt.prev, 3)
			if c.Type != v1alpha1.ConditionOperatorLoginRefused || c.Status != tt.status || c.Reason != tt.reason || c.Message != tt.msg || c.ObservedGeneration != 3 {
				t.Fatalf("got %s %s %q (gen %d)\nwant %s %s %q", c.Status, c.Reason, c.Message, c.ObservedGeneration, tt.status, tt.reason, tt.msg)
			}
		})
	}
}

func TestClusterLoginCondition(t *testing.T) {
	refused := func(msg string) metav1.Condition {
		return conditions.New(v1alpha1.ConditionOperatorLoginRefused, true, v1alpha1.ReasonPasswordRefused, msg, 1)
	}
	accepted := conditions.New(v1alpha1.ConditionOperatorLoginRefused, false, v1alpha1.ReasonLoginAccepted, "", 1)
	unknown := conditions.Unknown(v1alpha1.ConditionOperatorLoginRefused, v1alpha1.ReasonUnknown, "", 1)
	many := map[string]metav1.Condition{}
	for _, n := range []string{"vk-a", "vk-b", "vk-c", "vk-d", "vk-e", "vk-f", "vk-g"} {
		many[n] = refused("WRONGPASS of " + n)
	}
	tests := []struct {
		name    string
		members map[string]metav1.Condition
		status  metav1.ConditionStatus
		reason  string
		msg     string
	}{
		{name: "no member", status: metav1.ConditionFalse, reason: v1alpha1.ReasonLoginAccepted, msg: "no member refuses the operator's login"},
		{name: "every member accepts or is not known", members: map[string]metav1.Condition{"vk-a": accepted, "vk-b": unknown},
			status: metav1.ConditionFalse, reason: v1alpha1.ReasonLoginAccepted, msg: "no member refuses the operator's login"},
		{name: "members refuse: named in order, the first one's answer",
			members: map[string]metav1.Condition{"vk-c": refused("NOPERM of vk-c"), "vk-a": accepted, "vk-b": refused("WRONGPASS of vk-b")},
			status:  metav1.ConditionTrue, reason: v1alpha1.ReasonLoginRefused,
			msg: "2 of 3 members refuse the operator's login (vk-b, vk-c); vk-b: WRONGPASS of vk-b"},
		{name: "at most five named", members: many, status: metav1.ConditionTrue, reason: v1alpha1.ReasonLoginRefused,
			msg: "7 of 7 members refuse the operator's login (vk-a, vk-b, vk-c, vk-d, vk-e and 2 more); vk-a: WRONGPASS of vk-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ClusterLoginCondition(tt.members, 2)
			if c.Type != v1alpha1.ConditionOperatorLoginRefused || c.Status != tt.status || c.Reason != tt.reason || c.Message != tt.msg || c.ObservedGeneration != 2 {
				t.Fatalf("got %s %s %q (gen %d)\nwant %s %s %q", c.Status, c.Reason, c.Message, c.ObservedGeneration, tt.status, tt.reason, tt.msg)
			}
		})
	}
}

// An error that is not the server's (a network error, a timeout) says nothing of the
// login: the member keeps what it had.
func TestAnswerOf(t *testing.T) {
	if a := answerOf(errors.New("dial tcp: connection refused"), false); a.known || a.refused != "" {
		t.Errorf("a network error before the login: got %+v, want unknown", a)
	}
	if a := answerOf(errors.New("i/o timeout"), true); !a.known || a.refused != "" {
		t.Errorf("a network error after the login: got %+v, want accepted", a)
	}
	if a := answerOf(nil, true); !a.known || a.refused != "" {
		t.Errorf("no error: got %+v, want accepted", a)
	}
}
