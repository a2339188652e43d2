package acl

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/publish"
	"github.com/valkey-operator/valkey-operator/internal/testsuite"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// The API server of these specs is the suite's envtest (see suite_test.go). Valkey
// servers from valkeytest stand in for the pods.

// harness is a running controller against the API server and real Valkey servers.
type harness struct {
	*testsuite.Tenant
	mu      sync.Mutex                    // guards servers: the controller reads it
	servers map[string]*valkeytest.Server // by ValkeyNode name
	dir     string                        // of the servers
	cleanup []func()                      // stops the servers
	logs    *testsuite.Logs
	reloads sync.Map // exporter reloads by node name
	mgr     *testsuite.Running
	exp     *httptest.Server
	// maxReply is the controller's reply budget (0: the default).
	maxReply int64
}

const testDelay = 3 * time.Second

// testResync is the resync period of the harness's controller.
const testResync = 2 * time.Second

// newHarness starts the controller in a namespace of its own; it stops when the
// container that called newHarness ends.
func newHarness() *harness { return newHarnessWith(0) }

// newHarnessWith starts the controller with a reply budget of maxReply bytes.
func newHarnessWith(maxReply int64) *harness {
	h := &harness{Tenant: testsuite.NewTenant(suite.Config, "acl"), servers: map[string]*valkeytest.Server{}, logs: suite.Logs, maxReply: maxReply}
	h.dir = GinkgoT().TempDir()
	DeferCleanup(func() {
		for _, stop := range h.cleanup {
			stop()
		}
	})
	h.exp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		node := strings.TrimPrefix(strings.TrimSuffix(r.URL.Path, "/-/reload"), "/")
		n, _ := h.reloads.LoadOrStore(node, new(int))
		*(n.(*int))++
		_, _ = w.Write([]byte("ok"))
	}))
	DeferCleanup(h.exp.Close)
	h.start()
	DeferCleanup(h.stopManager)
	return h
}

// start runs a manager with a fresh reconciler (as after a restart).
func (h *harness) start() {
	GinkgoHelper()
	mgr, err := testsuite.Manager(suite.Config, h.Namespace)
	Expect(err).NotTo(HaveOccurred())
	pool := &valkeyconn.Pool{DialTimeout: time.Second, MaxReplyBytes: h.maxReply}
	r := &Reconciler{
		Base: publish.Base{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespaces: []string{h.Namespace}, Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("acl-controller"),
			Pool: pool, PropagationDelay: testDelay, Resync: testResync,
			Addr: func(vn *v1alpha1.ValkeyNode) string {
				if s := h.server(vn.Name); s != nil {
					return s.Addr()
				}
				return valkeyconn.Addr(vn.Status.PodIP)
			},
		},
		ExporterURL: func(vn *v1alpha1.ValkeyNode) string { return h.exp.URL + "/" + vn.Name + "/-/reload" },
	}
	h.mgr, err = testsuite.StartManager(mgr, func(ctx context.Context) error { return r.SetupWithManager(ctx, mgr, 2) }, pool.Close)
	Expect(err).NotTo(HaveOccurred())
}

func (h *harness) stopManager() { Expect(h.mgr.Stop()).To(Succeed(), "the manager") }

func (h *harness) ctx() context.Context { return suite.Step() }

// aclReady returns the cluster's ACLReady condition (nil when absent).
func (h *harness) aclReady(name string) *metav1.Condition {
	return h.ClusterCondition(name, v1alpha1.ConditionACLReady)
}

// server returns the server of a member, or nil.
func (h *harness) server(name string) *valkeytest.Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.servers[name]
}

