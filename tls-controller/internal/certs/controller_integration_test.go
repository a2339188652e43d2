package certs

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	gomegatypes "github.com/onsi/gomega/types"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/publish"
	"github.com/valkey-operator/valkey-operator/internal/testsuite"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// The API server of these specs is the suite's envtest (see suite_test.go). Valkey
// servers from valkeytest stand in for the pods, and a fake kubelet copies the
// operator's Secret into their files, each member with its own lag.

// harness is a running controller against the API server and real Valkey servers.
type harness struct {
	*testsuite.Tenant
	lc   *liveCluster
	logs *testsuite.Logs

	mu     sync.Mutex
	byNode map[string]int // ValkeyNode name -> server index
	free   int            // next unused server

	mgr *testsuite.Running
	// cleanup stops what the harness started for its whole life (the kubelet).
	cleanup []func()
}

const (
	testDelay       = 3 * time.Second
	operatorPW      = "operator-password-for-the-tests"
	kubeletLagFirst = 500 * time.Millisecond
	kubeletLagStep  = 700 * time.Millisecond
)

// newHarness starts the controller in a namespace of its own and the servers; they stop
// when the node that called newHarness ends (BeforeAll: its container).
func newHarness(servers int, boot map[string][]byte, cas ...*testCA) *harness {
	GinkgoHelper()
	h := &harness{Tenant: testsuite.NewTenant(suite.Config, "tls"), logs: suite.Logs, byNode: map[string]int{}}
	h.lc = startLive(servers, boot, cas...)
	for _, vc := range h.lc.clients {
		Expect(vc.ACLSetUser(suite.Step(), v1alpha1.UserOperator, "on", ">"+operatorPW, "~*", "+@all")).To(Succeed())
	}
	h.start()
	DeferCleanup(func() {
		h.stopManager()
		for _, stop := range h.cleanup {
			stop()
		}
	})
	return h
}

// start runs a manager with the reconciler.
func (h *harness) start() {
	GinkgoHelper()
	mgr, err := testsuite.Manager(suite.Config, h.Namespace)
	Expect(err).NotTo(HaveOccurred())
	pool := &valkeyconn.Pool{DialTimeout: time.Second}
	r := &Reconciler{
		Base: publish.Base{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespaces: []string{h.Namespace}, Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder(FieldManager),
			Pool: pool, PropagationDelay: testDelay, Resync: time.Minute,
			Addr: func(vn *v1alpha1.ValkeyNode) string {
				if i, ok := h.server(vn.Name); ok {
					return h.lc.servers[i].Addr()
				}
				return valkeyconn.Addr(vn.Status.PodIP)
			},
		},
		Files: func(vn *v1alpha1.ValkeyNode) valkey.TLSFiles {
			i, _ := h.server(vn.Name)
			return h.lc.files(i)
		},
		CertManagerRecheck: time.Second,
	}
	h.mgr, err = testsuite.StartManager(mgr, func(ctx context.Context) error { return r.SetupWithManager(ctx, mgr, 2) }, pool.Close)
	Expect(err).NotTo(HaveOccurred())
}

func (h *harness) stopManager() { Expect(h.mgr.Stop()).To(Succeed(), "the manager") }

func (h *harness) server(node string) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i, ok := h.byNode[node]
	return i, ok
}

// kubelet copies the cluster's {cluster}-tls Secret into the files of each member,
// member i a lag of kubeletLagFirst + i*kubeletLagStep after the Secret changed, until
// the harness stops. It stands in for the kubelet's sync of mounted
// Secrets, a loop of its own, not a wait of the spec.
func (h *harness) kubelet(cluster string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	h.cleanup = append(h.cleanup, func() { cancel(); <-done })
	go func() {
		defer close(done)
		var seen string
		var since time.Time
		var data map[string][]byte
		has := map[int]string{}
		for ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			var s corev1.Secret
			if err := h.Client.Get(ctx, h.Key(v1alpha1.TLSSecretName(cluster)), &s); err != nil {
				continue
			}
			if rev := Revision(s.Data); rev != seen {
				seen, since, data = rev, time.Now(), s.Data
			}
			h.mu.Lock()
			for _, i := range h.byNode {
				if has[i] != seen && time.Since(since) >= kubeletLagFirst+time.Duration(i)*kubeletLagStep {
					h.lc.write(i, data)
					has[i] = seen
				}
			}
			h.mu.Unlock()
		}
	}()
}

