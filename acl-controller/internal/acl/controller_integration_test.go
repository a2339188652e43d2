package acl

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/envtestenv"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// The API server of these tests is the package's envtest (see envtestenv: the project's
// Kubernetes binaries and the CRDs of config/crd). Valkey servers from valkeytest stand
// in for the pods.

func TestMain(m *testing.M) {
	code := m.Run()
	envtestenv.Stop()
	os.Exit(code)
}

// syncBuffer collects the controller's logs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness is a running controller against the API server and real Valkey servers.
type harness struct {
	t       *testing.T
	c       client.Client
	ns      string
	servers map[string]*valkeytest.Server // by ValkeyNode name
	logs    *syncBuffer
	reloads sync.Map // exporter reloads by node name
	stop    context.CancelFunc
	done    chan struct{}
	exp     *httptest.Server
}

const testDelay = 3 * time.Second

func newHarness(t *testing.T) *harness {
	cfg := envtestenv.Start(t)
	c, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	must(t, err)
	h := &harness{t: t, c: c, servers: map[string]*valkeytest.Server{}, logs: &syncBuffer{}}
	h.ns = fmt.Sprintf("acl-%d", time.Now().UnixNano()%1e9)
	must(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}))
	h.exp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		node := strings.TrimPrefix(strings.TrimSuffix(r.URL.Path, "/-/reload"), "/")
		n, _ := h.reloads.LoadOrStore(node, new(int))
		*(n.(*int))++
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(h.exp.Close)
	h.start()
	t.Cleanup(h.stopManager)
	return h
}

// start runs a manager with a fresh reconciler (as after a restart).
func (h *harness) start() {
	h.t.Helper()
	ctrl.SetLogger(zap.New(zap.WriteTo(h.logs), zap.UseDevMode(true)))
	mgr, err := ctrl.NewManager(envtestenv.Start(h.t), ctrl.Options{
		Scheme:                 operator.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{h.ns: {}},
			ByObject:          map[client.Object]cache.ByObject{&corev1.Secret{}: {Transform: cache.TransformStripManagedFields()}},
		},
	})
	must(h.t, err)
	pool := &valkeyconn.Pool{DialTimeout: time.Second}
	r := &Reconciler{
		Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("acl-controller"),
		Pool: pool, PropagationDelay: testDelay, Resync: 2 * time.Second,
		Addr: func(vn *v1alpha1.ValkeyNode) string {
			if s, ok := h.servers[vn.Name]; ok {
				return s.Addr()
			}
			return valkeyconn.Addr(vn.Status.PodIP)
		},
		ExporterURL: func(vn *v1alpha1.ValkeyNode) string { return h.exp.URL + "/" + vn.Name + "/-/reload" },
	}
	ctx, cancel := context.WithCancel(context.Background())
	must(h.t, r.SetupWithManager(ctx, mgr, 2))
	h.stop, h.done = cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		defer pool.Close()
		if err := mgr.Start(ctx); err != nil {
			h.t.Errorf("manager: %v", err)
		}
	}()
}

func (h *harness) stopManager() {
	if h.stop != nil {
		h.stop()
		<-h.done
		h.stop = nil
	}
}

func (h *harness) ctx() context.Context { return ctxT(h.t) }

// eventually polls cond every 100 ms until it returns "" (or fails after timeout with
// its last answer).
func (h *harness) eventually(timeout time.Duration, what string, cond func() string) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		if last = cond(); last == "" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.t.Fatalf("timed out waiting for %s: %s", what, last)
}

func (h *harness) cluster(name string) *v1alpha1.ValkeyCluster {
	var vc v1alpha1.ValkeyCluster
	must(h.t, h.c.Get(h.ctx(), types.NamespacedName{Namespace: h.ns, Name: name}, &vc))
	return &vc
}