// startServer starts a server loaded with the cluster's published aclfile, as a pod
// starts with the mounted one, for the member name.
func (h *harness) startServer(cluster, name string) *valkeytest.Server {
	GinkgoHelper()
	// Started for the harness, not the spec: in an ordered container the members serve
	// every spec that comes after.
	s, err := valkeytest.StartIn(h.dir, valkeytest.Options{})
	Expect(err).NotTo(HaveOccurred())
	h.cleanup = append(h.cleanup, s.Stop)
	acl := h.Secret(v1alpha1.ACLSecretName(cluster))
	Expect(os.WriteFile(s.ACLFile, append(acl.Data[v1alpha1.ACLFileKey], adminLine(s)...), 0o600)).To(Succeed())
	Expect(s.Dial(GinkgoTB()).ACLLoad(h.ctx())).To(Succeed())
	h.mu.Lock()
	h.servers[name] = s
	h.mu.Unlock()
	return s
}

// member starts a Valkey server for a new ValkeyNode of the cluster, loaded with the
// published aclfile as a pod would be, and publishes its pod IP.
func (h *harness) member(cluster, name string) *valkeytest.Server {
	GinkgoHelper()
	s := h.startServer(cluster, name)
	h.Member(cluster, name)
	return s
}

// expectApplied checks that the member's ACLApplied is True for revision.
func (h *harness) expectApplied(g Gomega, name, revision string) {
	c := h.NodeCondition(g, name, v1alpha1.ConditionACLApplied)
	g.Expect(c).NotTo(BeNil(), "ACLApplied of %s", name)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "ACLApplied of %s: %s", name, c.Message)
	g.Expect(c.Message).To(HaveSuffix(revision), "ACLApplied of %s", name)
}

// revision returns the cluster's status.acl.revision.
func (h *harness) revision(name string) string {
	if acl := h.Cluster(name).Status.ACL; acl != nil {
		return acl.Revision
	}
	return ""
}

// waitSettled waits until ACLReady has the reason and every member runs the
// cluster's current revision.
func (h *harness) waitSettled(cluster, reason string, nodes ...string) string {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := h.aclReady(cluster)
		g.Expect(c).NotTo(BeNil(), "ACLReady")
		g.Expect(c.Reason).To(Equal(reason), "ACLReady: %s", c.Message)
		rev := h.revision(cluster)
		acl := h.Secret(v1alpha1.ACLSecretName(cluster))
		g.Expect(acl).NotTo(BeNil())
		g.Expect(acl.Annotations).To(HaveKeyWithValue(annotationRevision, rev), "the Secret's revision")
		for _, n := range nodes {
			h.expectApplied(g, n, rev)
		}
	}).Should(Succeed(), "ACLReady %s and every member applied", reason)
	return h.revision(cluster)
}

// rotation returns the cluster's status.acl.rotation.
func (h *harness) rotation(name string) *v1alpha1.PasswordRotationStatus {
	if acl := h.Cluster(name).Status.ACL; acl != nil {
		return acl.Rotation
	}
	return nil
}

func (h *harness) updateCluster(name string, mutate func(*v1alpha1.ValkeyCluster)) {
	GinkgoHelper()
	Eventually(func() error {
		vc := h.Cluster(name)
		mutate(vc)
		return h.Client.Update(h.ctx(), vc)
	}).WithTimeout(10*time.Second).Should(Succeed(), "update of the cluster")
}

