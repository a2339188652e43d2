package acl

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/publish"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// These specs run real valkey-server processes (valkey/valkeytest) with aclfiles
// rendered by this package.

// testPasswords are the system users' passwords of the tests.
var testPasswords = systemPasswords{
	v1alpha1.UserOperator:    {"operator-password-0123456789"},
	v1alpha1.UserReplication: {"replication-password-0123456789"},
	v1alpha1.UserExporter:    {"exporter-password-0123456789"},
	v1alpha1.UserLifecycle:   {"lifecycle-password-0123456789"},
}

// startServer starts one server for the spec.
func startServer() *valkeytest.Server {
	return valkeytest.Start(GinkgoTB(), 1, valkeytest.Options{})[0]
}

// adminLine keeps valkeytest's admin user in a loaded file, so the test can look.
func adminLine(s *valkeytest.Server) string {
	return "user " + valkeytest.AdminUser + " on #" + valkey.ACLPasswordHash(s.AdminPassword) + " ~* &* +@all\n"
}

// loadFile writes f (and the test's admin user) as the server's aclfile and loads it
// with ACL LOAD, which parses the file as a starting server does.
func loadFile(s *valkeytest.Server, f File) {
	GinkgoHelper()
	Expect(os.WriteFile(s.ACLFile, []byte(f.Content()+adminLine(s)), 0o600)).To(Succeed())
	Expect(s.Dial(GinkgoTB()).ACLLoad(suite.Step())).To(Succeed())
}

// serveAllSlots gives the single server every slot and waits until it serves them.
func serveAllSlots(s *valkeytest.Server) {
	GinkgoHelper()
	admin := s.Dial(GinkgoTB())
	Expect(admin.AddSlotsRange(suite.Step(), []valkey.SlotRange{{Start: 0, End: 16383}})).To(Succeed())
	Eventually(func() (map[string]string, error) { return admin.ClusterInfo(suite.Step()) }).
		WithTimeout(10 * time.Second).Should(HaveKeyWithValue("cluster_state", "ok"))
}

// dialAs logs in as user; the client is closed with the spec.
func dialAs(s *valkeytest.Server, user, password string) (*valkey.Client, error) {
	c, err := valkey.Dial(suite.Step(), valkey.Options{Addr: s.Addr(), Username: user, Password: password, DialTimeout: time.Second})
	if err == nil {
		DeferCleanup(c.Close)
	}
	return c, err
}

func operatorClient(s *valkeytest.Server) *valkey.Client {
	GinkgoHelper()
	c, err := dialAs(s, v1alpha1.UserOperator, testPasswords[v1alpha1.UserOperator][0])
	Expect(err).NotTo(HaveOccurred())
	return c
}

// do runs a command and returns its error's text ("" on success).
func do(c *valkey.Client, args ...string) string {
	if _, err := c.DoValue(suite.Step(), args...); err != nil {
		return err.Error()
	}
	return ""
}

func wantNoPerm(who string, c *valkey.Client, args ...string) {
	GinkgoHelper()
	Expect(do(c, args...)).To(ContainSubstring("NOPERM"), "%s: %v", who, args)
}

func wantAllowed(who string, c *valkey.Client, args ...string) {
	GinkgoHelper()
	Expect(do(c, args...)).To(BeEmpty(), "%s: %v", who, args)
}

func seedFile(alicePW string) File {
	users := seedUsers()
	return NewFile(SystemUsers(testPasswords, valkey.Version{}), []User{
		RenderSpecUser(users[0], []string{alicePW}), RenderSpecUser(users[1], nil),
	})
}

// applyTo applies f to the server through a Reconciler, as _operator.
func applyTo(r *Reconciler, s *valkeytest.Server, f File, removed ...string) MemberResult {
	vn := &v1alpha1.ValkeyNode{}
	vn.Name = "member"
	vn.Status.PodIP = "127.0.0.1"
	r.Addr = func(*v1alpha1.ValkeyNode) string { return s.Addr() }
	cred := valkeyconn.Credentials{Username: v1alpha1.UserOperator}.WithPassword(testPasswords[v1alpha1.UserOperator][0])
	conns := r.reach(suite.Step(), []v1alpha1.ValkeyNode{*vn}, []valkeyconn.Credentials{cred})
	return r.applyMember(suite.Step(), conns[0], f, removed)
}

// newTestReconciler is a Reconciler with only a connection pool, closed with the spec.
func newTestReconciler() *Reconciler {
	r := &Reconciler{Base: publish.Base{Pool: &valkeyconn.Pool{}}}
	DeferCleanup(r.Pool.Close)
	return r
}

