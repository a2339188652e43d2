package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
)

// The members' causes as a user reads them on the ValkeyCluster (the real API server's
// events): each cause once for several members, not again on the passes after nor after
// a restart of the controller, and again when a member enters it anew. The passes are
// the reconciler's own reporting step with members as the node-controller reports them
// (envtest runs no kubelet to make a member's config refused or its server exit).
var _ = Describe("Member causes on the cluster's events", Ordered, func() {
	var (
		ns     string
		vc     *v1alpha1.ValkeyCluster
		r      *Reconciler
		stop   func()
		offset time.Duration // the controller's clock runs ahead, so a cause settles without a sleep
		nodes  []*v1alpha1.ValkeyNode
	)
	start := func() {
		mgr := (&env{ns: ns}).manager()
		r = &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
			Recorder: mgr.GetEventRecorder(FieldManager), Clock: func() time.Time { return time.Now().Add(offset) }}
		stop = run(mgr)
	}
	// passes runs the reporting step of a few passes, the clock past the settle time.
	passes := func() {
		for range 3 {
			r.reportMemberCauses(context.Background(), vc, nodes)
			offset += causeSettle/2 + time.Second
		}
	}
	// told returns the notes of the cluster's events of a reason.
	told := func(reason string) []string {
		var list eventsv1.EventList
		Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "ValkeyCluster" && e.Regarding.Name == vc.Name && e.Reason == reason {
				Expect(e.Type).To(Equal(corev1.EventTypeWarning), "event %s", reason)
				out = append(out, e.Note)
			}
		}
		return out
	}
	member := func(name string, entered time.Time, typ, st, reason, msg string) *v1alpha1.ValkeyNode {
		return &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status: v1alpha1.ValkeyNodeStatus{Conditions: []metav1.Condition{{Type: typ, Status: metav1.ConditionStatus(st),
				Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(entered)}}}}
	}
	BeforeAll(func() {
		ns = fmt.Sprintf("cc-causes-%d", time.Now().UnixNano()%1e9)
		Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		vc = &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ev"}}
		Expect(k8s.Create(context.Background(), vc)).To(Succeed())
		start()
		DeferCleanup(func() { stop() })
		now := time.Now()
		refused := "the server refused maxmemory-policy: ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following"
		for _, n := range []string{"ev-a", "ev-b", "ev-c"} {
			nodes = append(nodes, member(n, now, v1alpha1.ConditionConfigApplied, "False", v1alpha1.ReasonConfigRefused, refused))
		}
		for _, n := range []string{"ev-d", "ev-e"} {
			nodes = append(nodes, member(n, now, v1alpha1.ConditionServerDown, "True", v1alpha1.ReasonContainerExited,
				"container server of pod "+n+"-0 exited with code 1"))
		}
		// The successors of a roll that cannot pull their image.
		for _, n := range []string{"ev-f", "ev-g"} {
			nodes = append(nodes, member(n, now, v1alpha1.ConditionPodReady, "False", v1alpha1.ReasonImagePullBackOff,
				"pod "+n+"-0 cannot pull image registry.invalid/valkey:9"))
		}
	})

	It("tells each cause once, for all the members that have it", func() {
		passes()
		Eventually(func(g Gomega) {
			g.Expect(told(EventConfigRefused)).To(ConsistOf(HavePrefix("ConfigRefused: 3 members (ev-a, ev-b, ev-c): the server refused maxmemory-policy")))
			g.Expect(told(EventServerDown)).To(ConsistOf(HavePrefix("ServerDown: 2 members (ev-d, ev-e): container server of pod ev-d-0 exited")))
			g.Expect(told(v1alpha1.ReasonImagePullBackOff)).To(ConsistOf(HavePrefix("ImagePullBackOff: 2 members (ev-f, ev-g): pod ev-f-0 cannot pull")))
		}).Should(Succeed(), "one event per cause on the cluster")
		Consistently(func(g Gomega) {
			passes()
			for _, reason := range []string{EventConfigRefused, EventServerDown, v1alpha1.ReasonImagePullBackOff} {
				g.Expect(told(reason)).To(HaveLen(1), "events %s", reason)
			}
		}).WithTimeout(3*time.Second).WithPolling(500*time.Millisecond).Should(Succeed(), "no event again on later passes")
	})

	It("tells a blocked roll once", func() {
		blocked := metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRollBlocked,
			Message: "shard 1: the roll is blocked: successor ev-f cannot run (ImagePullBackOff: the pod does not run); the old members keep serving"}
		s := &scope{Cluster: plan.Cluster{VC: vc.DeepCopy()}}
		r.warnOnTransitions(s, []metav1.Condition{blocked})
		s.VC.Status.Conditions = []metav1.Condition{blocked} // what the next pass reads
		r.warnOnTransitions(s, []metav1.Condition{blocked})
		Eventually(func() []string { return told(v1alpha1.ReasonRollBlocked) }).Should(ConsistOf(HavePrefix("shard 1: the roll is blocked")))
		Consistently(func() []string { return told(v1alpha1.ReasonRollBlocked) }).WithTimeout(2 * time.Second).Should(HaveLen(1))
	})

	It("does not tell them again after a restart of the controller", func() {
		stop()
		start()
		Consistently(func(g Gomega) {
			passes()
			for _, reason := range []string{EventConfigRefused, EventServerDown, v1alpha1.ReasonImagePullBackOff} {
				g.Expect(told(reason)).To(HaveLen(1), "events %s", reason)
			}
		}).WithTimeout(3*time.Second).WithPolling(500*time.Millisecond).Should(Succeed(), "no event again after the restart")
	})

	It("tells a cause again when a member enters it anew", func() {
		// ev-d's server came back and exited again: a later transition.
		nodes[3] = member("ev-d", time.Now().Add(2*time.Second), v1alpha1.ConditionServerDown, "True", v1alpha1.ReasonContainerExited,
			"container server of pod ev-d-0 exited with code 137 after signal 9")
		passes()
		Eventually(func() []string { return told(EventServerDown) }).Should(HaveLen(2), "a second ServerDown event")
		for _, note := range append(told(EventServerDown), told(EventConfigRefused)...) {
			Expect(strings.Count(note, "ev-")).To(BeNumerically("<=", maxNamedMembers+2), "member names are bounded: %s", note)
		}
	})
})
