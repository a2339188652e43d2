package cluster

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// causeNode is a member whose conditions are given as type, status, reason, message and
// transition time.
func causeNode(name string, at time.Time, conds ...[4]string) *v1alpha1.ValkeyNode {
	vn := &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, c := range conds {
		vn.Status.Conditions = append(vn.Status.Conditions, metav1.Condition{Type: c[0], Status: metav1.ConditionStatus(c[1]),
			Reason: c[2], Message: c[3], LastTransitionTime: metav1.NewTime(at)})
	}
	return vn
}

func TestMemberCauses(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	refused := [4]string{v1alpha1.ConditionConfigApplied, "False", v1alpha1.ReasonConfigRefused, "the server refused maxmemory-policy: ERR invalid"}
	down := [4]string{v1alpha1.ConditionServerDown, "True", v1alpha1.ReasonContainerExited, "container server exited with code 1"}
	pull := [4]string{v1alpha1.ConditionPodReady, "False", v1alpha1.ReasonImagePullBackOff, "cannot pull image nope:1"}
	pending := [4]string{v1alpha1.ConditionPodReady, "False", v1alpha1.ReasonPodPending, "waiting to be scheduled"}
	leaving := causeNode("vk-z", t0, down)
	leaving.DeletionTimestamp = &metav1.Time{Time: t0}
	var many []*v1alpha1.ValkeyNode
	for i := range 7 {
		many = append(many, causeNode(fmt.Sprintf("vk-%d", i), t0.Add(time.Duration(i)*time.Second), refused))
	}
	for _, tc := range []struct {
		name  string
		nodes []*v1alpha1.ValkeyNode
		want  []string
	}{
		{"nothing wrong", []*v1alpha1.ValkeyNode{causeNode("vk-a", t0, pending)}, nil},
		{"one cause per reason, members sorted, the newest transition", []*v1alpha1.ValkeyNode{
			causeNode("vk-c", t0.Add(2*time.Second), refused), causeNode("vk-a", t0, refused, down), causeNode("vk-b", t0, pull), leaving,
		}, []string{
			"ConfigRefused 10:00:02: 2 members (vk-a, vk-c): the server refused maxmemory-policy: ERR invalid",
			"ImagePullBackOff 10:00:00: 1 member (vk-b): cannot pull image nope:1",
			"ServerDown 10:00:00: 1 member (vk-a): container server exited with code 1",
		}},
		{"a server's quoted secret, in a status an older node-controller wrote, is not repeated", []*v1alpha1.ValkeyNode{
			causeNode("vk-a", t0, [4]string{v1alpha1.ConditionPodReady, "False", v1alpha1.ReasonCrashLoop,
				"'primaryauth s3cret': Bad directive or wrong number of arguments (container server of pod vk-a-0 restarted 3 times; exited with code 1)"}),
		}, []string{
			"CrashLoop 10:00:00: 1 member (vk-a): 'primaryauth <redacted>': Bad directive or wrong number of arguments (container server of pod vk-a-0 restarted 3 times; exited with code 1)",
		}},
		{"a server that is not Valkey 8.0+", []*v1alpha1.ValkeyNode{
			causeNode("vk-a", t0, [4]string{v1alpha1.ConditionPodReady, "False", v1alpha1.ReasonUnsupportedServer,
				"this image's valkey-server is Redis 7.0.15; the operator runs Valkey 8.0 or later"}),
		}, []string{
			"UnsupportedServer 10:00:00: 1 member (vk-a): this image's valkey-server is Redis 7.0.15; the operator runs Valkey 8.0 or later",
		}},
		{"names bounded", many, []string{
			"ConfigRefused 10:00:06: 7 members (vk-0, vk-1, vk-2, vk-3, vk-4 and 2 more): the server refused maxmemory-policy: ERR invalid",
		}},
	} {
		var got []string
		for _, c := range memberCauses(tc.nodes) {
			got = append(got, c.reason+" "+c.entered.Format("15:04:05")+": "+c.note()[len(c.reason)+2:])
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestCauseLogStep(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cause := func(entered time.Time, members ...string) []memberCause {
		return []memberCause{{reason: EventServerDown, members: members, entered: entered}}
	}
	l := &causeLog{told: map[string]time.Time{}, settling: map[string]settling{}}
	step := func(causes []memberCause, now time.Time) (int, time.Duration) {
		tell, after := l.step(causes, now)
		return len(tell), after
	}
	check := func(what string, n int, after time.Duration, wantN int, wantAfter time.Duration) {
		t.Helper()
		if n != wantN || after != wantAfter {
			t.Errorf("%s: told %d, next look %s; want %d, %s", what, n, after, wantN, wantAfter)
		}
	}
	n, after := step(cause(t0, "a"), t0)
	check("a new cause settles first", n, after, 0, causeSettle)
	n, after = step(cause(t0, "a", "b"), t0.Add(2*time.Second))
	check("a member more: it settles again", n, after, 0, causeSettle)
	n, after = step(cause(t0, "a", "b"), t0.Add(7*time.Second))
	check("settled: told", n, after, 1, 0)
	n, after = step(cause(t0, "a", "b", "c"), t0.Add(9*time.Second))
	check("a member that entered before the event: not told again", n, after, 0, 0)
	n, after = step(nil, t0.Add(10*time.Second))
	check("gone", n, after, 0, 0)
	n, after = step(cause(t0.Add(20*time.Second), "a"), t0.Add(20*time.Second))
	check("a member enters anew", n, after, 0, causeSettle)
	n, after = step(nil, t0.Add(22*time.Second))
	check("cleared before it settled", n, after, 0, 0)
	n, after = step(cause(t0.Add(20*time.Second), "a"), t0.Add(30*time.Second))
	n2, _ := step(cause(t0.Add(20*time.Second), "a"), t0.Add(36*time.Second))
	check("back again: told once settled", n+n2, after, 1, causeSettle)
}
