package certs

import (
	"bytes"
	"context"
	"fmt"
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
)

// The API server of these tests is the package's envtest (see envtestenv: the project's
// Kubernetes binaries and the CRDs of config/crd). Valkey servers from valkeytest stand
// in for the pods, and a fake kubelet copies the operator's Secret into their files,
// each member with its own lag.

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
	t    *testing.T
	c    client.Client
	ns   string
	lc   *liveCluster
	logs *syncBuffer

	mu     sync.Mutex
	byNode map[string]int // ValkeyNode name -> server index
	free   int            // next unused server

	stop context.CancelFunc
	done chan struct{}
}

const (
	testDelay       = 3 * time.Second
	operatorPW      = "operator-password-for-the-tests"
	kubeletLagFirst = 500 * time.Millisecond
	kubeletLagStep  = 700 * time.Millisecond
)

func newHarness(t *testing.T, servers int, boot map[string][]byte, cas ...*testCA) *harness {
	cfg := envtestenv.Start(t)
	c, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	must(t, err)
	h := &harness{t: t, c: c, logs: &syncBuffer{}, byNode: map[string]int{}}
	h.ns = fmt.Sprintf("tls-%d", time.Now().UnixNano()%1e9)
	must(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}))
	h.lc = startLive(t, servers, boot, cas...)
	for _, vc := range h.lc.clients {
		must(t, vc.ACLSetUser(ctxT(t), v1alpha1.UserOperator, "on", ">"+operatorPW, "~*", "+@all"))
	}
	h.start()
	t.Cleanup(h.stopManager)
	return h
}

// start runs a manager with the reconciler.
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
		Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder(FieldManager),
		Pool: pool, PropagationDelay: testDelay, Resync: time.Minute,
		Addr: func(vn *v1alpha1.ValkeyNode) string {
			if i, ok := h.server(vn.Name); ok {
				return h.lc.servers[i].Addr()
			}
			return valkeyconn.Addr(vn.Status.PodIP)
		},
		Files: func(vn *v1alpha1.ValkeyNode) valkey.TLSFiles {
			i, _ := h.server(vn.Name)
			return h.lc.files(i)
		},
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

func (h *harness) server(node string) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i, ok := h.byNode[node]
	return i, ok
}

// kubelet copies the cluster's {cluster}-tls Secret into the files of each member,
// member i a lag of kubeletLagFirst + i*kubeletLagStep after the Secret changed, until
// the test ends.
func (h *harness) kubelet(cluster string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	h.t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		var seen string
		var since time.Time
		var data map[string][]byte
		has := map[int]string{}
		for ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			var s corev1.Secret
			if err := h.c.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: v1alpha1.TLSSecretName(cluster)}, &s); err != nil {
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
	h.t.Helper()
	copyData := h.secret(v1alpha1.TLSSecretName(cluster)).Data
	h.mu.Lock()
	i := h.free
	h.free++
	h.lc.write(i, copyData)
	h.byNode[name] = i
	h.mu.Unlock()
	must(h.t, Reload(ctxT(h.t), h.lc.clients[i], h.lc.files(i)))
	// A member as the cluster-controller makes it: labelled, controlled by its cluster.
	vc := h.cluster(cluster)
	vn := &v1alpha1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name, Labels: v1alpha1.ClusterLabels(cluster),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(vc, v1alpha1.GroupVersion.WithKind("ValkeyCluster"))}},
		Spec: v1alpha1.ValkeyNodeSpec{ClusterName: cluster, Revision: 1, WorkloadType: v1alpha1.WorkloadStatefulSet,
			Image: v1alpha1.DefaultImage, ACLSecretName: v1alpha1.ACLSecretName(cluster),
			SystemUsersSecretName: v1alpha1.SystemUsersSecretName(cluster), TLSSecretName: v1alpha1.TLSSecretName(cluster)},
	}
	must(h.t, h.c.Create(ctxT(h.t), vn))
	patch := client.MergeFrom(vn.DeepCopy())
	vn.Status.PodIP = "127.0.0.1"
	must(h.t, h.c.Status().Patch(ctxT(h.t), vn, patch))
	return i
}

