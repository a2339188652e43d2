package cluster

import (
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// TestTooLargeCause: members the operator cannot read because of a reply too large are
// named with the command, whether the cluster-controller's read failed or the
// node-controller's.
func TestTooLargeCause(t *testing.T) {
	mk := func(name string, err error, cs ...metav1.Condition) *plan.Member {
		m := &plan.Member{Node: &v1alpha1.ValkeyNode{}, Err: err}
		m.Node.Name = name
		m.Node.Status.Conditions = cs
		return m
	}
	tooLarge := fmt.Errorf("cluster nodes: %w", &valkey.ReplyTooLargeError{Addr: "10.0.0.1:6379", Command: "CLUSTER NODES", Limit: 8 << 20})
	infoTooLarge := metav1.Condition{Type: v1alpha1.ConditionPodReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonReplyTooLarge,
		Message: "pod b-0 runs but its server answered INFO with more than 8 MiB: the controller does not read it"}
	for _, tc := range []struct {
		name    string
		members []*plan.Member
		want    string
	}{
		{"none", []*plan.Member{mk("a", errors.New("connection refused"))}, ""},
		{"the cluster-controller's read", []*plan.Member{mk("a", tooLarge), mk("c", errors.New("pod not ready"))},
			"member a answered CLUSTER NODES with more than 8 MiB; the operator cannot read that member's view of the cluster"},
		{"the node-controller's read", []*plan.Member{mk("b", errors.New("pod not ready"), infoTooLarge)}, "member b: " + infoTooLarge.Message},
		{"both", []*plan.Member{mk("a", tooLarge), mk("b", errors.New("pod not ready"), infoTooLarge)},
			"member a answered CLUSTER NODES with more than 8 MiB; the operator cannot read that member's view of the cluster; member b: " + infoTooLarge.Message},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tooLargeCause(tc.members); got != tc.want {
				t.Errorf("tooLargeCause = %q\nwant            %q", got, tc.want)
			}
		})
	}
}