func (h *harness) secret(name string) *corev1.Secret {
	var s corev1.Secret
	if err := h.c.Get(h.ctx(), types.NamespacedName{Namespace: h.ns, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		h.t.Fatal(err)
	}
	return &s
}

// aclReady returns the cluster's ACLReady condition (nil when absent).
func (h *harness) aclReady(name string) *metav1.Condition {
	return conditions.Get(h.cluster(name).Status.Conditions, v1alpha1.ConditionACLReady)
}

// member starts a Valkey server for a new ValkeyNode of the cluster, loaded with the
// published aclfile as a pod would be, and publishes its pod IP.
func (h *harness) member(cluster, name string) *valkeytest.Server {
	h.t.Helper()
	s := valkeytest.Start(h.t, 1, valkeytest.Options{})[0]
	acl := h.secret(v1alpha1.ACLSecretName(cluster))
	must(h.t, os.WriteFile(s.ACLFile, append(acl.Data[v1alpha1.ACLFileKey], adminLine(s)...), 0o600))
	must(h.t, s.Dial(h.t).ACLLoad(h.ctx()))
	h.servers[name] = s
	vn := &v1alpha1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name, Labels: v1alpha1.ClusterLabels(cluster)},
		Spec: v1alpha1.ValkeyNodeSpec{ClusterName: cluster, Revision: 1, WorkloadType: v1alpha1.WorkloadStatefulSet,
			Image: v1alpha1.DefaultImage, ACLSecretName: v1alpha1.ACLSecretName(cluster), SystemUsersSecretName: v1alpha1.SystemUsersSecretName(cluster)},
	}
	must(h.t, h.c.Create(h.ctx(), vn))
	patch := client.MergeFrom(vn.DeepCopy())
	vn.Status.PodIP = "127.0.0.1"
	must(h.t, h.c.Status().Patch(h.ctx(), vn, patch))
	return s
}

// nodeApplied returns "" when the member's ACLApplied is True for revision.
func (h *harness) nodeApplied(name, revision string) string {
	var vn v1alpha1.ValkeyNode
	if err := h.c.Get(h.ctx(), types.NamespacedName{Namespace: h.ns, Name: name}, &vn); err != nil {
		return err.Error()
	}
	c := conditions.Get(vn.Status.Conditions, v1alpha1.ConditionACLApplied)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.HasSuffix(c.Message, revision) {
		return fmt.Sprintf("ACLApplied %+v, want True for %s", c, revision)
	}
	return ""
}

// revision returns the cluster's status.acl.revision.
func (h *harness) revision(name string) string {
	if acl := h.cluster(name).Status.ACL; acl != nil {
		return acl.Revision
	}
	return ""
}

// waitSettled waits until ACLReady has the reason and every member runs the
// cluster's current revision.
func (h *harness) waitSettled(cluster, reason string, nodes ...string) string {
	h.t.Helper()
	h.eventually(20*time.Second, "ACLReady "+reason+" and every member applied", func() string {
		c := h.aclReady(cluster)
		if c == nil || c.Reason != reason {
			return fmt.Sprintf("ACLReady %+v", c)
		}
		rev := h.revision(cluster)
		if acl := h.secret(v1alpha1.ACLSecretName(cluster)); acl == nil || acl.Annotations[annotationRevision] != rev {
			return "the Secret does not hold revision " + rev
		}
		for _, n := range nodes {
			if msg := h.nodeApplied(n, rev); msg != "" {
				return n + ": " + msg
			}
		}
		return ""
	})
	return h.revision(cluster)
}

func (h *harness) updateCluster(name string, mutate func(*v1alpha1.ValkeyCluster)) {
	h.t.Helper()
	h.eventually(10*time.Second, "update of the cluster", func() string {
		vc := h.cluster(name)
		mutate(vc)
		if err := h.c.Update(h.ctx(), vc); err != nil {
			return err.Error()
		}
		return ""
	})
}

// events returns the notes of the events about the cluster.
func (h *harness) events() []string {
	var list eventsv1.EventList
	must(h.t, h.c.List(h.ctx(), &list, client.InNamespace(h.ns)))
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Type+" "+e.Reason+" "+e.Note)
	}
	return out
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

