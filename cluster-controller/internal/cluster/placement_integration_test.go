package cluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// Primary placement (failback.go) against real servers: the stand-in kubelet puts every
// member on one of three Kubernetes nodes, each in a zone of its own, and the specs read
// where the primaries run as a user does (status.shards, PrimariesSpread, events,
// metrics) and check the servers themselves.
var _ = Describe("Primary placement", func() {
	var e *env
	ctx := context.Background()
	var nodes [3]string

	BeforeEach(func() {
		e = newEnv()
		for i := range nodes {
			nodes[i] = fmt.Sprintf("%s-n%d", e.ns, i+1)
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodes[i],
				Labels: map[string]string{v1alpha1.DefaultPlacementTopologyKey: fmt.Sprintf("zone-%d", i+1)}}}
			Expect(k8s.Create(ctx, n)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, n))).To(Succeed()) })
		}
		// Every shard has a member on node 1 and one on node 2 or 3: the scheduler's
		// anti-affinity keeps a shard's members apart, nothing keeps the primaries apart.
		seen := map[int32]int{}
		e.kubelet.nodeOf = func(vn *v1alpha1.ValkeyNode) string {
			sh := vn.Spec.ShardIndex
			defer func() { seen[sh]++ }()
			if seen[sh] == 0 {
				return nodes[0]
			}
			return nodes[1+int(sh)%2]
		}
		e.failbackHold = 2 * time.Second
		e.stopController()
		e.startController()
	})

	// primaryNodes returns the node of each shard's primary as the status says it, and
	// checks its zone against the node's.
	primaryNodes := func(g Gomega, name string) []string {
		vc := e.cluster(g, name)
		var out []string
		for _, sh := range vc.Status.Shards {
			g.Expect(sh.PrimaryNode).NotTo(BeEmpty(), "shard %d", sh.Index)
			i := slices.Index(nodes[:], sh.PrimaryNode)
			g.Expect(i).NotTo(Equal(-1), "shard %d's primary runs on %s", sh.Index, sh.PrimaryNode)
			g.Expect(sh.PrimaryZone).To(Equal(fmt.Sprintf("zone-%d", i+1)), "shard %d", sh.Index)
			out = append(out, sh.PrimaryNode)
		}
		return out
	}
	expectSpread := func(name string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			vc := e.cluster(g, name)
			c := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionPrimariesSpread)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonSpread), c.Message)
			g.Expect(primaryNodes(g, name)).To(ConsistOf(nodes[0], nodes[1], nodes[2]))
		}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	}

	It("spreads a new cluster's primaries, and moves a shard's primary back once its member is in sync again", Label("slow"), func() {
		// The servers elect nothing at creation: each shard's oldest member gets its
		// slots, wherever it runs; failback then spreads them, one planned failover at
		// a time.
		e.createCluster("spread", 3, 1)
		e.expectReady("spread", time.Minute)
		expectSpread("spread")
		keys := writeKeys(e.anyServer("spread"), 300)

		// The primary on node 2 (shard 1's, whose other member is on node 1) dies: its
		// replica takes over on node 1, next to the primary of shard 0 or 2. Only shard
		// 1's return restores the spread: the other shard's other member runs on node 3,
		// with the third primary. (Were the primary on node 1 killed instead, moving
		// another shard to its member on node 1 would restore it as well, and which of
		// the two failback makes first would depend on how soon the dead one resyncs.)
		By("killing the primary on node 2: its replica on node 1 takes over, next to another primary")
		var dead v1alpha1.ValkeyNode
		var shard int32
		for sh := int32(0); sh < 3; sh++ {
			if p := e.member(Default, "spread", sh, true); p.Status.NodeName == nodes[1] {
				dead, shard = p, sh
			}
		}
		Expect(dead.Name).NotTo(BeEmpty())
		replica := e.member(Default, "spread", shard, false)
		expectCaughtUp(e, dead.Name, replica.Name)
		movesBefore := e.series(Default, "spread")["valkey_operator_primary_moves_total{shard="+strconv.Itoa(int(shard))+"}"]
		Expect(e.kubelet.crash(ctx, &dead)).To(Succeed())
		Eventually(func(g Gomega) {
			vc := e.cluster(g, "spread")
			g.Expect(vc.Status.Shards[shard].Primary).To(Equal(replica.Name))
			c := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionPrimariesSpread)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse), "%s: %s", c.Reason, c.Message)
			g.Expect(c.Message).To(ContainSubstring("holds the primaries of shards"))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

		By("letting its server start again: once in sync, it serves its shard again on node 2")
		e.kubelet.release(dead.Name)
		expectSpread("spread")
		Expect(e.member(Default, "spread", shard, true).Name).To(Equal(dead.Name))
		e.expectReady("spread", time.Minute)
		expectKeys(Default, e.anyServer("spread"), keys)
		Expect(e.eventNotes(Default, v1alpha1.ReasonRestoringPlacement)).To(ContainElement(And(
			ContainSubstring(fmt.Sprintf("shard %d: %s takes over from %s on node %s (zone zone-2)", shard, dead.Name, replica.Name, nodes[1])),
			ContainSubstring("also holds the primary of shard"))))
		Eventually(func(g Gomega) {
			g.Expect(e.series(g, "spread")).To(And(
				HaveKeyWithValue("valkey_operator_primary_moves_total{shard="+strconv.Itoa(int(shard))+"}", BeNumerically(">", movesBefore)),
				HaveKeyWithValue("valkey_operator_cluster_primaries_spread{}", 1.0),
				HaveKeyWithValue("valkey_operator_cluster_primaries_misplaced{}", 0.0)))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("leaves the primaries where they are with policy None", Label("slow"), func() {
		e.kubelet.nodeOf = func(*v1alpha1.ValkeyNode) string { return nodes[0] }
		e.createCluster("off", 2, 1, func(s *v1alpha1.ValkeyClusterSpec) {
			s.PrimaryPlacement = &v1alpha1.PrimaryPlacementSpec{Policy: v1alpha1.PrimaryPlacementNone}
		})
		e.expectReady("off", time.Minute)
		Consistently(func(g Gomega) {
			vc := e.cluster(g, "off")
			c := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionPrimariesSpread)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionUnknown))
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPlacementOff))
			for _, sh := range vc.Status.Shards {
				g.Expect(sh.PrimaryNode).To(Equal(nodes[0]))
				g.Expect(sh.PrimaryZone).To(BeEmpty())
			}
		}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(e.eventNotes(Default, v1alpha1.ReasonRestoringPlacement)).To(BeEmpty())
	})
})
