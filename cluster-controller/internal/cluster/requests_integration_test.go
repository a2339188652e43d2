package cluster

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
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

		By("failing shard 1 over to its replica on request, once")
		old := e.member(Default, "ops", 1, true).Name
		replica := e.member(Default, "ops", 1, false).Name
		e.annotate("ops", v1alpha1.AnnotationFailover, "1/"+replica)
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "ops")
			g.Expect(vc.Annotations).NotTo(HaveKey(v1alpha1.AnnotationFailover))
			g.Expect(vc.Status.Shards[1].Primary).To(Equal(replica))
			g.Expect(vc.Status.Shards[1].Replicas).To(ConsistOf(old))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		e.expectReady("ops", 30*time.Second)
		Expect(e.failovers("ops", 2)).To(Equal([]int{0, 1}))

		By("refusing a request it cannot carry out")
		e.annotate("ops", v1alpha1.AnnotationFailover, "7")
		Eventually(func(g Gomega) {
			g.Expect(e.cluster(g, "ops").Annotations).NotTo(HaveKey(v1alpha1.AnnotationFailover))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(e.failovers("ops", 2)).To(Equal([]int{0, 1}))

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
		Expect(e.failovers("ops", 2)).To(Equal([]int{1, 2}))
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
		Expect(e.failovers("ops", 2)).To(Equal([]int{2, 2}))
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