// TestControllerScenario drives the controller through a cluster's life: Secrets,
// status, live users, a missing password, a refused user, a deleted user, a rotation
// across a controller restart; and checks that no secret reaches logs, events or
// conditions.
func TestControllerScenario(t *testing.T) {
	h := newHarness(t)
	ctx := h.ctx()
	const alicePW, davePW = "alice-password-for-the-scenario", "dave-password-for-the-scenario"
	must(t, h.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "my-users-secret"},
		Data: map[string][]byte{"alicepw": []byte(alicePW)}}))
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "demo"},
		Spec: v1alpha1.ValkeyClusterSpec{Users: seedUsers()}}
	must(t, h.c.Create(ctx, vc))

	// 1. Secrets and status.
	rev1 := h.waitSettled("demo", v1alpha1.ReasonACLRendered)
	vc = h.cluster("demo")
	if a := vc.Status.ACL; a.SecretName != "demo-acl" || a.SystemUsersSecretName != "demo-system-users" {
		t.Fatalf("status.acl %+v", a)
	}
	sys := h.secret("demo-system-users")
	for _, s := range []*corev1.Secret{sys, h.secret("demo-acl")} {
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != vc.UID || !ptr.Deref(s.OwnerReferences[0].Controller, false) {
			t.Errorf("%s owner %+v", s.Name, s.OwnerReferences)
		}
		if s.Labels[v1alpha1.LabelInstance] != "demo" || s.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedBy {
			t.Errorf("%s labels %v", s.Name, s.Labels)
		}
	}
	opPW := string(sys.Data[v1alpha1.UserOperator])
	replPW := string(sys.Data[v1alpha1.UserReplication])
	for _, u := range systemUserNames {
		if len(sys.Data[u]) < 32 {
			t.Errorf("password of %s has %d characters", u, len(sys.Data[u]))
		}
	}
	if string(sys.Data[v1alpha1.PrimaryAuthKey]) != "primaryauth "+replPW+"\n" {
		t.Error("primaryauth.conf does not hold the replication password")
	}
	content := string(h.secret("demo-acl").Data[v1alpha1.ACLFileKey])
	if !strings.Contains(content, "user alice on #"+valkey.ACLPasswordHash(alicePW)+" ~app:* %R~shared:* resetchannels &notifications:*") ||
		!strings.Contains(content, "user bob on nopass resetchannels +@all ~* &*") || !strings.Contains(content, "user default off") {
		t.Fatalf("aclfile:\n%s", content)
	}

	// 2. Members: the revision goes live; passwords are kept across passes.
	a, b := h.member("demo", "demo-a"), h.member("demo", "demo-b")
	// (On 9.x the members' version adds the slot migration rules: a new revision.)
	if got := h.waitSettled("demo", v1alpha1.ReasonACLRendered, "demo-a", "demo-b"); got != rev1 && !a.Version.AtLeast(9, 0) {
		t.Fatalf("revision changed from %s to %s without a change", rev1, got)
	}
	if string(h.secret("demo-system-users").Data[v1alpha1.UserOperator]) != opPW {
		t.Fatal("the operator's password changed")
	}
	for _, s := range []*valkeytest.Server{a, b} {
		must(t, loginWorks(s, "alice", alicePW))
	}

	// 3. A missing password Secret: reported, the rest still published.
	h.updateCluster("demo", func(vc *v1alpha1.ValkeyCluster) {
		vc.Spec.Users = append(vc.Spec.Users, v1alpha1.UserSpec{Name: "dave",
			PasswordSecret: &v1alpha1.PasswordSecretRef{Name: "dave-secret", Keys: []string{"pw"}}, Commands: &v1alpha1.CommandsSpec{Allow: []string{"ping"}}})
	})
	h.eventually(20*time.Second, "ACLReady PasswordMissing naming dave", func() string {
		c := h.aclReady("demo")
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonPasswordMissing || !strings.Contains(c.Message, "user dave: Secret dave-secret not found") {
			return fmt.Sprintf("%+v", c)
		}
		return ""
	})
	// A missing key of an existing user keeps that user's previous rules.
	alice := h.secret("my-users-secret")
	alice.Data = map[string][]byte{"otherkey": []byte("x")}
	must(t, h.c.Update(ctx, alice))
	h.eventually(20*time.Second, "ACLReady naming alice's missing key", func() string {
		c := h.aclReady("demo")
		if c == nil || !strings.Contains(c.Message, "user alice: Secret my-users-secret has no key alicepw") {
			return fmt.Sprintf("%+v", c)
		}
		return ""
	})
	for _, s := range []*valkeytest.Server{a, b} {
		must(t, loginWorks(s, "alice", alicePW))
	}
	h.eventually(10*time.Second, "a Warning event naming the missing key", func() string {
		for _, e := range h.events() {
			if strings.HasPrefix(e, "Warning PasswordMissing") && strings.Contains(e, "has no key alicepw") {
				return ""
			}
		}
		return fmt.Sprint(h.events())
	})
	alice.Data = map[string][]byte{"alicepw": []byte(alicePW)}
	must(t, h.c.Update(ctx, alice))
	must(t, h.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "dave-secret"}, Data: map[string][]byte{"pw": []byte(davePW)}}))
	h.waitSettled("demo", v1alpha1.ReasonACLRendered, "demo-a", "demo-b")
	for _, s := range []*valkeytest.Server{a, b} {
		must(t, loginWorks(s, "dave", davePW))
	}

	// 4. A user Valkey refuses is reported and left out; the others stay live.
	h.updateCluster("demo", func(vc *v1alpha1.ValkeyCluster) {
		vc.Spec.Users = append(vc.Spec.Users, v1alpha1.UserSpec{Name: "erin", NoPass: true, Commands: &v1alpha1.CommandsSpec{Allow: []string{"bogus"}}})
	})
	h.eventually(20*time.Second, "ACLReady UserRefused naming erin", func() string {
		c := h.aclReady("demo")
		if c == nil || c.Reason != v1alpha1.ReasonUserRefused || !strings.Contains(c.Message, "user erin: refused by Valkey: Error in ACL SETUSER modifier '+bogus'") {
			return fmt.Sprintf("%+v", c)
		}
		return ""
	})
	if strings.Contains(string(h.secret("demo-acl").Data[v1alpha1.ACLFileKey]), "erin") {
		t.Fatal("the refused user is in the aclfile")
	}

	// 5. Deleting users from the spec deletes them live.
	h.updateCluster("demo", func(vc *v1alpha1.ValkeyCluster) { vc.Spec.Users = seedUsers() })
	h.waitSettled("demo", v1alpha1.ReasonACLRendered, "demo-a", "demo-b")
	if got := h.secret("demo-acl").Annotations[annotationRemovedUsers]; !strings.Contains(got, `"dave"`) {
		t.Fatalf("removed users %q, want dave until every member dropped him", got)
	}
	for _, s := range []*valkeytest.Server{a, b} {
		if _, err := s.Dial(t).ACLGetUser(ctx, "dave"); err == nil {
			t.Fatalf("%s still has dave", s.Addr())
		}
	}

	// 6. Rotation, with a controller restart in the middle.
	h.updateCluster("demo", func(vc *v1alpha1.ValkeyCluster) {
		vc.Annotations = map[string]string{v1alpha1.AnnotationRotateSystemPasswords: "2026-01-01T00:00:00Z"}
	})
	h.eventually(20*time.Second, "the rotation reaches Propagating", func() string {
		if p := h.secret("demo-system-users").Annotations[annotationRotationPhase]; p != string(PhasePropagating) {
			return "phase " + p
		}
		return ""
	})
	h.stopManager()
	newSys := h.secret("demo-system-users")
	newOp, newRepl := string(newSys.Data[v1alpha1.UserOperator]), string(newSys.Data[v1alpha1.UserReplication])
	if newOp == opPW || string(newSys.Data[v1alpha1.UserOperator+previousSuffix]) != opPW {
		t.Fatal("the Secret does not hold the new and previous passwords")
	}
	for _, s := range []*valkeytest.Server{a, b} { // both accepted while propagating
		must(t, loginWorks(s, v1alpha1.UserOperator, opPW))
		must(t, loginWorks(s, v1alpha1.UserOperator, newOp))
	}
	h.start()
	h.eventually(30*time.Second, "the rotation completes", func() string {
		s := h.secret("demo-system-users")
		if s.Annotations[annotationRotationCompleted] != "2026-01-01T00:00:00Z" || s.Annotations[annotationRotationPhase] != "" {
			return fmt.Sprint(s.Annotations)
		}
		return ""
	})
	h.waitSettled("demo", v1alpha1.ReasonACLRendered, "demo-a", "demo-b")
	final := h.secret("demo-system-users")
	// five passwords (_operator, _replication, _exporter, _backup, _restore) and two derived keys
	if len(final.Data) != 7 || string(final.Data[v1alpha1.UserOperator]) != newOp {
		t.Fatalf("after the rotation the Secret has keys %d", len(final.Data))
	}
	for name, s := range map[string]*valkeytest.Server{"demo-a": a, "demo-b": b} {
		if err := loginWorks(s, v1alpha1.UserOperator, opPW); err == nil {
			t.Errorf("%s: the old operator password still works", name)
		}
		must(t, loginWorks(s, v1alpha1.UserOperator, newOp))
		got, err := s.Dial(t).ConfigGet(ctx, "primaryauth")
		must(t, err)
		if got["primaryauth"] != newRepl {
			t.Errorf("%s: primaryauth was not set live", name)
		}
		if n, ok := h.reloads.Load(name); !ok || *(n.(*int)) == 0 {
			t.Errorf("%s: the exporter was not reloaded", name)
		}
	}
	h.eventually(10*time.Second, "RotationCompleted event", func() string {
		for _, e := range h.events() {
			if strings.HasPrefix(e, "Normal RotationCompleted") {
				return ""
			}
		}
		return fmt.Sprint(h.events())
	})

	h.eventually(20*time.Second, "the removed users are forgotten", func() string {
		return h.secret("demo-acl").Annotations[annotationRemovedUsers]
	})

	// 7. No password or hash in logs, events or conditions.
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
	vc = h.cluster("demo")
	var conds []string
	for _, c := range vc.Status.Conditions {
		conds = append(conds, c.Message)
	}
	haystacks := map[string]string{"logs": h.logs.String(), "events": strings.Join(h.events(), "\n"), "conditions": strings.Join(conds, "\n")}
	if !strings.Contains(haystacks["logs"], "published aclfile") {
		t.Fatal("no controller log captured")
	}
	if os.Getenv("ACL_TEST_LOGS") != "" {
		t.Log(haystacks["logs"])
		t.Log(haystacks["events"])
	}
	for where, text := range haystacks {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("a password or hash appears in the %s", where)
			}
		}
	}
}