// member starts a member of the cluster on the next free server, loaded with the
// current copy as a pod starting would be, and publishes its pod IP.
func (h *harness) member(cluster, name string) int {
	GinkgoHelper()
	copyData := h.Secret(v1alpha1.TLSSecretName(cluster)).Data
	h.mu.Lock()
	i := h.free
	h.free++
	h.lc.write(i, copyData)
	h.byNode[name] = i
	h.mu.Unlock()
	// The kubelet may be writing the same files (a member started while it runs).
	Eventually(func() error { return Reload(suite.Step(), h.lc.clients[i], h.lc.files(i)) }).Should(Succeed(), "the member loads the copy")
	h.Member(cluster, name, func(spec *v1alpha1.ValkeyNodeSpec) { spec.TLSSecretName = v1alpha1.TLSSecretName(cluster) })
	return i
}

// putSecret creates or replaces a Secret's data.
func (h *harness) putSecret(name string, data map[string][]byte) {
	GinkgoHelper()
	s := h.Secret(name)
	if s == nil {
		Expect(h.Client.Create(suite.Step(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: name}, Data: data})).To(Succeed())
		return
	}
	s.Data = data
	Expect(h.Client.Update(suite.Step(), s)).To(Succeed())
}

// createCluster creates the system users' Secret and names it in status.acl (the
// acl-controller's part) and a cluster using the certificate Secret secret ("" for no
// TLS).
func (h *harness) createCluster(name, secret string) {
	GinkgoHelper()
	var tls *v1alpha1.TLSSpec
	if secret != "" {
		tls = &v1alpha1.TLSSpec{Certificate: &v1alpha1.CertificateSpec{SecretName: secret}}
	}
	h.createClusterTLS(name, tls)
}

// createClusterTLS is createCluster with the cluster's spec.tls (nil: no TLS).
func (h *harness) createClusterTLS(name string, tls *v1alpha1.TLSSpec) {
	GinkgoHelper()
	// Labelled as the acl-controller makes it: the controller caches only the operator's
	// own Secrets.
	Expect(h.Client.Create(suite.Step(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: v1alpha1.SystemUsersSecretName(name),
		Labels: v1alpha1.ClusterLabels(name)}, Data: map[string][]byte{v1alpha1.UserOperator: []byte(operatorPW)}})).To(Succeed())
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: name}}
	vc.Spec.TLS = tls
	Expect(h.Client.Create(suite.Step(), vc)).To(Succeed())
	patch := client.MergeFrom(vc.DeepCopy())
	vc.Status.ACL = &v1alpha1.ACLStatus{SecretName: v1alpha1.ACLSecretName(name), SystemUsersSecretName: v1alpha1.SystemUsersSecretName(name), Revision: "r1"}
	Expect(h.Client.Status().Patch(suite.Step(), vc, patch)).To(Succeed())
}

// waitCondition waits until the cluster's condition typ has status and reason and its
// message contains msg.
func (h *harness) waitCondition(cluster, typ string, status metav1.ConditionStatus, reason, msg string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := h.ClusterCondition(cluster, typ)
		g.Expect(c).NotTo(BeNil(), typ)
		g.Expect(c.Status).To(Equal(status), "%s: %s %s", typ, c.Reason, c.Message)
		g.Expect(c.Reason).To(Equal(reason), "%s: %s", typ, c.Message)
		g.Expect(c.Message).To(ContainSubstring(msg), typ)
	}).Should(Succeed(), "%s %s", typ, reason)
}

// expectApplied checks that every node's TLSApplied is True for revision.
func (h *harness) expectApplied(g Gomega, revision string, nodes ...string) {
	for _, n := range nodes {
		c := h.NodeCondition(g, n, v1alpha1.ConditionTLSApplied)
		g.Expect(c).NotTo(BeNil(), "TLSApplied of %s", n)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "TLSApplied of %s: %s", n, c.Message)
		g.Expect(c.Message).To(ContainSubstring("revision "+revision), "TLSApplied of %s", n)
	}
}

// waitEvent waits for an event whose "type reason note" contains every part.
func (h *harness) waitEvent(parts ...string) {
	GinkgoHelper()
	var all []gomegatypes.GomegaMatcher
	for _, p := range parts {
		all = append(all, ContainSubstring(p))
	}
	Eventually(h.Events).Should(ContainElement(And(all...)), "event %s", strings.Join(parts, " "))
}

// copyData returns the data of the operator's copy.
func (h *harness) copyData(cluster string) map[string][]byte {
	s := h.Secret(v1alpha1.TLSSecretName(cluster))
	if s == nil {
		return nil
	}
	return s.Data
}

// sameCertificate reports whether a copy holds the certificate data d.
func sameCertificate(copyData, d map[string][]byte) bool {
	for _, k := range secretKeys {
		if !bytes.Equal(copyData[k], d[k]) {
			return false
		}
	}
	return true
}
