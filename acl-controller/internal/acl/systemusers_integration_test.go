package acl

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// notNoPerm fails when err is a permission refusal; other errors (a bogus node ID, a
// slot in a wrong state) are fine: the spec is about permissions.
func notNoPerm(what string, err error) {
	GinkgoHelper()
	if err != nil {
		Expect(err.Error()).NotTo(ContainSubstring("NOPERM"), "_operator may not %s", what)
	}
}

// aclLogUsers returns the users of the server's ACL LOG entries.
func aclLogUsers(s *valkeytest.Server) []string {
	GinkgoHelper()
	v, err := s.Dial(GinkgoTB()).DoValue(suite.Step(), "ACL", "LOG")
	Expect(err).NotTo(HaveOccurred())
	var out []string
	entries, _ := v.([]any)
	for _, e := range entries {
		fields, _ := e.([]any)
		for i := 0; i+1 < len(fields); i += 2 {
			if fields[i] == "username" {
				out = append(out, fields[i+1].(string)+":"+fieldOf(fields, "object"))
			}
		}
	}
	return out
}

func fieldOf(fields []any, name string) string {
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i] == name {
			s, _ := fields[i+1].(string)
			return s
		}
	}
	return ""
}

var _ = Describe("The system users", func() {
	// The library's every command as _operator: a small cluster formed, a replica that
	// authenticates as _replication, a slot moved with MIGRATE, a failover; none refused.
	It("let _operator run the whole valkey library and _replication replicate", func() {
		srv := valkeytest.Start(GinkgoTB(), 3, valkeytest.Options{})
		f := NewFile(SystemUsers(testPasswords, srv[0].Version), nil)
		for _, s := range srv {
			loadFile(s, f)
			Expect(s.Dial(GinkgoTB()).ConfigSet(suite.Step(), map[string]string{
				"primaryuser": v1alpha1.UserReplication, "primaryauth": testPasswords[v1alpha1.UserReplication][0]})).To(Succeed())
			_, err := s.Dial(GinkgoTB()).Do(suite.Step(), "ACL", "LOG", "RESET")
			Expect(err).NotTo(HaveOccurred())
		}
		a, b, c := operatorClient(srv[0]), operatorClient(srv[1]), operatorClient(srv[2])
		ctx := suite.Step()

		Expect(a.Ping(ctx)).To(Succeed())
		Expect(a.Info(ctx)).Error().NotTo(HaveOccurred())
		Expect(a.Version(ctx)).Error().NotTo(HaveOccurred())
		Expect(a.ReplicationInfo(ctx)).Error().NotTo(HaveOccurred())
		Expect(a.ConfigGet(ctx, "maxmemory")).Error().NotTo(HaveOccurred())
		Expect(a.ConfigSet(ctx, map[string]string{"maxmemory": "0"})).To(Succeed())
		Expect(a.ACLWhoAmI(ctx)).To(Equal(v1alpha1.UserOperator))
		Expect(a.ClientList(ctx)).To(ContainElement(HaveField("User", v1alpha1.UserOperator)))
		ids := make([]string, 3)
		for i, cl := range []*valkey.Client{a, b, c} {
			var err error
			ids[i], err = cl.MyID(ctx)
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(a.AddSlotsRange(ctx, []valkey.SlotRange{{Start: 0, End: 16383}})).To(Succeed())
		for _, s := range srv[1:] {
			Expect(a.Meet(ctx, s.Host, s.Port, 0)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			for _, cl := range []*valkey.Client{a, b, c} {
				g.Expect(cl.ClusterNodes(ctx)).To(HaveLen(3))
			}
		}).WithTimeout(20*time.Second).Should(Succeed(), "every node knows the others")
		Expect(a.ClusterInfo(ctx)).Error().NotTo(HaveOccurred())
		Expect(a.ClusterShards(ctx)).Error().NotTo(HaveOccurred())

		By("b replicating a, logging in as _replication")
		Expect(b.Replicate(ctx, ids[0])).To(Succeed())
		Eventually(b.ReplicationInfo).WithArguments(ctx).WithTimeout(30*time.Second).
			Should(HaveField("LinkUp", BeTrue()), "the replica's link is up")
		Eventually(func(g Gomega) {
			for _, cl := range []*valkey.Client{a, b, c} {
				g.Expect(cl.ClusterInfo(ctx)).To(HaveKeyWithValue("cluster_state", "ok"))
			}
		}).WithTimeout(20*time.Second).Should(Succeed(), "the cluster state is ok on every node")

		By("moving slot 0's keys from a to c with MIGRATE (c logs the move in as _operator)")
		admin := srv[0].Dial(GinkgoTB())
		for _, k := range []string{"{06S}a", "{06S}b"} { // slot 0
			Expect(admin.Do(ctx, "SET", k, "v")).Error().NotTo(HaveOccurred())
		}
		Expect(a.DelSlotsRange(ctx, []valkey.SlotRange{{Start: 1, End: 1}})).To(Succeed())
		Expect(a.AddSlotsRange(ctx, []valkey.SlotRange{{Start: 1, End: 1}})).To(Succeed())
		Expect(c.SetSlotImporting(ctx, 0, ids[0])).To(Succeed())
		Expect(a.SetSlotMigrating(ctx, 0, ids[2])).To(Succeed())
		Expect(a.CountKeysInSlot(ctx, 0)).To(BeEquivalentTo(2))
		keys, err := a.GetKeysInSlot(ctx, 0, 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(keys).To(HaveLen(2))
		Expect(a.Migrate(ctx, valkey.MigrateArgs{Host: srv[2].Host, Port: srv[2].Port, Keys: keys,
			Username: v1alpha1.UserOperator, Password: testPasswords[v1alpha1.UserOperator][0]})).To(Succeed())
		Expect(c.SetSlotNode(ctx, 0, ids[2])).To(Succeed())
		Expect(a.SetSlotNode(ctx, 0, ids[2])).To(Succeed())
		Expect(c.CountKeysInSlot(ctx, 0)).To(BeEquivalentTo(2), "slot 0 on the target")
		Expect(a.SetSlotStable(ctx, 1)).To(Succeed())
		if srv[0].Version.AtLeast(9, 0) {
			atomicSlotMigration(a, admin, ids[2])
		}

		By("failing over, forgetting an unknown node, and the ACL commands")
		Eventually(b.ReplicationInfo).WithArguments(ctx).WithTimeout(30*time.Second).
			Should(HaveField("LinkUp", BeTrue()), "the replica caught up")
		notNoPerm("fail over", b.Failover(ctx, valkey.FailoverDefault))
		notNoPerm("forget", a.Forget(ctx, strings.Repeat("0", 40)))
		Expect(a.ACLSetUser(ctx, "tmp", "off")).To(Succeed())
		Expect(a.ACLGetUser(ctx, "tmp")).Error().NotTo(HaveOccurred())
		Expect(a.ACLDelUser(ctx, "tmp")).To(Succeed())
		Expect(a.ACLList(ctx)).Error().NotTo(HaveOccurred())
		Expect(a.ACLUsers(ctx)).Error().NotTo(HaveOccurred())
		Expect(a.ACLTransaction(ctx, []valkey.ACLOp{{Name: "tmp", Rules: []string{"off"}}, {Name: "tmp", Delete: true}})).Error().NotTo(HaveOccurred())
		notNoPerm("ACL LOAD", a.ACLLoad(ctx))

		for _, s := range srv {
			for _, entry := range aclLogUsers(s) {
				Expect(entry).NotTo(HavePrefix("_"), "%s: ACL LOG has a refusal of a system user", s.Addr())
			}
		}
	})

	Describe("may not do what they do not need", Ordered, func() {
		var s *valkeytest.Server
		BeforeAll(func() {
			s = startServer()
			loadFile(s, NewFile(SystemUsers(testPasswords, s.Version), nil))
		})

		// The server's own answer (ACL DRYRUN, which runs nothing) to whether user may
		// run cmd.
		DescribeTable("refused by the server",
			func(user string, cmd ...string) {
				Expect(s.Dial(GinkgoTB()).Do(suite.Step(), append([]string{"ACL", "DRYRUN", user}, cmd...)...)).
					To(ContainSubstring("no permissions"))
			},
			commandEntries(v1alpha1.UserOperator, [][]string{
				{"FLUSHALL"}, {"DEBUG", "SLEEP", "0"}, {"SHUTDOWN", "NOSAVE"}, {"KEYS", "*"}, {"GET", "k"}, {"SET", "k", "v"},
				{"CONFIG", "REWRITE"}, {"CLUSTER", "RESET"}, {"ACL", "SAVE"}, {"ACL", "LOG"}, {"MODULE", "LIST"},
				{"SAVE"}, {"BGSAVE"}, {"EVAL", "return 1", "0"}, {"CLIENT", "KILL", "ID", "1"}, {"MONITOR"},
				{"REPLICAOF", "NO", "ONE"}, {"CLUSTER", "FLUSHSLOTS"}, {"FUNCTION", "FLUSH"}, {"SUBSCRIBE", "x"},
			}),
			// CLUSTER NODES is allowed on purpose: a restarted server asks its peers with it.
			commandEntries(v1alpha1.UserReplication, [][]string{{"INFO"}, {"GET", "k"}, {"CONFIG", "GET", "x"}, {"CLUSTER", "SHARDS"}, {"CLUSTER", "FAILOVER"}, {"FLUSHALL"}}),
			commandEntries(v1alpha1.UserExporter, [][]string{
				{"CONFIG", "SET", "maxmemory", "1"}, {"GET", "k"}, {"SET", "k", "v"}, {"FLUSHALL"}, {"CLIENT", "LIST"}, {"ACL", "LIST"}, {"SLOWLOG", "RESET"},
				// CONFIG GET would read primaryauth (the replication password); the exporter
				// scrapes with its config metrics off.
				{"CONFIG", "GET", "primaryauth"}, {"CONFIG", "GET", "maxmemory"}, {"CLUSTER", "FAILOVER"},
			}),
			// CLIENT LIST is allowed on purpose: the pre-stop hook waits with it for the
			// clients to move to the new primary (addresses and command names, no values).
			commandEntries(v1alpha1.UserLifecycle, [][]string{
				{"CONFIG", "GET", "primaryauth"}, {"CONFIG", "SET", "maxmemory", "1"}, {"GET", "k"}, {"FLUSHALL"}, {"CLUSTER", "RESET"},
				{"CLUSTER", "FORGET", "x"}, {"ACL", "LIST"}, {"SHUTDOWN"}, {"DEBUG", "SLEEP", "0"},
			}),
		)

		It("lets _replication log in, ping and read the cluster's nodes", func() {
			repl, err := dialAs(s, v1alpha1.UserReplication, testPasswords[v1alpha1.UserReplication][0])
			Expect(err).NotTo(HaveOccurred())
			Expect(repl.Ping(suite.Step())).To(Succeed())
			wantAllowed("_replication", repl, "CLUSTER", "NODES")
		})

		DescribeTable("run by _exporter",
			func(cmd ...string) {
				exp, err := dialAs(s, v1alpha1.UserExporter, testPasswords[v1alpha1.UserExporter][0])
				Expect(err).NotTo(HaveOccurred())
				wantAllowed("_exporter", exp, cmd...)
			},
			commandEntries("", [][]string{{"PING"}, {"INFO"}, {"CLUSTER", "INFO"}, {"SLOWLOG", "LEN"}, {"LATENCY", "LATEST"}}),
		)

		// The pre-stop hook's INFO replication and CLIENT LIST; its CLUSTER FAILOVER is
		// checked with ACL DRYRUN (a lone server has no primary to take over).
		It("lets _lifecycle run the hand-over", func() {
			lc, err := dialAs(s, v1alpha1.UserLifecycle, testPasswords[v1alpha1.UserLifecycle][0])
			Expect(err).NotTo(HaveOccurred())
			wantAllowed("_lifecycle", lc, "INFO", "replication")
			wantAllowed("_lifecycle", lc, "CLIENT", "LIST")
			Expect(s.Dial(GinkgoTB()).Do(suite.Step(), "ACL", "DRYRUN", v1alpha1.UserLifecycle, "CLUSTER", "FAILOVER")).To(Equal("OK"))
		})

		It("gives a user's channel patterns the pub/sub commands, unless its commands deny them", func() {
			withChannels := func(name string, deny ...string) v1alpha1.UserSpec {
				return v1alpha1.UserSpec{Name: name, NoPass: true, Commands: &v1alpha1.CommandsSpec{Allow: []string{"@read"}, Deny: deny},
					Channels: &v1alpha1.ChannelsSpec{Patterns: []string{"notifications:*"}}}
			}
			users := []User{RenderSpecUser(withChannels("alice"), nil), RenderSpecUser(withChannels("carol", "@pubsub"), nil)}
			loadFile(s, NewFile(SystemUsers(testPasswords, s.Version), users))
			dryRun := func(user string, cmd ...string) string {
				out, err := s.Dial(GinkgoTB()).Do(suite.Step(), append([]string{"ACL", "DRYRUN", user}, cmd...)...)
				Expect(err).NotTo(HaveOccurred())
				return out
			}
			Expect(dryRun("alice", "SUBSCRIBE", "notifications:orders")).To(Equal("OK"))
			Expect(dryRun("alice", "PUBLISH", "notifications:orders", "x")).To(Equal("OK"))
			Expect(dryRun("alice", "SUBSCRIBE", "other")).To(ContainSubstring("no permissions"), "a channel outside the patterns")
			Expect(dryRun("carol", "SUBSCRIBE", "notifications:orders")).To(ContainSubstring("no permissions"), "the deny wins")
			loadFile(s, NewFile(SystemUsers(testPasswords, s.Version), nil))
		})

		It("keeps the default user out", func() {
			_, err := valkeytest.RawReply(s.Addr(), "default", "", 2, "PING")
			Expect(err).To(HaveOccurred(), "the default user can log in")
		})
	})
})

// commandEntries makes one table entry per command, its parameters the user (when
// set) and the command's words.
func commandEntries(user string, cmds [][]string) []TableEntry {
	var out []TableEntry
	for _, cmd := range cmds {
		params := []any{}
		name := strings.Join(cmd, " ")
		if user != "" {
			params = append(params, user)
			name = user + " " + name
		}
		for _, w := range cmd {
			params = append(params, w)
		}
		out = append(out, Entry(name, params...))
	}
	return out
}

// atomicSlotMigration moves slot 2 with CLUSTER MIGRATESLOTS (9.0+): the source logs in
// to the target as _replication and replays the keys there.
func atomicSlotMigration(src, admin *valkey.Client, target string) {
	GinkgoHelper()
	ctx := suite.Step()
	for _, cmd := range [][]string{ // every type, in slot 2, one with a TTL
		{"SET", "{0Sb}s", "v", "PX", "100000"}, {"RPUSH", "{0Sb}l", "a", "b"}, {"HSET", "{0Sb}h", "f", "v"},
		{"SADD", "{0Sb}set", "m"}, {"ZADD", "{0Sb}z", "1", "m"}, {"XADD", "{0Sb}x", "*", "f", "v"}, {"PFADD", "{0Sb}hll", "a"},
	} {
		Expect(admin.Do(ctx, cmd...)).Error().NotTo(HaveOccurred())
	}
	Expect(src.MigrateSlots(ctx, []valkey.SlotRange{{Start: 2, End: 2}}, target)).To(Succeed())
	Eventually(func(g Gomega) {
		jobs, err := src.SlotMigrations(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(jobs).NotTo(BeEmpty())
		g.Expect(jobs[len(jobs)-1].Done()).To(BeTrue())
	}).WithTimeout(30*time.Second).Should(Succeed(), "the atomic slot migration ends")
	jobs, err := src.SlotMigrations(ctx)
	Expect(err).NotTo(HaveOccurred())
	last := jobs[len(jobs)-1]
	Expect(last.State).To(Equal(valkey.SlotMigrationSuccess), "atomic slot migration: %s", last.Message)
	Expect(src.CountKeysInSlot(ctx, 2)).To(BeZero(), "keys of slot 2 left on the source")
	notNoPerm("cancel slot migrations", src.CancelSlotMigrations(ctx))
}