func loginWorks(s *valkeytest.Server, user, password string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := valkey.Dial(ctx, valkey.Options{Addr: s.Addr(), Username: user, Password: password, DialTimeout: time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Ping(ctx)
}

// A cluster's life: Secrets, status, live users, a missing password, a refused user, a
// deleted user, a rotation across a controller restart; and no secret in logs, events
// or conditions.
var _ = Describe("The acl-controller through a cluster's life", Ordered, func() {
	const alicePW, davePW = "alice-password-for-the-scenario", "dave-password-for-the-scenario"
	var (
		h              *harness
		a, b           *valkeytest.Server
		rev1           string
		sys            *corev1.Secret // the system users' Secret as first published
		newSys, final  *corev1.Secret // during and after the rotation
		opPW, replPW   string
		newOp, newRepl string
	)
	BeforeAll(func() {
		h = newHarness()
		Expect(h.Client.Create(h.ctx(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: "my-users-secret"},
			Data: map[string][]byte{"alicepw": []byte(alicePW)}})).To(Succeed())
		Expect(h.Client.Create(h.ctx(), &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: "demo"},
			Spec: v1alpha1.ValkeyClusterSpec{Users: seedUsers()}})).To(Succeed())
	})

	It("publishes the Secrets and the status", func() {
		rev1 = h.waitSettled("demo", v1alpha1.ReasonACLRendered)
		vc := h.Cluster("demo")
		Expect(vc.Status.ACL.SecretName).To(Equal("demo-acl"))
		Expect(vc.Status.ACL.SystemUsersSecretName).To(Equal("demo-system-users"))
		sys = h.Secret("demo-system-users")
		for _, s := range []*corev1.Secret{sys, h.Secret("demo-acl")} {
			h.ExpectOwned(s, vc)
		}
		opPW = string(sys.Data[v1alpha1.UserOperator])
		replPW = string(sys.Data[v1alpha1.UserReplication])
		for _, u := range systemUserNames {
			Expect(len(sys.Data[u])).To(BeNumerically(">=", 32), "characters of the password of %s", u)
		}
		Expect(string(sys.Data[v1alpha1.PrimaryAuthKey])).To(Equal("primaryauth "+replPW+"\n"), "primaryauth.conf holds the replication password")
		content := string(h.Secret("demo-acl").Data[v1alpha1.ACLFileKey])
		Expect(content).To(ContainSubstring("user alice on #" + valkey.ACLPasswordHash(alicePW) + " ~app:* %R~shared:* resetchannels &notifications:*"))
		Expect(content).To(ContainSubstring("user bob on nopass resetchannels +@all ~* &*"))
		Expect(content).To(ContainSubstring("user default off"))
	})

	It("makes the revision live on the members, keeping the passwords across passes", func() {
		a, b = h.member("demo", "demo-a"), h.member("demo", "demo-b")
		got := h.waitSettled("demo", v1alpha1.ReasonACLRendered, "demo-a", "demo-b")
		// (On 9.x the members' version adds the slot migration rules: a new revision.)
		if !a.Version.AtLeast(9, 0) {
			Expect(got).To(Equal(rev1), "the revision changed without a change")
		}
		Expect(string(h.Secret("demo-system-users").Data[v1alpha1.UserOperator])).To(Equal(opPW), "the operator's password changed")
		for _, s := range []*valkeytest.Server{a, b} {
			Expect(loginWorks(s, "alice", alicePW)).To(Succeed())
		}
	})

	It("reports a missing password Secret and still publishes the rest", func() {
		h.updateCluster("demo", func(vc *v1alpha1.ValkeyCluster) {
			vc.Spec.Users = append(vc.Spec.Users, v1alpha1.UserSpec{Name: "dave",
				PasswordSecret: &v1alpha1.PasswordSecretRef{Name: "dave-secret", Keys: []string{"pw"}}, Commands: &v1alpha1.CommandsSpec{Allow: []string{"ping"}}})
		})
		Eventually(func(g Gomega) {
			c := h.aclReady("demo")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPasswordMissing))
			g.Expect(c.Message).To(ContainSubstring("user dave: Secret dave-secret not found"))
		}).Should(Succeed(), "ACLReady PasswordMissing naming dave")

		By("keeping an existing user's previous rules when a key of its Secret is missing")
		alice := h.Secret("my-users-secret")
		alice.Data = map[string][]byte{"otherkey": []byte("x")}
		Expect(h.Client.Update(h.ctx(), alice)).To(Succeed())
		Eventually(func(g Gomega) {
			c := h.aclReady("demo")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(ContainSubstring("user alice: Secret my-users-secret has no key alicepw"))
		}).Should(Succeed(), "ACLReady naming alice's missing key")
		for _, s := range []*valkeytest.Server{a, b} {
			Expect(loginWorks(s, "alice", alicePW)).To(Succeed())
		}
		Eventually(h.Events).WithTimeout(10*time.Second).Should(ContainElement(And(HavePrefix("Warning PasswordMissing"), ContainSubstring("has no key alicepw"))),
			"a Warning event naming the missing key")

		By("taking the passwords once the Secrets hold them")
		alice.Data = map[string][]byte{"alicepw": []byte(alicePW)}
		Expect(h.Client.Update(h.ctx(), alice)).To(Succeed())
		Expect(h.Client.Create(h.ctx(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: "dave-secret"},
			Data: map[string][]byte{"pw": []byte(davePW)}})).To(Succeed())
		h.waitSettled("demo", v1alpha1.ReasonACLRendered, "demo-a", "demo-b")
		for _, s := range []*valkeytest.Server{a, b} {
			Expect(loginWorks(s, "dave", davePW)).To(Succeed())
		}
	})

	It("reports a user Valkey refuses and leaves it out; the others stay live", func() {
		h.updateCluster("demo", func(vc *v1alpha1.ValkeyCluster) {
			vc.Spec.Users = append(vc.Spec.Users, v1alpha1.UserSpec{Name: "erin", NoPass: true, Commands: &v1alpha1.CommandsSpec{Allow: []string{"bogus"}}})
		})
		Eventually(func(g Gomega) {
			c := h.aclReady("demo")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonUserRefused))
			g.Expect(c.Message).To(ContainSubstring("user erin: refused by Valkey: Error in ACL SETUSER modifier '+bogus'"))
		}).Should(Succeed(), "ACLReady UserRefused naming erin")
		Expect(string(h.Secret("demo-acl").Data[v1alpha1.ACLFileKey])).NotTo(ContainSubstring("erin"), "the refused user is in the aclfile")
	})

	It("deletes users removed from the spec live", func() {
		h.updateCluster("demo", func(vc *v1alpha1.ValkeyCluster) { vc.Spec.Users = seedUsers() })
		h.waitSettled("demo", v1alpha1.ReasonACLRendered, "demo-a", "demo-b")
		Expect(h.Secret("demo-acl").Annotations[annotationRemovedUsers]).To(ContainSubstring(`"dave"`),
			"removed users, want dave until every member dropped him")
		for _, s := range []*valkeytest.Server{a, b} {
			_, err := s.Dial(GinkgoTB()).ACLGetUser(h.ctx(), "dave")
			Expect(err).To(HaveOccurred(), "%s still has dave", s.Addr())
		}
	})

	It("rotates the system passwords across a controller restart", func() {
		h.updateCluster("demo", func(vc *v1alpha1.ValkeyCluster) {
			vc.Annotations = map[string]string{v1alpha1.AnnotationRotateSystemPasswords: "2026-01-01T00:00:00Z"}
		})
		annotations := h.Cluster("demo").Annotations
		Eventually(h.rotation).WithArguments("demo").Should(PointTo(MatchFields(IgnoreExtras, Fields{
			"Phase": Equal(v1alpha1.RotationPropagating), "Request": Equal("2026-01-01T00:00:00Z"), "PhaseSince": Not(BeNil()),
		})), "the rotation reaches Propagating, in status.acl.rotation")
		h.stopManager()
		newSys = h.Secret("demo-system-users")
		newOp, newRepl = string(newSys.Data[v1alpha1.UserOperator]), string(newSys.Data[v1alpha1.UserReplication])
		Expect(newOp).NotTo(Equal(opPW), "the Secret holds a new password")
		Expect(string(newSys.Data[v1alpha1.UserOperator+previousSuffix])).To(Equal(opPW), "the Secret holds the previous password")
		for _, s := range []*valkeytest.Server{a, b} { // both accepted while propagating
			Expect(loginWorks(s, v1alpha1.UserOperator, opPW)).To(Succeed())
			Expect(loginWorks(s, v1alpha1.UserOperator, newOp)).To(Succeed())
		}
		h.start()
		Eventually(h.rotation).WithArguments("demo").WithTimeout(30*time.Second).Should(PointTo(MatchFields(IgnoreExtras, Fields{
			"Phase": Equal(v1alpha1.RotationIdle), "Request": BeEmpty(), "CompletedRequest": Equal("2026-01-01T00:00:00Z"), "FinishedAt": Not(BeNil()),
		})), "the rotation completes")
		h.waitSettled("demo", v1alpha1.ReasonACLRendered, "demo-a", "demo-b")
		Expect(h.Cluster("demo").Annotations).To(Equal(annotations), "the controller wrote the user's annotations")
		final = h.Secret("demo-system-users")
		Expect(hasLegacyAnnotations(final)).To(BeFalse(), "the state is written in the Secret's annotations")
		Expect(final.Data).To(HaveLen(len(systemUserNames)+2), "keys of the Secret after the rotation: the passwords, primaryauth.conf, exporter-passwords.json")
		Expect(string(final.Data[v1alpha1.UserOperator])).To(Equal(newOp))
		for name, s := range map[string]*valkeytest.Server{"demo-a": a, "demo-b": b} {
			Expect(loginWorks(s, v1alpha1.UserOperator, opPW)).NotTo(Succeed(), "%s: the old operator password still works", name)
			Expect(loginWorks(s, v1alpha1.UserOperator, newOp)).To(Succeed())
			Expect(s.Dial(GinkgoTB()).ConfigGet(h.ctx(), "primaryauth")).To(HaveKeyWithValue("primaryauth", newRepl),
				"%s: primaryauth was not set live", name)
			n, ok := h.reloads.Load(name)
			Expect(ok && *(n.(*int)) > 0).To(BeTrue(), "%s: the exporter was not reloaded", name)
		}
		Eventually(h.Events).WithTimeout(10 * time.Second).Should(ContainElement(HavePrefix("Normal RotationCompleted")))
		Eventually(func() string { return h.Secret("demo-acl").Annotations[annotationRemovedUsers] }).
			Should(BeEmpty(), "the removed users are forgotten")
	})

	It("puts no password or hash in logs, events or conditions", func() {
		var secrets []string
		for _, s := range []*corev1.Secret{sys, newSys, final} {
			for k, v := range s.Data {
				if k == v1alpha1.PrimaryAuthKey || k == v1alpha1.ExporterPasswordFileKey {
					continue
				}
				secrets = append(secrets, string(v), valkey.ACLPasswordHash(string(v)))
			}
		}
		for _, pw := range []string{alicePW, davePW} {
			secrets = append(secrets, pw, valkey.ACLPasswordHash(pw))
		}
		var conds []string
		for _, c := range h.Cluster("demo").Status.Conditions {
			conds = append(conds, c.Message)
		}
		haystacks := map[string]string{"logs": h.logs.String(), "events": strings.Join(h.Events(), "\n"), "conditions": strings.Join(conds, "\n")}
		Expect(haystacks["logs"]).To(ContainSubstring("published aclfile"), "no controller log captured")
		if os.Getenv("ACL_TEST_LOGS") != "" {
			GinkgoWriter.Println(haystacks["logs"])
			GinkgoWriter.Println(haystacks["events"])
		}
		for where, text := range haystacks {
			for _, s := range secrets {
				// Not ContainSubstring: its failure message would print the secret.
				Expect(strings.Contains(text, s)).To(BeFalse(), "a password or hash appears in the %s", where)
			}
		}
	})

	// An operator upgraded in the middle of a rotation started by a version that kept its
	// state in annotations of the system users Secret: the rotation goes on from its
	// phase, its state moves to status.acl.rotation, and the annotations go.
	It("finishes a rotation an earlier version left in the Secret's annotations", func() {
		h.stopManager()
		By("leaving the cluster as the earlier version did, in Propagating with the delay over")
		sys := h.Secret("demo-system-users")
		olderOp := string(sys.Data[v1alpha1.UserOperator])
		for _, u := range systemUserNames {
			sys.Data[u+previousSuffix] = sys.Data[u]
			sys.Data[u] = []byte("upgrade-" + u + "-password-of-the-scenario")
		}
		setDerivedKeys(sys.Data)
		since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		sys.Annotations = map[string]string{"valkey.io/rotation-phase": "Propagating", "valkey.io/rotation-token": "2026-03-03T00:00:00Z",
			"valkey.io/rotation-started": since, "valkey.io/rotation-phase-since": since, "valkey.io/rotation-completed": "2026-01-01T00:00:00Z"}
		Expect(h.Client.Update(h.ctx(), sys)).To(Succeed())
		h.updateCluster("demo", func(vc *v1alpha1.ValkeyCluster) {
			vc.Annotations[v1alpha1.AnnotationRotateSystemPasswords] = "2026-03-03T00:00:00Z"
		})
		h.MergeStatus("demo", `{"acl":{"rotation":null}}`)
		Expect(h.rotation("demo")).To(BeNil())
		annotations := h.Cluster("demo").Annotations

		h.start()
		Eventually(h.rotation).WithArguments("demo").WithTimeout(30*time.Second).Should(PointTo(MatchFields(IgnoreExtras, Fields{
			"Phase": Equal(v1alpha1.RotationIdle), "CompletedRequest": Equal("2026-03-03T00:00:00Z"),
		})), "the rotation completes, in status")
		h.waitSettled("demo", v1alpha1.ReasonACLRendered, "demo-a", "demo-b")
		after := h.Secret("demo-system-users")
		Expect(hasLegacyAnnotations(after)).To(BeFalse(), "the old annotations are removed")
		Expect(after.Data).NotTo(HaveKey(v1alpha1.UserOperator+previousSuffix), "the old passwords are retired")
		Expect(h.Cluster("demo").Annotations).To(Equal(annotations), "the controller wrote the user's annotations")
		newOp := string(after.Data[v1alpha1.UserOperator])
		for name, s := range map[string]*valkeytest.Server{"demo-a": a, "demo-b": b} {
			Expect(loginWorks(s, v1alpha1.UserOperator, olderOp)).NotTo(Succeed(), "%s: the retired operator password still works", name)
			Expect(loginWorks(s, v1alpha1.UserOperator, newOp)).To(Succeed(), "%s: the new operator password", name)
		}
	})
})