func (h *harness) cluster(name string) *v1alpha1.ValkeyCluster {
	var vc v1alpha1.ValkeyCluster
	must(h.t, h.c.Get(ctxT(h.t), types.NamespacedName{Namespace: h.ns, Name: name}, &vc))
	return &vc
}

func (h *harness) secret(name string) *corev1.Secret {
	var s corev1.Secret
	if err := h.c.Get(ctxT(h.t), types.NamespacedName{Namespace: h.ns, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		h.t.Fatal(err)
	}
	return &s
}

// putSecret creates or replaces a Secret's data.
func (h *harness) putSecret(name string, data map[string][]byte) {
	h.t.Helper()
	s := h.secret(name)
	if s == nil {
		must(h.t, h.c.Create(ctxT(h.t), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}, Data: data}))
		return
	}
	s.Data = data
	must(h.t, h.c.Update(ctxT(h.t), s))
}

// createCluster creates the system users' Secret (the acl-controller's part) and a
// cluster using the certificate Secret secret ("" for no TLS).
func (h *harness) createCluster(name, secret string) {
	h.t.Helper()
	h.putSecret(v1alpha1.SystemUsersSecretName(name), map[string][]byte{v1alpha1.UserOperator: []byte(operatorPW)})
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}}
	if secret != "" {
		vc.Spec.TLS = &v1alpha1.TLSSpec{Certificate: v1alpha1.CertificateSpec{SecretName: secret}}
	}
	must(h.t, h.c.Create(ctxT(h.t), vc))
}

// condition returns "" when the cluster's condition typ has status and reason (and its
// message contains msg).
func (h *harness) condition(cluster, typ string, status metav1.ConditionStatus, reason, msg string) string {
	c := conditions.Get(h.cluster(cluster).Status.Conditions, typ)
	if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, msg) {
		return fmt.Sprintf("%s is %+v, want %s %s %q", typ, c, status, reason, msg)
	}
	return ""
}

func (h *harness) waitCondition(cluster, typ string, status metav1.ConditionStatus, reason, msg string) {
	h.t.Helper()
	eventually(h.t, 20*time.Second, typ+" "+reason, func() string { return h.condition(cluster, typ, status, reason, msg) })
}

// applied returns "" when every node's TLSApplied is True for revision.
func (h *harness) applied(revision string, nodes ...string) string {
	for _, n := range nodes {
		var vn v1alpha1.ValkeyNode
		if err := h.c.Get(ctxT(h.t), types.NamespacedName{Namespace: h.ns, Name: n}, &vn); err != nil {
			return err.Error()
		}
		c := conditions.Get(vn.Status.Conditions, v1alpha1.ConditionTLSApplied)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "revision "+revision) {
			return fmt.Sprintf("%s: TLSApplied %+v, want True for %s", n, c, revision)
		}
	}
	return ""
}

// events returns "type reason note" of the namespace's events.
func (h *harness) events() []string {
	var list eventsv1.EventList
	must(h.t, h.c.List(ctxT(h.t), &list, client.InNamespace(h.ns)))
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Type+" "+e.Reason+" "+e.Note)
	}
	return out
}

// waitEvent waits for an event whose "type reason note" contains every part.
func (h *harness) waitEvent(parts ...string) {
	h.t.Helper()
	eventually(h.t, 20*time.Second, "event "+strings.Join(parts, " "), func() string {
		for _, e := range h.events() {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(e, p)
			}
			if ok {
				return ""
			}
		}
		return fmt.Sprintf("events: %v", h.events())
	})
}

// copyData returns the data of the operator's copy.
func (h *harness) copyData(cluster string) map[string][]byte {
	s := h.secret(v1alpha1.TLSSecretName(cluster))
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
