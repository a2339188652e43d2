package cluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// TestStuckCause: the cluster names what keeps its members from starting, from their
// own PodReady and StorageReady conditions: the most common cause, how many members
// share it, and one of their messages.
func TestStuckCause(t *testing.T) {
	cond := func(typ, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	mk := func(name string, cs ...metav1.Condition) *plan.Member {
		m := &plan.Member{Node: &v1alpha1.ValkeyNode{}}
		m.Node.Name = name
		m.Node.Status.Conditions = cs
		return m
	}
	pull := cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonImagePullBackOff, `pod a-0 cannot pull image 10.99.0.1:1/nope:1 of container server: Back-off pulling image "10.99.0.1:1/nope:1"`)
	for _, tc := range []struct {
		name    string
		members []*plan.Member
		reason  string
		msg     string
	}{
		{"nothing blocked", []*plan.Member{mk("a", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonPodPending, "starting"))}, "", ""},
		{"six members cannot pull the image", []*plan.Member{mk("a", pull), mk("b", pull), mk("c", pull), mk("d", pull), mk("e", pull), mk("f", pull)},
			v1alpha1.ReasonImagePullBackOff, "ImagePullBackOff: 6 members cannot run (a, b, c, d, e, f): pod a-0 cannot pull image 10.99.0.1:1/nope:1"},
		{"the missing StorageClass, behind the pods it keeps Pending", []*plan.Member{mk("a",
			cond(v1alpha1.ConditionStorageReady, v1alpha1.ReasonStorageClassNotFound, "StorageClass gp3 not found"),
			cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonPodUnschedulable, "pod has unbound immediate PersistentVolumeClaims"))},
			v1alpha1.ReasonStorageClassNotFound, "StorageClassNotFound: 1 member cannot run (a): StorageClass gp3 not found"},
		{"a server that is not Valkey 8.0+", []*plan.Member{
			mk("a", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonUnsupportedServer, "this image's valkey-server is Redis 7.0.15; the operator runs Valkey 8.0 or later")),
			mk("b", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonUnsupportedServer, "this image's valkey-server is Redis 7.0.15; the operator runs Valkey 8.0 or later"))},
			v1alpha1.ReasonUnsupportedServer, "UnsupportedServer: 2 members cannot run (a, b): this image's valkey-server is Redis 7.0.15; the operator runs Valkey 8.0 or later"},
		{"a quoted secret in a member's message is not repeated", []*plan.Member{
			mk("a", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonCrashLoop, ">>> 'masterauth s3cret'"))},
			v1alpha1.ReasonCrashLoop, "CrashLoop: 1 member cannot run (a): >>> 'masterauth <redacted>'"},
		{"the cause most members share", []*plan.Member{
			mk("a", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonCrashLoop, "Bad directive")),
			mk("b", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonPriorityClassNotFound, "PriorityClass high not found")),
			mk("c", cond(v1alpha1.ConditionPodReady, v1alpha1.ReasonPriorityClassNotFound, "PriorityClass high not found"))},
			v1alpha1.ReasonPriorityClassNotFound, "PriorityClassNotFound: 2 members cannot run (b, c): PriorityClass high not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg, ok := stuckCause(tc.members)
			if ok != (tc.reason != "") || reason != tc.reason || !strings.HasPrefix(msg, tc.msg) {
				t.Errorf("stuckCause = %v %q %q, want %q %q", ok, reason, msg, tc.reason, tc.msg)
			}
		})
	}
}

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

// TestPlanEmpty: the slots of a cluster whose answering servers serve none are given
// out only on positive evidence that nothing is there to lose, and as lost data only for
// a cluster that has been Ready.
func TestPlanEmpty(t *testing.T) {
	// fresh is a 3x1 cluster of new servers: none serves a slot, none holds a key.
	fresh := func() []plantest.FakeMember {
		var out []plantest.FakeMember
		for _, f := range plantest.HealthyThreeByOne() {
			f.Slots, f.Primary, f.LinkUp, f.Joining = "", "", false, true
			out = append(out, f)
		}
		return out
	}
	// restarted is fresh after the cluster was Ready: every member active before.
	restarted := func() []plantest.FakeMember {
		var out []plantest.FakeMember
		for _, f := range fresh() {
			f.Joining = false
			out = append(out, f)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		fms   []plantest.FakeMember
		ready bool // the cluster has been Ready
		want  string
	}{
		{name: "a new cluster whose servers all answer: the slots are assigned as new", fms: fresh(),
			want: "assign a, b, c"},
		{name: "a new cluster with a member slow to answer: wait, it may already hold slots", fms: plantest.With(fresh(), "a2", func(f *plantest.FakeMember) { f.Down = true }),
			want: "wait WaitingForPods: waiting for the servers of a2 before assigning slots"},
		{name: "during formation the primaries given slots went silent and their replicas do not know it yet: no second assignment",
			fms:  plantest.With(plantest.With(plantest.With(fresh(), "a", func(f *plantest.FakeMember) { f.Down = true }), "b", func(f *plantest.FakeMember) { f.Down = true }), "c", func(f *plantest.FakeMember) { f.Down = true }),
			want: "wait WaitingForPods: waiting for the servers of a, b, c before assigning slots"},
		{name: "members active before but a cluster never Ready: assigned as new, no data was served", fms: restarted(),
			want: "assign a, b, c"},
		{name: "a cluster that was Ready, every server back empty: the slots are given again, the data is lost", fms: restarted(), ready: true,
			want: "lost a, b, c"},
		{name: "a cluster that was Ready with a member that does not answer: wait for it",
			fms: plantest.With(restarted(), "b2", func(f *plantest.FakeMember) { f.Down = true }), ready: true,
			want: "wait SlotsUncovered: no server that answers serves a slot; waiting for b2 to answer before concluding that the data is lost"},
		{name: "a cluster that was Ready with a member holding keys: no slot is given while its data has no place",
			fms: plantest.With(restarted(), "c2", func(f *plantest.FakeMember) { f.Keys = 40 }), ready: true,
			want: "wait SlotsUncovered: no server serves a slot, but c2 (40 keys) hold data: the slots are not assigned again while a member holds keys no slot map places"},
		{name: "a leaving member that does not answer does not hold the decision",
			fms: plantest.With(restarted(), "c2", func(f *plantest.FakeMember) { f.Down, f.Leaving = true, true }), ready: true,
			want: "lost a, b, c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scopeFor(t, plantest.Cluster(nil), tc.fms)
			if tc.ready {
				wasReady(s)
			}
			p := s.planEmpty()
			got := "wait " + p.reason + ": " + p.wait
			if p.wait == "" {
				names := make([]string, len(p.primaries))
				for i, m := range p.primaries {
					names[i] = m.Name()
				}
				got = "assign " + strings.Join(names, ", ")
				if p.lost {
					got = "lost " + strings.Join(names, ", ")
				}
			}
			if got != tc.want {
				t.Errorf("planEmpty:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
