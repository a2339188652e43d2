package cluster

import (
	"context"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
)

var _ = Describe("A cluster at rest", func() {
	ctx := context.Background()
	var e *env
	BeforeEach(func() { e = newEnv() })

	It("costs one CLUSTER NODES a period, and a failover Valkey makes by itself is still seen", func() {
		e.stopController()
		e.restPeriod = 500 * time.Millisecond
		e.startController()
		e.createCluster("rest", 3, 1)
		e.expectReady("rest", time.Minute)

		// calls counts, per member, the calls of a command on its server.
		calls := func(g Gomega, command string) map[string]int {
			out := map[string]int{}
			for _, vn := range e.members(g, "rest") {
				c := dial(g, e.kubelet.server(vn.Name))
				info, err := c.Info(ctx, "commandstats")
				c.Close()
				g.Expect(err).NotTo(HaveOccurred())
				stat := info.Get("cmdstat_" + command) // calls=N,usec=...
				n, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(stat, ",")[0], "calls="))
				out[vn.Name] = n
			}
			return out
		}

		By("reading no member whole once at rest")
		var nodesBefore map[string]int
		Eventually(func(g Gomega) {
			infoBefore := calls(g, "cluster|info")
			nodesBefore = calls(g, "cluster|nodes")
			time.Sleep(6 * e.restPeriod)
			g.Expect(calls(g, "cluster|info")).To(Equal(infoBefore), "CLUSTER INFO is asked of every member by a whole pass")
		}).WithTimeout(30 * time.Second).Should(Succeed())

		By("asking one member for CLUSTER NODES each period, which counts as a pass")
		const lastPass = "valkey_operator_cluster_last_successful_pass_timestamp_seconds{}"
		passBefore := e.series(Default, "rest")[lastPass]
		time.Sleep(6 * e.restPeriod)
		Expect(e.series(Default, "rest")[lastPass]).To(BeNumerically(">", passBefore),
			"the last successful pass advances at rest (the alert ValkeyOperatorPassesFailing reads it)")
		grew := 0
		for name, n := range calls(Default, "cluster|nodes") {
			if n > nodesBefore[name] {
				grew++
				Expect(n-nodesBefore[name]).To(BeNumerically(">=", 3), "member %s asked each period", name)
			}
		}
		Expect(grew).To(Equal(1), "CLUSTER NODES asked of one member")

		By("seeing a failover that nobody told the operator of")
		replica := e.member(Default, "rest", 1, false)
		c := dial(Default, e.kubelet.server(replica.Name))
		Expect(c.Failover(ctx, valkey.FailoverDefault)).To(Succeed())
		c.Close()
		Eventually(func(g Gomega) {
			g.Expect(e.cluster(g, "rest").Status.Shards[1].Primary).To(Equal(replica.Name))
			vn := e.member(g, "rest", 1, true)
			g.Expect(vn.Name).To(Equal(replica.Name))
			synced := conditions.Get(vn.Status.Conditions, v1alpha1.ConditionSynced)
			g.Expect(synced).NotTo(BeNil())
			g.Expect(synced.Reason).To(Equal(v1alpha1.ReasonIsPrimary), "the Synced reason the node-controller reads the role again on")
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})
})
