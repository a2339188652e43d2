package cluster

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
)

func TestParseFailoverRequest(t *testing.T) {
	cases := []struct {
		value  string
		want   failoverRequest
		refuse bool
	}{
		{value: "1", want: failoverRequest{shard: 1}},
		{value: " 2/vk-abc ", want: failoverRequest{shard: 2, member: "vk-abc"}},
		{value: "0@2026-11-29T12:00:00Z", want: failoverRequest{shard: 0}},
		{value: "3/vk-abc@7", want: failoverRequest{shard: 3, member: "vk-abc"}},
		{value: "0/", want: failoverRequest{shard: 0}},
		{value: "1x/vk", refuse: true},
		{value: "", refuse: true},
		{value: "-1", refuse: true},
		{value: "one", refuse: true},
		{value: "@1", refuse: true},
	}
	for _, c := range cases {
		got, err := parseFailoverRequest(c.value)
		if (err != nil) != c.refuse || got != c.want {
			t.Errorf("parseFailoverRequest(%q) = %+v, %v; want %+v, refused %v", c.value, got, err, c.want, c.refuse)
		}
	}
}

// TestSeenFailoverRequest: a value status does not answer is a new request, Pending;
// an answered value is not asked again; removing the annotation withdraws an open
// request and keeps an answered one on record.
func TestSeenFailoverRequest(t *testing.T) {
	answered := &v1alpha1.FailoverRequestStatus{Request: "1@a", Phase: v1alpha1.FailoverRequestDone, Target: "vk-b"}
	open := &v1alpha1.FailoverRequestStatus{Request: "1@a", Phase: v1alpha1.FailoverRequestInProgress, Target: "vk-b"}
	cases := []struct {
		name       string
		annotation *string
		status     *v1alpha1.FailoverRequestStatus
		want       *v1alpha1.FailoverRequestStatus
	}{
		{name: "no request", want: nil},
		{name: "a new value", annotation: ptr.To("1@a"),
			want: &v1alpha1.FailoverRequestStatus{Request: "1@a", Phase: v1alpha1.FailoverRequestPending, Message: "waiting for the cluster-controller to act on it"}},
		{name: "a value after an answered one", annotation: ptr.To("1@b"), status: answered,
			want: &v1alpha1.FailoverRequestStatus{Request: "1@b", Phase: v1alpha1.FailoverRequestPending, Message: "waiting for the cluster-controller to act on it"}},
		{name: "the answered value", annotation: ptr.To("1@a"), status: answered, want: answered},
		{name: "the value in progress", annotation: ptr.To("1@a"), status: open, want: open},
		{name: "annotation removed after the answer", status: answered, want: answered},
		{name: "annotation removed before the answer", status: open, want: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vc := plantest.Cluster(nil)
			if c.annotation != nil {
				vc.Annotations = map[string]string{v1alpha1.AnnotationFailover: *c.annotation}
			}
			vc.Status.Failover = c.status
			got := seenFailoverRequest(vc)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
			if got != nil && got == c.status {
				t.Error("the pass changes the status the cluster was read with")
			}
		})
	}
}

// TestFailoverRequestStatusTransitionTime: the time moves with the phase only.
func TestFailoverRequestStatusTransitionTime(t *testing.T) {
	before := metav1.NewTime(plantest.T0.Add(-time.Minute))
	vc := plantest.Cluster(nil)
	vc.Status.Failover = &v1alpha1.FailoverRequestStatus{Request: "1", Phase: v1alpha1.FailoverRequestPending, LastTransitionTime: &before}
	s := &scope{Cluster: plan.Cluster{VC: vc, Topo: &plan.Topology{Now: plantest.T0}}}
	s.failoverReq = &v1alpha1.FailoverRequestStatus{Request: "1", Phase: v1alpha1.FailoverRequestPending, Message: "waiting for a replica in sync"}
	if got := failoverRequestStatus(s); !got.LastTransitionTime.Equal(&before) {
		t.Errorf("same phase: transition at %v, want %v", got.LastTransitionTime, before)
	}
	s.failoverReq.Phase = v1alpha1.FailoverRequestInProgress
	if got := failoverRequestStatus(s); !got.LastTransitionTime.Time.Equal(plantest.T0) {
		t.Errorf("new phase: transition at %v, want %v", got.LastTransitionTime, plantest.T0)
	}
	s.failoverReq = nil
	if got := failoverRequestStatus(s); got != nil {
		t.Errorf("no request: %+v", got)
	}
}

// TestFailoverRecordReadsLegacyAnnotations: a failover an earlier version of the
// controller recorded in a member's annotations is read as a record, until the status
// holds one.
func TestFailoverRecordReadsLegacyAnnotations(t *testing.T) {
	m := &plan.Member{Node: &v1alpha1.ValkeyNode{}}
	if _, ok := plan.FailoverRecord(m); ok {
		t.Fatal("a member with neither has a record")
	}
	m.Node.Annotations = map[string]string{plan.LegacyFailoverAt: plantest.T0.Add(-time.Second).Format(time.RFC3339Nano), plan.LegacyFailoverKind: kindForced}
	f, ok := plan.FailoverRecord(m)
	if !ok || f.Kind != v1alpha1.FailoverForced || !f.RequestedAt.Time.Equal(plantest.T0.Add(-time.Second)) || metricKind(f) != kindForced {
		t.Fatalf("legacy record = %+v, %v", f, ok)
	}
	delete(m.Node.Annotations, plan.LegacyFailoverKind)
	if f, _ := plan.FailoverRecord(m); f.Kind != v1alpha1.FailoverPlanned || metricKind(f) != kindPlanned {
		t.Errorf("legacy record without a kind = %+v, want planned", f)
	}
	m.Node.Status.Failover = &v1alpha1.MemberFailover{Kind: v1alpha1.FailoverPlanned, RequestedAt: metav1.NewMicroTime(plantest.T0)}
	if f, _ := plan.FailoverRecord(m); !f.RequestedAt.Time.Equal(plantest.T0) {
		t.Errorf("the status record does not win: %+v", f)
	}
}