var _ = Describe("Users on a real server", func() {
	It("gives the reference's example users what they ask for, and nothing more", func() {
		s := startServer()
		const alicePW = "alice-password-42"
		loadFile(s, seedFile(alicePW))
		serveAllSlots(s)

		_, err := dialAs(s, "alice", "wrong")
		Expect(err).To(HaveOccurred(), "alice logged in with a wrong password")
		alice, err := dialAs(s, "alice", alicePW)
		Expect(err).NotTo(HaveOccurred())
		// Keys: app:* read/write, shared:* read only, nothing else. All keys of one slot
		// ({t}) so the single-node cluster serves them.
		for _, k := range []string{"app:{t}1", "app:{t}2"} {
			wantAllowed("alice", alice, "SET", k, "v")
			wantAllowed("alice", alice, "GET", k)
		}
		admin := s.Dial(GinkgoTB())
		_, err = admin.Do(suite.Step(), "SET", "shared:{t}", "x")
		Expect(err).NotTo(HaveOccurred())
		wantAllowed("alice", alice, "GET", "shared:{t}")
		wantNoPerm("alice", alice, "SET", "shared:{t}", "y")
		wantNoPerm("alice", alice, "GET", "other:{t}")
		// Commands: @admin and @dangerous are denied.
		wantNoPerm("alice", alice, "FLUSHALL")
		wantNoPerm("alice", alice, "CONFIG", "GET", "maxmemory")
		wantNoPerm("alice", alice, "KEYS", "*")
		// Channels: the patterns come with the pub/sub commands, and the patterns limit her.
		_, err = valkeytest.RawReply(s.Addr(), "alice", alicePW, 2, "SUBSCRIBE", "notifications:orders")
		Expect(err).NotTo(HaveOccurred(), "alice SUBSCRIBE notifications:orders")
		_, err = valkeytest.RawReply(s.Addr(), "alice", alicePW, 2, "SUBSCRIBE", "private")
		Expect(err).To(MatchError(ContainSubstring("channel")), "alice SUBSCRIBE private: want NOPERM for the channel")
		wantAllowed("alice", alice, "PUBLISH", "notifications:x", "hi")
		wantNoPerm("alice", alice, "PUBLISH", "private", "hi")
		loadFile(s, seedFile(alicePW))

		// bob: everything, any password.
		bob, err := dialAs(s, "bob", "anything-at-all")
		Expect(err).NotTo(HaveOccurred())
		wantAllowed("bob", bob, "SET", "private:{t}", "1")
		wantAllowed("bob", bob, "CONFIG", "GET", "maxmemory")
		wantAllowed("bob", bob, "FLUSHALL")
		_, err = valkeytest.RawReply(s.Addr(), "bob", "x", 2, "SUBSCRIBE", "private")
		Expect(err).NotTo(HaveOccurred(), "bob SUBSCRIBE private")
		// default is off.
		_, err = valkeytest.RawReply(s.Addr(), "default", "", 2, "PING")
		Expect(err).To(HaveOccurred(), "the default user can log in")
	})

	It("changes passwords live: a removed one is refused at once, open sessions stay", func() {
		s := startServer()
		r := newTestReconciler()
		sys := SystemUsers(testPasswords, valkey.Version{})
		loadFile(s, NewFile(sys, nil))
		spec := v1alpha1.UserSpec{Name: "carol", PasswordSecret: &v1alpha1.PasswordSecretRef{Name: "s", Keys: []string{"old", "new"}},
			Commands: &v1alpha1.CommandsSpec{Allow: []string{"ping"}}}

		f1 := NewFile(sys, []User{RenderSpecUser(spec, []string{"carol-old-pw", "carol-new-pw"})})
		Expect(applyTo(r, s, f1)).To(HaveField("Applied", BeTrue()))
		for _, pw := range []string{"carol-old-pw", "carol-new-pw"} {
			_, err := dialAs(s, "carol", pw)
			Expect(err).NotTo(HaveOccurred(), "carol with %s", pw)
		}
		// Remove the first key: its password is refused at once, the other still works,
		// and an open session of carol stays open.
		session, err := dialAs(s, "carol", "carol-old-pw")
		Expect(err).NotTo(HaveOccurred())
		spec.PasswordSecret.Keys = []string{"new"}
		f2 := NewFile(sys, []User{RenderSpecUser(spec, []string{"carol-new-pw"})})
		Expect(applyTo(r, s, f2)).To(HaveField("Applied", BeTrue()))
		_, err = dialAs(s, "carol", "carol-old-pw")
		Expect(err).To(MatchError(ContainSubstring("WRONGPASS")), "removed password still accepted")
		_, err = dialAs(s, "carol", "carol-new-pw")
		Expect(err).NotTo(HaveOccurred(), "remaining password refused")
		Expect(session.Ping(suite.Step())).To(Succeed())
		// The marker says which revision runs, and only the current marker is left.
		users, err := s.Dial(GinkgoTB()).ACLUsers(suite.Step())
		Expect(err).NotTo(HaveOccurred())
		var markers []string
		for _, u := range users {
			if IsMarker(u) {
				markers = append(markers, u)
			}
		}
		Expect(markers).To(Equal([]string{MarkerName(f2.Revision)}))
		// A second pass finds the marker and sends nothing.
		Expect(applyTo(r, s, f2)).To(And(HaveField("Applied", BeTrue()), HaveField("Message", ContainSubstring("is live"))), "steady state")
	})

	It("adds and deletes users live, leaving users the file never defined alone", func() {
		s := startServer()
		r := newTestReconciler()
		sys := SystemUsers(testPasswords, valkey.Version{})
		loadFile(s, NewFile(sys, nil))
		admin := s.Dial(GinkgoTB())
		Expect(admin.ACLSetUser(suite.Step(), "manual", "on", "nopass", "+ping")).To(Succeed())

		dave := User{Name: "dave", Rules: []string{"on", "nopass", "+ping"}}
		Expect(applyTo(r, s, NewFile(sys, []User{dave}))).To(HaveField("Applied", BeTrue()), "add")
		_, err := dialAs(s, "dave", "x")
		Expect(err).NotTo(HaveOccurred(), "dave after add")
		Expect(applyTo(r, s, NewFile(sys, nil), "dave")).To(HaveField("Applied", BeTrue()), "delete")
		_, err = admin.ACLGetUser(suite.Step(), "dave")
		Expect(err).To(MatchError(valkey.ErrNoSuchUser), "dave after delete")
		_, err = admin.ACLGetUser(suite.Step(), "manual")
		Expect(err).NotTo(HaveOccurred(), "a user the file never defined was touched")
	})

	It("applies all or nothing: a refused user changes nothing, a reader never sees half a revision", func() {
		s := startServer()
		r := newTestReconciler()
		sys := SystemUsers(testPasswords, valkey.Version{})
		good := NewFile(sys, []User{{Name: "a", Rules: []string{"on", "nopass", "+get"}}})
		loadFile(s, good)
		admin := s.Dial(GinkgoTB())
		before, err := admin.ACLList(suite.Step())
		Expect(err).NotTo(HaveOccurred())

		bad := NewFile(sys, []User{{Name: "a", Rules: []string{"on", "nopass", "+set"}}, {Name: "b", Rules: []string{"on", "+bogus"}}})
		res := applyTo(r, s, bad)
		Expect(res.Applied).To(BeFalse(), "a refused user was applied: %+v", res)
		Expect(res.Refused).To(HaveKeyWithValue("b", Not(BeEmpty())))
		Expect(res.Refused["a"]).To(BeEmpty())
		Expect(admin.ACLList(suite.Step())).To(Equal(before), "the member changed")

		// Isolation: flip 40 users between two rule sets while a reader lists them.
		set := func(cmd string) File {
			var us []User
			for i := range 40 {
				us = append(us, User{Name: fmt.Sprintf("u%02d", i), Rules: []string{"on", "nopass", "+" + cmd}})
			}
			return NewFile(sys, us)
		}
		files := []File{set("get"), set("set")}
		var stop atomic.Bool
		var wg sync.WaitGroup
		var mixed atomic.Int32
		wg.Add(1)
		go func() {
			defer wg.Done()
			reader, err := valkey.Dial(context.Background(), s.Options())
			if err != nil {
				return
			}
			defer reader.Close()
			for !stop.Load() {
				lines, err := reader.ACLList(context.Background())
				if err != nil {
					continue
				}
				gets, sets := 0, 0
				for _, l := range lines {
					if strings.HasPrefix(l, "user u") {
						if strings.HasSuffix(l, "+get") {
							gets++
						} else {
							sets++
						}
					}
				}
				if gets > 0 && sets > 0 {
					mixed.Add(1)
				}
			}
		}()
		for i := range 20 {
			Expect(applyTo(r, s, files[i%2])).To(HaveField("Applied", BeTrue()), "apply %d", i)
		}
		stop.Store(true)
		wg.Wait()
		Expect(mixed.Load()).To(BeZero(), "half-applied states a reader saw")
	})

	Describe("the local check of rules agrees with the server's", Ordered, func() {
		var s *valkeytest.Server
		var c *valkey.Client
		BeforeAll(func() {
			s = startServer()
			loadFile(s, NewFile(SystemUsers(testPasswords, valkey.Version{}), nil))
			c = operatorClient(s)
		})

		var entries []TableEntry
		for _, tc := range ruleCases {
			if fileSafe(User{Name: "u", Rules: tc.rules}) != "" {
				continue // the server would take it, the file could not
			}
			entries = append(entries, Entry(strings.Join(tc.rules, " "), tc.rules, tc.ok))
		}
		DescribeTable("for the rules of the table",
			func(rules []string, ok bool) {
				u := User{Name: "u", Rules: rules}
				ref, err := CheckLive(suite.Step(), c, []User{u})
				Expect(err).NotTo(HaveOccurred())
				Expect(ref["u"] == "").To(Equal(ok), "server accepted; the server says %q", ref["u"])
				if s.Version == (valkey.Version{Major: 8, Minor: 0, Patch: 1}) && !ok {
					Expect(CheckLocal([]User{u})["u"]).To(Equal(ref["u"]), "local message against the server's")
				}
			},
			entries,
		)

		It("leaves no scratch user on the server", func() {
			Expect(c.ACLUsers(suite.Step())).NotTo(ContainElement(scratchUser))
		})
	})
})
