package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// newResources is the spec change the roll specs make: it needs new pods.
var newResources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}

func withNewResources(s *v1alpha1.ValkeyClusterSpec) { s.Resources = newResources }

// hasNewResources reports whether a member runs the spec of the roll.
func hasNewResources(vn v1alpha1.ValkeyNode) bool {
	return vn.Spec.Resources.Requests.Memory().Cmp(resource.MustParse("64Mi")) == 0
}

// onePerShard is the owner changes of a roll that fails each of n shards over once.
func onePerShard(n int32) map[int]int {
	out := map[int]int{}
	for _, slot := range firstSlots(n) {
		out[slot] = 1
	}
	return out
}

var _ = Describe("The cluster-controller", func() {
	var e *env
	ctx := context.Background()

	BeforeEach(func() { e = newEnv() })

	DescribeTable("forms a cluster that serves all 16384 slots",
		func(shards, replicas int32) {
			e.createCluster("form", shards, replicas)
			e.expectReady("form", time.Minute)

			vc := e.cluster(Default, "form")
			Expect(vc.Status.Shards).To(HaveLen(int(shards)))
			for sh, st := range vc.Status.Shards {
				var want []string
				for _, r := range valkey.EvenRanges(int(shards))[sh] {
					want = append(want, r.String())
				}
				Expect(st.Slots).To(Equal(want), "slots of shard %d", sh)
				Expect(st.Replicas).To(HaveLen(int(replicas)), "replicas of shard %d", sh)
			}
			for _, typ := range []string{v1alpha1.ConditionClusterFormed, v1alpha1.ConditionSlotsAssigned} {
				Expect(vc.Status.Conditions).To(ContainElement(HaveField("Type", typ)))
			}
			keys := writeKeys(e.anyServer("form"), 200)
			expectKeys(Default, e.anyServer("form"), keys)
		},
		Entry("3 shards with a replica each", int32(3), int32(1)),
		Entry("1 shard without replicas", int32(1), int32(0)),
	)

	It("exports the cluster's metrics: after formation, a failover Valkey makes, and deletion", func() {
		e.createCluster("metrics", 3, 1)
		e.expectReady("metrics", time.Minute)

		By("reporting the formed cluster as the pass saw it")
		Eventually(func(g Gomega) {
			m := e.series(g, "metrics")
			g.Expect(m).To(HaveKeyWithValue("valkey_operator_cluster_ready{}", 1.0))
			g.Expect(m).To(HaveKeyWithValue("valkey_operator_cluster_shards{}", 3.0))
			g.Expect(m).To(HaveKeyWithValue("valkey_operator_cluster_shards_ready{}", 3.0))
			g.Expect(m).To(HaveKeyWithValue("valkey_operator_cluster_slots_assigned{}", 16384.0))
			g.Expect(m).To(HaveKeyWithValue("valkey_operator_cluster_state{state=Ready}", 1.0))
			g.Expect(m).To(HaveKeyWithValue("valkey_operator_cluster_rolling{}", 0.0))
			g.Expect(m).To(HaveKey("valkey_operator_cluster_last_successful_pass_timestamp_seconds{}"))
			for sh := range 3 {
				g.Expect(m).To(HaveKeyWithValue(fmt.Sprintf("valkey_operator_cluster_members{lifecycle=Active,role=primary,shard=%d}", sh), 1.0))
				g.Expect(m).To(HaveKeyWithValue(fmt.Sprintf("valkey_operator_cluster_members{lifecycle=Active,role=replica,shard=%d}", sh), 1.0))
				g.Expect(m).To(HaveKeyWithValue(fmt.Sprintf("valkey_operator_shard_replicas_in_sync{shard=%d}", sh), 1.0))
				replica := e.member(g, "metrics", int32(sh), false)
				g.Expect(m).To(HaveKey(fmt.Sprintf("valkey_operator_replica_lag_bytes{member=%s,shard=%d}", replica.Name, sh)))
			}
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("counting a failover nobody asked the operator for as elected")
		replica := e.member(Default, "metrics", 1, false)
		c := dial(Default, e.kubelet.server(replica.Name))
		Expect(c.Failover(ctx, valkey.FailoverDefault)).To(Succeed())
		c.Close()
		// The node-controller would report the new role on the ValkeyNode; the stand-in
		// kubelet does not, so touch it to start a pass as that report would.
		Eventually(func() error {
			vn := e.member(Default, "metrics", 1, false)
			patch := client.MergeFrom(vn.DeepCopy())
			vn.Annotations = map[string]string{"test/poke": "failover"}
			return k8s.Patch(ctx, &vn, patch)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(e.cluster(g, "metrics").Status.Shards[1].Primary).To(Equal(replica.Name))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func() []int { return e.failoversOf("metrics", 3, kindElected) }).WithTimeout(10 * time.Second).
			Should(Equal([]int{0, 1, 0}))
		Expect(e.failovers("metrics", 3)).To(Equal([]int{0, 0, 0}), "planned failovers")

		By("removing every series of the cluster once it is deleted")
		Expect(k8s.Delete(ctx, e.cluster(Default, "metrics"))).To(Succeed())
		Eventually(func(g Gomega) map[string]float64 { return e.series(g, "metrics") }).WithTimeout(30 * time.Second).Should(BeEmpty())
	})

	It("creates a cluster's members a batch per pass, to the last one", func() {
		e.stopController()
		e.createBatch = 2
		e.startController()
		wc, err := client.NewWithWatch(cfg, client.Options{Scheme: k8s.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		w, err := wc.Watch(ctx, &v1alpha1.ValkeyClusterList{}, client.InNamespace(e.ns))
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		var seen []string // every Progressing message the cluster's status had, in order
		collect := func() {
			for {
				select {
				case ev := <-w.ResultChan():
					if vc, ok := ev.Object.(*v1alpha1.ValkeyCluster); ok {
						if c := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionProgressing); c != nil &&
							(len(seen) == 0 || seen[len(seen)-1] != c.Message) {
							seen = append(seen, c.Message)
						}
					}
				default:
					return
				}
			}
		}

		e.createCluster("batches", 3, 1)
		e.expectReady("batches", time.Minute)
		Eventually(func() []string { collect(); return seen }).Should(ContainElements(
			"created 2 members, 4 more in the next passes", "created 2 members, 2 more in the next passes", "created 2 members"))
		Expect(e.members(Default, "batches")).To(HaveLen(6))
	})

	It("acts on a cluster whose config holds a key its key table lacks, and warns of it", func() {
		// As a cluster an older operator admitted: lua-replicate-commands is a key the
		// servers take and ignore without listing it, so the table does not know it.
		e.createCluster("oldkey", 1, 0, func(s *v1alpha1.ValkeyClusterSpec) { s.Config["lua-replicate-commands"] = "yes" })
		e.expectReady("oldkey", time.Minute)

		vc := e.cluster(Default, "oldkey")
		invalid := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionInvalidSpec)
		Expect(invalid).NotTo(BeNil())
		Expect(invalid.Status).To(Equal(metav1.ConditionFalse), "InvalidSpec: %s", invalid.Message)
		warning := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionConfigurationWarning)
		Expect(warning).NotTo(BeNil())
		Expect(warning.Status).To(Equal(metav1.ConditionTrue))
		Expect(warning.Reason).To(Equal(v1alpha1.ReasonUnsupportedConfig))
		Expect(warning.Message).To(And(ContainSubstring("spec.config[lua-replicate-commands]"),
			ContainSubstring("a server may refuse the entry at the next restart of a member")))
	})

	It("replaces a replica whose pod is gone for good", Label("slow"), func() {
		e.createCluster("heal", 3, 1, func(s *v1alpha1.ValkeyClusterSpec) { s.WorkloadType = v1alpha1.WorkloadPod })
		e.expectReady("heal", time.Minute)
		lost := e.member(Default, "heal", 1, false)

		Expect(e.kubelet.deletePod(ctx, &lost)).To(Succeed())

		By("retiring the member once it has left the cluster")
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKeyFromObject(&lost), &v1alpha1.ValkeyNode{})
		}).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound))
		By("serving with full redundancy again, every server having forgotten the lost one")
		e.expectReady("heal", time.Minute)
		Expect(e.member(Default, "heal", 1, false).Name).NotTo(Equal(lost.Name))
	})

	It("keeps healing as the last valid spec says while the spec is invalid, and applies none of it", Label("slow"), func() {
		e.createCluster("held", 3, 1, func(s *v1alpha1.ValkeyClusterSpec) { s.WorkloadType = v1alpha1.WorkloadPod })
		e.expectReady("held", time.Minute)
		// A key the operator owns makes the whole spec invalid; the resources change in the
		// same edit would need a roll.
		e.update("held", func(s *v1alpha1.ValkeyClusterSpec) {
			withNewResources(s)
			s.Config = map[string]string{"cluster-enabled": "no"}
		})
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "held")
			g.Expect(vc.Status.State).To(Equal(v1alpha1.StateInvalid))
			progressing := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionProgressing)
			g.Expect(progressing).NotTo(BeNil())
			g.Expect(progressing.Message).To(ContainSubstring("keeps healing the cluster as its last valid spec says"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		lost := e.member(Default, "held", 2, false)

		Expect(e.kubelet.deletePod(ctx, &lost)).To(Succeed())

		By("replacing the lost replica with a member of the applied spec")
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "held")
			g.Expect(vc.Status.ReadyShards).To(Equal(int32(3)))
			g.Expect(conditions.Get(vc.Status.Conditions, v1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(e.member(g, "held", 2, false).Name).NotTo(Equal(lost.Name))
		}).WithTimeout(time.Minute).Should(Succeed())
		vc := e.cluster(Default, "held")
		Expect(vc.Status.AppliedSpec).NotTo(BeNil())
		Expect(vc.Status.AppliedSpec.Config).NotTo(HaveKey("cluster-enabled"))
		Expect(vc.Status.ObservedGeneration).To(BeNumerically("<", vc.Generation))
		for _, vn := range e.members(Default, "held") {
			Expect(hasNewResources(vn)).To(BeFalse(), "member %s got the invalid spec's resources", vn.Name)
			Expect(vn.Spec.Config).NotTo(HaveKey("cluster-enabled"), "member %s", vn.Name)
		}
	})

	It("keeps healing a cluster over a member cap lowered since, and refuses only a bigger spec", Label("slow"), func() {
		e.createCluster("capped", 2, 1, func(s *v1alpha1.ValkeyClusterSpec) { s.WorkloadType = v1alpha1.WorkloadPod })
		e.expectReady("capped", time.Minute)
		// The administrator lowers the cap below the cluster's 4 members (a restart of
		// the operator with --max-members-per-cluster=3), then a user asks for a shard more.
		prev := validation.CurrentPolicy()
		validation.SetPolicy(validation.Policy{MaxMembersPerCluster: 3})
		DeferCleanup(validation.SetPolicy, prev)
		e.update("capped", func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = 3 })

		By("reporting the new spec invalid, naming the cap")
		Eventually(func(g Gomega) {
			invalid := conditions.Get(e.cluster(g, "capped").Status.Conditions, v1alpha1.ConditionInvalidSpec)
			g.Expect(invalid).NotTo(BeNil())
			g.Expect(invalid.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(invalid.Message).To(ContainSubstring("spec.shards: Invalid value: 3: 3 shards x (1 + 1 replicas) = 6 members, " +
				"more than this operator allows per cluster (3; policy.maxMembersPerCluster)"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		lost := e.member(Default, "capped", 1, false)

		Expect(e.kubelet.deletePod(ctx, &lost)).To(Succeed())

		By("replacing the lost replica: the cluster keeps its 2 shards and 4 members")
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "capped")
			g.Expect(vc.Status.ReadyShards).To(Equal(int32(2)))
			g.Expect(conditions.Get(vc.Status.Conditions, v1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(e.member(g, "capped", 1, false).Name).NotTo(Equal(lost.Name))
		}).WithTimeout(time.Minute).Should(Succeed())
		Eventually(func(g Gomega) []v1alpha1.ValkeyNode { return e.members(g, "capped") }).WithTimeout(time.Minute).Should(HaveLen(4))
		Expect(e.cluster(Default, "capped").Status.Shards).To(HaveLen(2))
	})

	It("heals a lost primary: its replica takes over, its pod comes back as a replica", Label("slow"), func() {
		e.createCluster("heal", 3, 1)
		e.expectReady("heal", time.Minute)
		keys := writeKeys(e.anyServer("heal"), 300)
		lost := e.member(Default, "heal", 1, true)
		replica := e.member(Default, "heal", 1, false)
		expectCaughtUp(e, lost.Name, replica.Name)

		Expect(e.kubelet.recreatePod(ctx, &lost)).To(Succeed())

		By("promoting the replica, which holds the shard's data")
		Eventually(func(g Gomega) {
			g.Expect(e.cluster(g, "heal").Status.Shards[1].Primary).To(Equal(replica.Name))
		}).WithTimeout(time.Minute).Should(Succeed())
		e.expectReady("heal", time.Minute)
		back := e.member(Default, "heal", 1, false)
		Expect(back.Name).To(Equal(lost.Name))
		Expect(back.Status.NodeID).NotTo(Equal(lost.Status.NodeID), "the pod came back empty, as a new node")
		expectKeys(Default, e.anyServer("heal"), keys)
	})

	It("promotes a crashed primary's replica on Kubernetes' word, before Valkey notices", Label("slow"), func() {
		// Valkey would need cluster-node-timeout (5 s here) to flag the primary failing.
		keys, dead, replica := e.shardWithKeys("crash", 2, nodeTimeout("5000"))

		Expect(e.kubelet.crash(ctx, &dead)).To(Succeed())

		By("promoting the replica with a forced failover that names Kubernetes' report")
		Eventually(func(g Gomega) {
			g.Expect(e.cluster(g, "crash").Status.Shards[2].Primary).To(Equal(replica.Name))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		Expect(e.eventNotes(Default, "Takeover")).To(ContainElement(And(ContainSubstring("its member reports the server down: container server of pod"), ContainSubstring("FORCE"))))
		Eventually(func() []int { return e.failoversOf("crash", 3, kindForced) }).WithTimeout(10*time.Second).
			Should(Equal([]int{0, 0, 1}), "forced failovers counted by the controller")

		By("letting the server start again: it joins, empty, as the replica")
		e.kubelet.release(dead.Name)
		e.expectReady("crash", time.Minute)
		expectKeys(Default, e.anyServer("crash"), keys)
	})

	It("rolls a spec that needs new pods with one failover per shard", Label("slow"), func() {
		e.createCluster("roll", 3, 1)
		e.expectReady("roll", time.Minute)
		keys := writeKeys(e.anyServer("roll"), 300)
		var before []string
		for _, vn := range e.members(Default, "roll") {
			before = append(before, vn.Name)
		}
		owners := e.watchOwners(firstSlots(3)...)

		e.update("roll", withNewResources)
		e.expectReady("roll", 3*time.Minute)

		for _, vn := range e.members(Default, "roll") {
			Expect(hasNewResources(vn)).To(BeTrue(), "member %s runs the old spec", vn.Name)
			Expect(before).NotTo(ContainElement(vn.Name), "member %s was not replaced", vn.Name)
		}
		Expect(owners.Stop()).To(Equal(onePerShard(3)), "slot owner changes seen by the servers")
		Expect(e.failovers("roll", 3)).To(Equal([]int{1, 1, 1}), "failovers counted by the controller")
		expectKeys(Default, e.anyServer("roll"), keys)
	})

	It("scales out from 3 to 4 shards, moving the keys with their slots", Label("slow"), func() {
		e.createCluster("scale", 3, 1)
		e.expectReady("scale", time.Minute)
		keys := writeKeys(e.anyServer("scale"), 2000)

		e.update("scale", func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = 4 })
		e.expectReady("scale", 4*time.Minute)

		vc := e.cluster(Default, "scale")
		Expect(vc.Status.Shards).To(HaveLen(4))
		for sh, st := range vc.Status.Shards {
			ranges, err := valkey.ParseRanges(strings.Join(st.Slots, ","))
			Expect(err).NotTo(HaveOccurred())
			Expect(valkey.CountSlots(ranges)).To(Equal(4096), "slots of shard %d", sh)
		}
		expectKeys(Default, e.anyServer("scale"), keys)
		Expect(keysOn(e, "scale", 3)).To(BeNumerically(">", 0), "keys moved to the new shard")
	})

	// A pass that stops between the target's SETSLOT IMPORTING and the source's
	// MIGRATING (a dial timing out on a new member) leaves the target importing slots
	// nobody migrates to it. Assigning such a slot to its owner does not clear the
	// import; the scale must still finish, with every key.
	It("scales out past slots left importing on a primary that does not serve them", Label("slow"), func() {
		e.createCluster("stale", 3, 0)
		e.expectReady("stale", time.Minute)
		keys := writeKeys(e.anyServer("stale"), 1000)
		owner, importer := e.member(Default, "stale", 0, true), e.member(Default, "stale", 1, true)
		c := dial(Default, e.kubelet.server(importer.Name))
		Expect(c.SetSlots(context.Background(), []int{0, 1, 2}, "IMPORTING", owner.Status.NodeID)).To(Succeed())
		c.Close()

		e.update("stale", func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = 4 })
		e.expectReady("stale", 2*time.Minute)
		Expect(e.openSlots()).To(Equal("none"))
		expectKeys(Default, e.anyServer("stale"), keys)
	})

	It("completes a roll after the controller restarts halfway", Label("slow"), func() {
		e.createCluster("restart", 3, 1)
		e.expectReady("restart", time.Minute)
		owners := e.watchOwners(firstSlots(3)...)

		e.update("restart", withNewResources)
		By("stopping the controller once the first shard has failed over")
		Eventually(func() []int { return e.failovers("restart", 3) }).WithTimeout(2 * time.Minute).Should(ContainElement(1))
		e.stopController()
		members := e.members(Default, "restart")
		Expect(members).To(ContainElement(Not(Satisfy(hasNewResources))), "the roll was over before the restart")
		Consistently(func(g Gomega) []string { return names(e.members(g, "restart")) }).
			WithTimeout(2*time.Second).Should(Equal(names(members)), "members changed while no controller ran")

		By("finishing the roll with a new controller")
		e.startController()
		e.expectReady("restart", 3*time.Minute)
		for _, vn := range e.members(Default, "restart") {
			Expect(hasNewResources(vn)).To(BeTrue(), "member %s runs the old spec", vn.Name)
		}
		Expect(owners.Stop()).To(Equal(onePerShard(3)), "slot owner changes seen by the servers")
	})
})

func names(vns []v1alpha1.ValkeyNode) []string {
	out := make([]string, len(vns))
	for i, vn := range vns {
		out[i] = vn.Name
	}
	return out
}

// expectCaughtUp waits until the replica has every write its primary took, so that a
// failover loses none.
func expectCaughtUp(e *env, primary, replica string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		offsets := make([]int64, 2)
		for i, name := range []string{primary, replica} {
			c := dial(g, e.kubelet.server(name))
			r, err := c.ReplicationInfo(context.Background())
			c.Close()
			g.Expect(err).NotTo(HaveOccurred())
			offsets[i] = r.Offset
		}
		g.Expect(offsets[1]).To(Equal(offsets[0]), "replication offsets of %s and %s", replica, primary)
	}).Should(Succeed())
}

// keysOn counts the keys the primary of shard sh holds.
func keysOn(e *env, name string, sh int32) int64 {
	GinkgoHelper()
	c := dial(Default, e.kubelet.server(e.member(Default, name, sh, true).Name))
	defer c.Close()
	v, err := c.DoValue(context.Background(), "DBSIZE")
	Expect(err).NotTo(HaveOccurred())
	n, ok := v.(int64)
	Expect(ok).To(BeTrue(), fmt.Sprintf("DBSIZE answered %T", v))
	return n
}