// The guard: the controller acts on nothing while the spec breaks a rule, says so with
// InvalidSpec, and gives the condition up once the spec is fixed.
var _ = It("acts on nothing while the spec is invalid, and gives InvalidSpec up once it is fixed", func() {
	h := newHarness()
	Expect(h.Client.Create(h.ctx(), &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: "bad"},
		Spec: v1alpha1.ValkeyClusterSpec{Users: []v1alpha1.UserSpec{{Name: "_evil", NoPass: true}}}})).To(Succeed())
	Eventually(func(g Gomega) {
		vc := h.Cluster("bad")
		c := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionInvalidSpec)
		ready := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionACLReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "InvalidSpec")
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionUnknown), "ACLReady")
	}).Should(Succeed(), "InvalidSpec True")
	Expect(h.Secret("bad-system-users")).To(BeNil(), "Secrets were created for an invalid spec")
	Expect(h.Secret("bad-acl")).To(BeNil(), "Secrets were created for an invalid spec")
	h.updateCluster("bad", func(vc *v1alpha1.ValkeyCluster) { vc.Spec.Users[0].Name = "good" })
	h.waitSettled("bad", v1alpha1.ReasonACLRendered)
	Eventually(func() *metav1.Condition {
		return h.ClusterCondition("bad", v1alpha1.ConditionInvalidSpec)
	}).Should(BeNil(), "InvalidSpec given up")
})
