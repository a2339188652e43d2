package cluster

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// annotate sets (value != "") or removes an annotation of a cluster, as kubectl valkey does.
func (e *env) annotate(name, key, value string) {
	GinkgoHelper()
	vc := e.cluster(Default, name)
	base := vc.DeepCopy()
	if vc.Annotations == nil {
		vc.Annotations = map[string]string{}
	}
	if value == "" {
		delete(vc.Annotations, key)
	} else {
		vc.Annotations[key] = value
	}
	Expect(k8s.Patch(context.Background(), vc, client.MergeFrom(base))).To(Succeed())
}

// recordWatch collects the kinds of status.failover a member showed, from a watch, so a
// record that lasts a fraction of a second is seen.
type recordWatch struct {
	stop  func()
	mu    sync.Mutex
	kinds []v1alpha1.FailoverKind
}

// watchFailoverRecords watches the member's status.failover until Stop.
func (e *env) watchFailoverRecords(member string) *recordWatch {
	GinkgoHelper()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: k8s.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(context.Background(), &v1alpha1.ValkeyNodeList{}, client.InNamespace(e.ns))
	Expect(err).NotTo(HaveOccurred())
	rw := &recordWatch{stop: w.Stop}
	go func() {
		for ev := range w.ResultChan() {
			if vn, ok := ev.Object.(*v1alpha1.ValkeyNode); ok && vn.Name == member && vn.Status.Failover != nil {
				rw.mu.Lock()
				rw.kinds = append(rw.kinds, vn.Status.Failover.Kind)
				rw.mu.Unlock()
			}
		}
	}()
	return rw
}

// Stop ends the watch and returns the kinds seen.
func (rw *recordWatch) Stop() []v1alpha1.FailoverKind {
	rw.stop()
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.kinds
}

// capture saves the cluster as the API returns it into $STATUS_CAPTURE_DIR/<file>.json,
// when set: the e2e module's health tests (kstatus, the Argo CD script) read such
// objects from e2e/health/testdata.
func (e *env) capture(name, file string) {
	dir := os.Getenv("STATUS_CAPTURE_DIR")
	if dir == "" {
		return
	}
	vc := e.cluster(Default, name)
	vc.ManagedFields, vc.UID, vc.ResourceVersion = nil, "", ""
	vc.APIVersion, vc.Kind = v1alpha1.GroupVersion.String(), "ValkeyCluster"
	b, err := json.MarshalIndent(vc, "", "  ")
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, file+".json"), append(b, '\n'), 0o644)).To(Succeed())
}