// TestInvalidSpecGuard: the controller acts on nothing while the spec breaks a rule,
// says so with InvalidSpec, and gives the condition up once the spec is fixed.
func TestInvalidSpecGuard(t *testing.T) {
	h := newHarness(t)
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "bad"},
		Spec: v1alpha1.ValkeyClusterSpec{Users: []v1alpha1.UserSpec{{Name: "_evil", NoPass: true}}}}
	must(t, h.c.Create(h.ctx(), vc))
	h.eventually(20*time.Second, "InvalidSpec True", func() string {
		vc := h.cluster("bad")
		c := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionInvalidSpec)
		ready := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionACLReady)
		if c == nil || c.Status != metav1.ConditionTrue || ready == nil || ready.Status != metav1.ConditionUnknown {
			return fmt.Sprintf("InvalidSpec %+v ACLReady %+v", c, ready)
		}
		return ""
	})
	if h.secret("bad-system-users") != nil || h.secret("bad-acl") != nil {
		t.Fatal("Secrets were created for an invalid spec")
	}
	h.updateCluster("bad", func(vc *v1alpha1.ValkeyCluster) { vc.Spec.Users[0].Name = "good" })
	h.waitSettled("bad", v1alpha1.ReasonACLRendered)
	h.eventually(20*time.Second, "InvalidSpec given up", func() string {
		if c := conditions.Get(h.cluster("bad").Status.Conditions, v1alpha1.ConditionInvalidSpec); c != nil {
			return fmt.Sprintf("%+v", c)
		}
		return ""
	})
}
