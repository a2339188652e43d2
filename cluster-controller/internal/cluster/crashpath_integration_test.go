package cluster

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// The decisions of the crash path (docs/failure-modes.md) under the timing a slow API
// server and busy nodes give: members slow to start or to answer, and crashes right
// after a change.
var _ = Describe("The crash path", func() {
	var e *env
	ctx := context.Background()

	BeforeEach(func() { e = newEnv() })

	eventReasons := func(g Gomega) map[string]int {
		var evs eventsv1.EventList
		g.Expect(k8s.List(ctx, &evs, client.InNamespace(e.ns))).To(Succeed())
		out := map[string]int{}
		for _, ev := range evs.Items {
			out[ev.Reason]++
		}
		return out
	}

	It("does not give out the slots again when the members holding them go silent and the others answer empty", Label("slow"), func() {
		// The controller gives each shard's first member its slots. Then those three stop
		// answering (frozen, as on a node that no longer runs them) while the other three
		// come back as new, empty servers (their pods recreated): every member that
		// answers serves no slot and knows nothing of the silent ones. Silence is no
		// evidence that the data is gone: nothing may be assigned a second time.
		e.createCluster("late", 3, 1)
		var primaries []*valkeytest.Server
		var others []v1alpha1.ValkeyNode
		Eventually(func(g Gomega) {
			primaries, others = nil, nil
			for _, vn := range e.members(g, "late") {
				s := e.kubelet.server(vn.Name)
				g.Expect(s).NotTo(BeNil(), vn.Name)
				self, ok := selfOf(s)
				g.Expect(ok).To(BeTrue(), vn.Name)
				if len(self.Slots) > 0 {
					primaries = append(primaries, s)
				} else {
					others = append(others, vn)
				}
			}
			g.Expect(primaries).To(HaveLen(3))
		}).WithTimeout(time.Minute).WithPolling(50 * time.Millisecond).Should(Succeed())
		Expect(eventReasons(Default)).To(HaveKeyWithValue("SlotsAssigned", 1))

		for _, s := range primaries {
			Expect(s.Freeze()).To(Succeed())
		}
		for i := range others {
			Expect(e.kubelet.recreatePod(ctx, &others[i])).To(Succeed())
		}
		By("waiting for the silent members instead of giving their slots to the empty ones")
		Consistently(func(g Gomega) {
			g.Expect(eventReasons(g)).NotTo(HaveKey("SlotsReassigned"))
			for _, vn := range others {
				if s := e.kubelet.server(vn.Name); s != nil {
					self, _ := selfOf(s)
					g.Expect(self.Slots).To(BeEmpty(), "%s serves slots", vn.Name)
				}
			}
		}).WithTimeout(15 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("healing once they answer again, with the slots as first given")
		for _, s := range primaries {
			Expect(s.Thaw()).To(Succeed())
		}
		e.expectReady("late", time.Minute)
		Expect(eventReasons(Default)).To(And(HaveKeyWithValue("SlotsAssigned", 1), Not(HaveKey("SlotsReassigned"))))
		Expect(e.cluster(Default, "late").Status.FirstReadyTime).NotTo(BeNil())
	})

	It("promotes a crashed primary's replica that missed its primary's last config epoch, which no vote can elect", Label("slow"), func() {
		// The replica of shard 0 and its primary lose their bus to each other (their
		// replication link stays up); the primary's config epoch then rises, which the
		// other primaries hear and the replica cannot; then the primary's server dies.
		// The replica asks for votes with the epoch it knows, every voter refuses it
		// ("slot epoch > reqEpoch"), and only the dead primary could have told it the new
		// one: neither Valkey's election nor a forced failover can ever succeed. Kubernetes'
		// report of the exit is proof enough to take over without a vote.
		keys, dead, replica := e.relayedShardWithKeys("epoch", 0)
		p, r := e.kubelet.server(dead.Name), e.kubelet.server(replica.Name)
		Expect(valkeytest.CutBus(p, r)).To(Succeed())
		// BUMPEPOCH leaves the epoch of a primary that already holds the greatest one as
		// it is ("STILL"): another primary bumps first until this one is behind.
		other := e.kubelet.server(e.member(Default, "epoch", 1, true).Name)
		Eventually(func(g Gomega) {
			c := dial(g, p)
			reply, err := c.Do(ctx, "CLUSTER", "BUMPEPOCH")
			c.Close()
			g.Expect(err).NotTo(HaveOccurred())
			if strings.HasPrefix(reply, "STILL") {
				o := dial(g, other)
				_, err := o.Do(ctx, "CLUSTER", "BUMPEPOCH")
				o.Close()
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(reply).To(HavePrefix("BUMPED"))
		}).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		var newEpoch uint64
		Eventually(func(g Gomega) {
			self, ok := selfOf(p)
			g.Expect(ok).To(BeTrue())
			newEpoch = self.ConfigEpoch
			for _, vn := range e.members(g, "epoch") {
				if vn.Name == dead.Name || vn.Name == replica.Name {
					continue
				}
				g.Expect(nodesOf(g, e.kubelet.server(vn.Name))).To(ContainElement(And(
					HaveField("ID", dead.Status.NodeID), HaveField("ConfigEpoch", newEpoch))), "%s's view of the primary", vn.Name)
			}
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Expect(nodesOf(Default, r)).To(ContainElement(And(HaveField("ID", dead.Status.NodeID), HaveField("ConfigEpoch", BeNumerically("<", newEpoch)))),
			"the replica must not have heard of the new epoch")

		Expect(e.kubelet.crash(ctx, &dead)).To(Succeed())
		By("taking over without a vote, on Kubernetes' report of the exit")
		Eventually(func(g Gomega) {
			g.Expect(e.cluster(g, "epoch").Status.Shards[0].Primary).To(Equal(replica.Name))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		Expect(e.eventNotes(Default, "Takeover")).To(ContainElement(And(ContainSubstring("config epoch"), ContainSubstring("TAKEOVER"))))

		By("letting the server start again: it joins, empty, as the replica")
		e.kubelet.release(dead.Name)
		e.expectReady("epoch", time.Minute)
		expectKeys(Default, e.anyServer("epoch"), keys)
	})

	It("promotes at once a crashed primary's replica that a voter does not know as one yet, right after a failover", Label("slow"), func() {
		// Shard 1 fails over (b2 takes over from b) while the primary of shard 2 cannot
		// hear either of them (their bus is cut): it still lists b as the shard's primary,
		// as every primary does for the gossip round after a failover. Then b2's server
		// dies. b must take over, but that voter refuses b its vote ("it is a primary
		// node"; here it does not even hear the request) and a vote needs both remaining
		// primaries: a forced failover cannot succeed. The operator sees the voter's view
		// and takes over without a vote at once, instead of waiting out the forced
		// failover's window (FailoverTimedOut).
		keys, b, b2 := e.relayedShardWithKeys("stale", 1)
		voter := e.kubelet.server(e.member(Default, "stale", 2, true).Name)
		pb, pb2 := e.kubelet.server(b.Name), e.kubelet.server(b2.Name)
		Expect(valkeytest.CutBus(voter, pb)).To(Succeed())
		Expect(valkeytest.CutBus(voter, pb2)).To(Succeed())
		c := dial(Default, pb2)
		_, err := c.Do(ctx, "CLUSTER", "FAILOVER")
		c.Close()
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			self, ok := selfOf(pb2)
			g.Expect(ok).To(BeTrue())
			g.Expect(self.Primary && len(self.Slots) > 0).To(BeTrue(), "b2 serves shard 1")
			g.Expect(nodesOf(g, voter)).To(ContainElement(And(HaveField("ID", b.Status.NodeID), HaveField("Primary", true))),
				"the voter must still list b as the primary")
		}).WithTimeout(20 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())

		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&b2), &b2)).To(Succeed()) // the version the kubelet reports on
		Expect(e.kubelet.crash(ctx, &b2)).To(Succeed())
		By("taking over without a vote, on the voter's view")
		Eventually(func(g Gomega) {
			self, ok := selfOf(pb)
			g.Expect(ok).To(BeTrue())
			g.Expect(self.Primary && len(self.Slots) > 0).To(BeTrue(), "b serves shard 1 again")
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		reasons := eventReasons(Default)
		Expect(reasons).NotTo(HaveKey("FailoverTimedOut"))
		Expect(e.eventNotes(Default, "Takeover")).To(ContainElement(And(ContainSubstring("refuse it their votes"), ContainSubstring("TAKEOVER"))))

		By("healing the bus and the server: the cluster is whole again, every key kept")
		Expect(valkeytest.HealBus(voter, pb)).To(Succeed())
		Expect(valkeytest.HealBus(voter, pb2)).To(Succeed())
		e.kubelet.release(b2.Name)
		e.expectReady("stale", time.Minute)
		expectKeys(Default, e.anyServer("stale"), keys)
	})

	It("promotes the replica of a primary whose pod is deleted with no grace period on the operator's word", Label("slow"), func() {
		// The pod is gone from the API before the kubelet could report its server's exit;
		// the node-controller's probe of the address the pod had is refused, and it says
		// ServerDown (the stand-in kubelet writes what it would). Valkey would need
		// cluster-node-timeout (5 s here) to flag the primary failing.
		keys, dead, replica := e.shardWithKeys("gone", 1, nodeTimeout("5000"))

		Expect(e.kubelet.recreatePod(ctx, &dead)).To(Succeed())
		By("promoting the replica with a forced failover that names the refused probe")
		Eventually(func(g Gomega) {
			g.Expect(e.cluster(g, "gone").Status.Shards[1].Primary).To(Equal(replica.Name))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		Expect(e.eventNotes(Default, "Takeover")).To(ContainElement(ContainSubstring("no longer listens")))
		e.expectReady("gone", time.Minute)
		expectKeys(Default, e.anyServer("gone"), keys)
	})

	It("promotes the replica of a primary whose pod was replaced at once, though its member no longer reports the exit", Label("slow"), func() {
		// A Deployment's pod deleted with no grace period: the node-controller reports the
		// old server's exit (its address refuses), then the new pod's server answers at a
		// new address with a new ID and the report turns False, before or while the
		// cluster-controller reads it. The exit it saw still stands for the old ID.
		keys, dead, replica := e.shardWithKeys("replaced", 1, nodeTimeout("15000"))

		start := time.Now()
		Expect(e.kubelet.replacePod(ctx, &dead)).To(Succeed())
		By("promoting the replica on the operator's word, long before Valkey's node timeout (15 s)")
		Eventually(func(g Gomega) {
			g.Expect(e.cluster(g, "replaced").Status.Shards[1].Primary).To(Equal(replica.Name))
		}).WithTimeout(12 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("shard 1 served by %s %s after the kill\n", replica.Name, time.Since(start).Round(10*time.Millisecond))
		Expect(e.eventNotes(Default, "Takeover")).To(ContainElement(ContainSubstring("no longer listens")))
		e.expectReady("replaced", time.Minute)
		expectKeys(Default, e.anyServer("replaced"), keys)
	})
})

// relayedShardWithKeys makes a Ready 3x1 cluster whose servers' buses run through relays
// (so a spec can cut them), writes keys into it, and returns them with shard sh's primary
// and its replica, caught up.
func (e *env) relayedShardWithKeys(name string, sh int32) (map[string]string, v1alpha1.ValkeyNode, v1alpha1.ValkeyNode) {
	e.kubelet.busRelay = true
	return e.shardWithKeys(name, sh)
}

// shardWithKeys makes a Ready 3x1 cluster with the spec mutate makes, writes keys into
// it, and returns them with shard sh's primary and its replica, caught up.
func (e *env) shardWithKeys(name string, sh int32, mutate ...func(*v1alpha1.ValkeyClusterSpec)) (map[string]string, v1alpha1.ValkeyNode, v1alpha1.ValkeyNode) {
	e.createCluster(name, 3, 1, mutate...)
	e.expectReady(name, time.Minute)
	keys := writeKeys(e.anyServer(name), 300)
	primary, replica := e.member(Default, name, sh, true), e.member(Default, name, sh, false)
	expectCaughtUp(e, primary.Name, replica.Name)
	return keys, primary, replica
}

// nodeTimeout sets the cluster's cluster-node-timeout, in milliseconds: how long Valkey
// itself takes to flag a silent primary failing.
func nodeTimeout(ms string) func(*v1alpha1.ValkeyClusterSpec) {
	return func(s *v1alpha1.ValkeyClusterSpec) { s.Config = map[string]string{"cluster-node-timeout": ms} }
}
