package acl

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// The operator's own login. A client granted +acl (or +@admin) on a member can change
// the operator's user there (ACL SETUSER _operator with another password, resetpass,
// off, fewer commands) or delete it. While a connection of the controller's is still
// open, the drift check puts the user back (ACL SETUSER keeps open sessions). Once the
// member refuses a new login (WRONGPASS, NOAUTH) or the commands this controller runs
// (NOPERM), nothing can put it back live: its server loads the aclfile, which has the
// operator's user as the published file says, only when it starts.
//
// So each pass records what each member answered the operator's login in the member's
// OperatorLoginRefused condition: True with the server's answer while it refuses, False
// once it accepts; a member not reached this pass keeps what it had. The
// cluster-controller reads it and restarts the member (after a failover when it is a
// primary). The cluster's OperatorLoginRefused names the members that refuse, and two
// events tell the story on the cluster: OperatorLoginRefused (Warning) when a member
// starts refusing, OperatorLoginRecovered when it accepts again. The server's answer
// holds no password (WRONGPASS and NOPERM name the user or the command only).

// loginAnswer is what a member answered the operator's login in a pass.
type loginAnswer struct {
	// known: the member answered (the login, or a command after it); false when it was
	// not reached (no pod IP, a network error).
	known bool
	// refused is the member's OperatorLoginRefused reason when it refuses ("" when it
	// accepts); message is the server's answer.
	refused, message string
}

// loginRefusal returns the reason and the server's answer when err is a member refusing
// the operator's login or a command this controller needs.
func loginRefusal(err error) (reason, message string, ok bool) {
	msg, isServer := valkey.ServerMessage(err)
	switch {
	case !isServer:
		return "", "", false
	case strings.HasPrefix(msg, "WRONGPASS"), strings.HasPrefix(msg, "NOAUTH"):
		return v1alpha1.ReasonPasswordRefused, msg, true
	case strings.HasPrefix(msg, "NOPERM"):
		return v1alpha1.ReasonPermissionDenied, msg, true
	}
	return "", "", false
}

// answerOf reads a member's answer from the pass's result on it: err is the error that
// ended the work on it (nil when none), loggedIn whether a command after the login
// succeeded.
func answerOf(err error, loggedIn bool) loginAnswer {
	if reason, msg, ok := loginRefusal(err); ok {
		return loginAnswer{known: true, refused: reason, message: msg}
	}
	return loginAnswer{known: loggedIn}
}

// OperatorLoginCondition computes a member's OperatorLoginRefused (pure). res is nil
// when the member has no pod IP; prev is the member's current condition (nil when none):
// a member not reached keeps it.
func OperatorLoginCondition(res *MemberResult, prev *metav1.Condition, gen int64) metav1.Condition {
	switch {
	case res != nil && res.Login.refused != "":
		return conditions.New(v1alpha1.ConditionOperatorLoginRefused, true, res.Login.refused, fmt.Sprintf(
			"the server refuses the operator's login as %s (%s): a client with ACL rights changed that user on this server; "+
				"the member is restarted so that its server loads the aclfile again", v1alpha1.UserOperator, res.Login.message), gen)
	case res != nil && res.Login.known:
		return conditions.New(v1alpha1.ConditionOperatorLoginRefused, false, v1alpha1.ReasonLoginAccepted,
			"the server accepts the operator's login", gen)
	case prev != nil:
		kept := *prev
		kept.ObservedGeneration = gen
		return kept
	case res == nil:
		return conditions.Unknown(v1alpha1.ConditionOperatorLoginRefused, v1alpha1.ReasonUnknown, "waiting for the pod IP", gen)
	}
	return conditions.Unknown(v1alpha1.ConditionOperatorLoginRefused, v1alpha1.ReasonUnknown, "the server was not reached yet: "+res.Message, gen)
}

// loginListMax is how many members the cluster's condition names.
const loginListMax = 5

// ClusterLoginCondition computes the cluster's OperatorLoginRefused from its members'
// (pure): True naming the members that refuse, with the first one's answer.
func ClusterLoginCondition(members map[string]metav1.Condition, gen int64) metav1.Condition {
	var refused []string
	for name, c := range members {
		if c.Status == metav1.ConditionTrue {
			refused = append(refused, name)
		}
	}
	if len(refused) == 0 {
		return conditions.New(v1alpha1.ConditionOperatorLoginRefused, false, v1alpha1.ReasonLoginAccepted,
			"no member refuses the operator's login", gen)
	}
	slices.Sort(refused)
	names := strings.Join(refused[:min(len(refused), loginListMax)], ", ")
	if len(refused) > loginListMax {
		names += fmt.Sprintf(" and %d more", len(refused)-loginListMax)
	}
	first := members[refused[0]]
	return conditions.New(v1alpha1.ConditionOperatorLoginRefused, true, v1alpha1.ReasonLoginRefused, fmt.Sprintf(
		"%d of %d members refuse the operator's login (%s); %s: %s", len(refused), len(members), names, refused[0], first.Message), gen)
}

// reportLogin tells, on the cluster, a member that starts refusing the operator's
// login (Warning OperatorLoginRefused, with the server's answer) and one that accepts it
// again (OperatorLoginRecovered). prev and next are the member's condition before and
// after the pass.
func reportLogin(rec events.EventRecorder, vc *v1alpha1.ValkeyCluster, vn *v1alpha1.ValkeyNode, prev *metav1.Condition, next metav1.Condition, answer loginAnswer) {
	wasRefused := prev != nil && prev.Status == metav1.ConditionTrue
	switch {
	case next.Status == metav1.ConditionTrue && !wasRefused:
		rec.Eventf(vc, vn, corev1.EventTypeWarning, "OperatorLoginRefused", "Login",
			"member %s refuses the operator's login as %s (%s): a client with ACL rights changed that user there; "+
				"the member is restarted so that its server loads the aclfile again", vn.Name, v1alpha1.UserOperator, answer.message)
	case next.Status == metav1.ConditionFalse && wasRefused:
		rec.Eventf(vc, vn, corev1.EventTypeNormal, "OperatorLoginRecovered", "Login",
			"member %s accepts the operator's login as %s again", vn.Name, v1alpha1.UserOperator)
	}
}