var _ = Describe("Requests through annotations", func() {
	var e *env
	ctx := context.Background()

	BeforeEach(func() { e = newEnv() })

	It("fails over on request, holds planned changes while paused but heals, and restarts shard by shard", Label("slow"), func() {
		e.createCluster("ops", 2, 1, func(s *v1alpha1.ValkeyClusterSpec) { s.WorkloadType = v1alpha1.WorkloadPod })
		e.expectReady("ops", time.Minute)
		e.capture("ops", "ready")

		By("failing shard 1 over to its replica on request, once, answered in status")
		old := e.member(Default, "ops", 1, true).Name
		replica := e.member(Default, "ops", 1, false).Name
		records := e.watchFailoverRecords(replica)
		first := "1/" + replica + "@1"
		e.annotate("ops", v1alpha1.AnnotationFailover, first)
		annotations := e.cluster(Default, "ops").Annotations
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "ops")
			g.Expect(vc.Status.Failover).To(PointTo(MatchFields(IgnoreExtras, Fields{
				"Request": Equal(first), "Shard": PointTo(BeEquivalentTo(1)), "Target": Equal(replica),
				"Phase": Equal(v1alpha1.FailoverRequestDone), "Message": Equal(replica + " serves shard 1"),
			})))
			g.Expect(vc.Status.Shards[1].Primary).To(Equal(replica))
			g.Expect(vc.Status.Shards[1].Replicas).To(ConsistOf(old))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(e.cluster(Default, "ops").Annotations).To(Equal(annotations), "the operator wrote the user's annotations")
		Expect(records.Stop()).To(ContainElement(v1alpha1.FailoverPlanned), "the replica's status.failover while it took over")
		e.expectReady("ops", 30*time.Second)
		for _, vn := range e.members(Default, "ops") {
			Expect(vn.Status.Failover).To(BeNil(), "member %s keeps a failover record", vn.Name)
		}
		Expect(e.failovers("ops", 2)).To(Equal([]int{0, 1}))

		By("a new value is a new request: without a member named, the most caught-up replica takes over")
		second := "1@2"
		e.annotate("ops", v1alpha1.AnnotationFailover, second)
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "ops")
			g.Expect(vc.Status.Failover).To(PointTo(MatchFields(IgnoreExtras, Fields{
				"Request": Equal(second), "Target": Equal(old), "Phase": Equal(v1alpha1.FailoverRequestDone),
			})))
			g.Expect(vc.Status.Shards[1].Primary).To(Equal(old))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		e.expectReady("ops", 30*time.Second)
		Expect(e.failovers("ops", 2)).To(Equal([]int{0, 2}))

		By("refusing a request it cannot carry out, in status")
		e.annotate("ops", v1alpha1.AnnotationFailover, "7")
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "ops")
			g.Expect(vc.Status.Failover).To(PointTo(MatchFields(IgnoreExtras, Fields{
				"Request": Equal("7"), "Phase": Equal(v1alpha1.FailoverRequestRefused), "Message": Equal("the cluster has 2 shards (0 to 1)"),
			})))
			g.Expect(vc.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationFailover, "7"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(e.failovers("ops", 2)).To(Equal([]int{0, 2}))

		By("pausing: a change that rolls and a restart wait")
		e.annotate("ops", v1alpha1.AnnotationPaused, "true")
		Eventually(func(g Gomega) {
			c := conditions.Get(e.cluster(g, "ops").Status.Conditions, v1alpha1.ConditionPaused)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		e.update("ops", withNewResources)
		restartAt := time.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
		e.annotate("ops", v1alpha1.AnnotationRestartedAt, restartAt)
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "ops")
			p := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionProgressing)
			g.Expect(p.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(p.Reason).To(Equal(v1alpha1.ReasonPaused))
			g.Expect(p.ObservedGeneration).To(Equal(vc.Generation))
			g.Expect(conditions.Get(vc.Status.Conditions, v1alpha1.ConditionReconciling).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(vc.Status.ObservedGeneration).To(BeNumerically("<", vc.Generation))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		e.capture("ops", "paused")
		before := names(e.members(Default, "ops"))
		Consistently(func(g Gomega) {
			g.Expect(names(e.members(g, "ops"))).To(Equal(before))
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("healing while paused: a lost replica is replaced with the applied spec")
		lost := e.member(Default, "ops", 0, false)
		Expect(e.kubelet.deletePod(ctx, &lost)).To(Succeed())
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "ops")
			g.Expect(vc.Status.ReadyShards).To(Equal(int32(2)))
			g.Expect(e.member(g, "ops", 0, false).Name).NotTo(Equal(lost.Name))
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&lost), &v1alpha1.ValkeyNode{})).To(Satisfy(apierrors.IsNotFound))
		for _, vn := range e.members(Default, "ops") {
			Expect(hasNewResources(vn)).To(BeFalse(), "member %s got the new spec while paused", vn.Name)
			if slices.Contains(before, vn.Name) {
				// The replacement's pod is new anyway: built after the restart was asked.
				Expect(vn.Spec.RestartedAt).To(BeEmpty(), "member %s restarted while paused", vn.Name)
			}
		}

		By("resuming: the change and the restart roll together, one failover per shard")
		e.annotate("ops", v1alpha1.AnnotationPaused, "")
		Eventually(func(g Gomega) {
			p := conditions.Get(e.cluster(g, "ops").Status.Conditions, v1alpha1.ConditionProgressing)
			g.Expect(p.Reason).To(Equal(v1alpha1.ReasonRolling))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		e.capture("ops", "rolling")
		e.expectReady("ops", 2*time.Minute)
		for _, vn := range e.members(Default, "ops") {
			Expect(hasNewResources(vn)).To(BeTrue(), "member %s", vn.Name)
			Expect(vn.Spec.RestartedAt).To(Equal(restartAt), "member %s", vn.Name)
		}
		Expect(e.failovers("ops", 2)).To(Equal([]int{1, 3}))
		c := conditions.Get(e.cluster(Default, "ops").Status.Conditions, v1alpha1.ConditionPaused)
		Expect(c.Status).To(Equal(metav1.ConditionFalse))

		By("restarting one shard: only its members are replaced")
		shard1 := names(membersOf(e.members(Default, "ops"), 1))
		later := time.Now().UTC().Add(time.Second).Truncate(time.Second).Format(time.RFC3339)
		e.annotate("ops", v1alpha1.AnnotationRestartedAtShard(0), later)
		Eventually(func(g Gomega) {
			for _, vn := range membersOf(e.members(g, "ops"), 0) {
				g.Expect(vn.Spec.RestartedAt).To(Equal(later))
			}
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		e.expectReady("ops", 2*time.Minute)
		Expect(names(membersOf(e.members(Default, "ops"), 1))).To(Equal(shard1))
		Expect(e.failovers("ops", 2)).To(Equal([]int{2, 3}))

		By("leaving the answered request as it was, and the user's annotation too")
		vc := e.cluster(Default, "ops")
		Expect(vc.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationFailover, "7"))
		Expect(vc.Status.Failover.Phase).To(Equal(v1alpha1.FailoverRequestRefused))

		By("upgrading from a version that recorded a failover in the member's annotations, during that failover")
		e.stopController()
		taker := e.member(Default, "ops", 0, false)
		patch := client.MergeFrom(taker.DeepCopy())
		if taker.Annotations == nil {
			taker.Annotations = map[string]string{}
		}
		taker.Annotations[plan.LegacyFailoverAt] = time.Now().UTC().Format(time.RFC3339Nano)
		Expect(k8s.Patch(ctx, &taker, patch)).To(Succeed())
		c0 := dial(Default, e.kubelet.server(taker.Name))
		Expect(c0.Failover(ctx, valkey.FailoverDefault)).To(Succeed())
		c0.Close()
		Eventually(func(g Gomega) {
			self, ok := selfOf(e.kubelet.server(taker.Name))
			g.Expect(ok).To(BeTrue())
			g.Expect(self.Primary).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())
		e.startController()
		Eventually(func(g Gomega) {
			var vn v1alpha1.ValkeyNode
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&taker), &vn)).To(Succeed())
			g.Expect(vn.Annotations).NotTo(HaveKey(plan.LegacyFailoverAt), "the old record is removed once read")
			g.Expect(vn.Status.Failover).To(BeNil())
			g.Expect(e.cluster(g, "ops").Status.Shards[0].Primary).To(Equal(taker.Name))
			g.Expect(e.failovers("ops", 2)).To(Equal([]int{1, 0}), "the failover is counted as the one the operator asked for")
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(e.failoversOf("ops", 2, kindElected)).To(Equal([]int{0, 0}))
		e.expectReady("ops", 30*time.Second)
	})

	It("carries a request out once when its cache shows the cluster's status late", func() {
		e.createCluster("lag", 2, 1, func(s *v1alpha1.ValkeyClusterSpec) { s.WorkloadType = v1alpha1.WorkloadPod })
		e.expectReady("lag", time.Minute)
		old := e.member(Default, "lag", 1, true).Name
		replica := e.member(Default, "lag", 1, false).Name
		e.annotate("lag", v1alpha1.AnnotationFailover, "1@1")
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "lag")
			g.Expect(vc.Status.Failover).To(PointTo(MatchFields(IgnoreExtras, Fields{
				"Request": Equal("1@1"), "Target": Equal(replica), "Phase": Equal(v1alpha1.FailoverRequestDone),
			})))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		e.expectReady("lag", 30*time.Second)

		By("the next request, while every read of the cluster shows it as it was before the last status write for 3 s")
		e.cacheLag.Store(int64(3 * time.Second))
		e.annotate("lag", v1alpha1.AnnotationFailover, "1@2")
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "lag")
			g.Expect(vc.Status.Failover).To(PointTo(MatchFields(IgnoreExtras, Fields{
				"Request": Equal("1@2"), "Phase": Equal(v1alpha1.FailoverRequestDone),
			})))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		vc := e.cluster(Default, "lag")
		Expect(vc.Status.Failover.Target).To(Equal(old), "the request's target: the shard's only replica when it was made")
		Consistently(func(g Gomega) {
			g.Expect(e.cluster(g, "lag").Status.Shards[1].Primary).To(Equal(old))
			g.Expect(e.failovers("lag", 2)).To(Equal([]int{0, 2}), "one failover per request")
		}).WithTimeout(5 * time.Second).Should(Succeed())
	})
})

// membersOf keeps the members of one shard.
func membersOf(vns []v1alpha1.ValkeyNode, sh int32) []v1alpha1.ValkeyNode {
	var out []v1alpha1.ValkeyNode
	for _, vn := range vns {
		if vn.Spec.ShardIndex == sh {
			out = append(out, vn)
		}
	}
	return out
}
