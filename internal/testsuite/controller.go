package testsuite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/envtestenv"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/status"
)

// Controller is the integration suite of a controller's package: the package's API
// server (envtestenv), and the logs of the controllers its specs run, which go to
// Logs and to GinkgoWriter (controller-runtime's logger can be set once per process,
// so it is set here, once, and every harness reads the same buffer). Eventually waits
// up to 20 s, polling every 100 ms. Declare it once per package:
//
//	var suite = testsuite.NewController(30 * time.Second)
type Controller struct {
	// Config reaches the API server; BeforeSuite sets it.
	Config *rest.Config
	// Logs are the controllers' logs.
	Logs *Logs
	// step bounds one step of a spec.
	step time.Duration
}

// NewController registers the suite's BeforeSuite and AfterSuite. step bounds one step
// of a spec (Step).
func NewController(step time.Duration) *Controller {
	c := &Controller{Logs: &Logs{}, step: step}
	ginkgo.BeforeSuite(func() {
		ctrl.SetLogger(zap.New(zap.WriteTo(io.MultiWriter(c.Logs, ginkgo.GinkgoWriter)), zap.UseDevMode(true)))
		gomega.SetDefaultEventuallyTimeout(20 * time.Second)
		gomega.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
		var err error
		c.Config, err = envtestenv.Config()
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
	})
	ginkgo.AfterSuite(envtestenv.Stop)
	return c
}

// Step returns a context for one step of a spec: it ends after the suite's step
// duration, or with the spec.
func (c *Controller) Step() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), c.step)
	ginkgo.DeferCleanup(cancel)
	return ctx
}

// Logs collects the logs of the controllers a suite runs, for specs that check what
// was (or was not) logged. It is safe for concurrent use.
type Logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Running is a manager a spec started.
type Running struct {
	stop context.CancelFunc
	done chan error
}

// StartManager registers the spec's controllers with setup and runs mgr until Stop;
// then runs once the manager returned (closing what the controllers used).
func StartManager(mgr ctrl.Manager, setup func(context.Context) error, then func()) (*Running, error) {
	ctx, cancel := context.WithCancel(context.Background())
	if err := setup(ctx); err != nil {
		cancel()
		return nil, err
	}
	r := &Running{stop: cancel, done: make(chan error, 1)}
	go func() {
		defer then()
		r.done <- mgr.Start(ctx)
	}()
	return r, nil
}

// Stop stops the manager and returns what it returned; a second Stop, or a Stop of
// nil, does nothing.
func (r *Running) Stop() error {
	if r == nil || r.stop == nil {
		return nil
	}
	r.stop()
	r.stop = nil
	return <-r.done
}

// SetPaused writes a cluster's Paused condition as the cluster-controller does (its
// field manager, its condition only), as `kubectl valkey pause` or `resume` leads it
// to.
func (t *Tenant) SetPaused(cluster string, paused bool) {
	ginkgo.GinkgoHelper()
	vc := t.Cluster(cluster)
	st, reason := metav1.ConditionFalse, v1alpha1.ReasonNotPaused
	if paused {
		st, reason = metav1.ConditionTrue, v1alpha1.ReasonPaused
	}
	owned := struct {
		Conditions []metav1.Condition `json:"conditions"`
	}{[]metav1.Condition{{Type: v1alpha1.ConditionPaused, Status: st, Reason: reason, Message: "set by the test",
		ObservedGeneration: vc.Generation, LastTransitionTime: metav1.Now()}}}
	gomega.Expect(status.Apply(step(), t.Client, "cluster-controller", vc, v1alpha1.GroupVersion.WithKind("ValkeyCluster"), owned)).To(gomega.Succeed())
}

// Tenant is a namespace of a spec's own on the suite's API server, with a client, and
// the reads and writes the controllers' specs share. Its methods fail the spec on an
// error.
type Tenant struct {
	Client    client.Client
	Namespace string
}

// NewTenant creates a namespace named prefix-<number>.
func NewTenant(cfg *rest.Config, prefix string) *Tenant {
	ginkgo.GinkgoHelper()
	c, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	t := &Tenant{Client: c, Namespace: fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e9)}
	gomega.Expect(c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.Namespace}})).To(gomega.Succeed())
	return t
}

// Key is the key of the object name of the namespace.
func (t *Tenant) Key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: t.Namespace, Name: name}
}

// ClusterCondition returns the condition typ of a cluster, nil when it has none.
func (t *Tenant) ClusterCondition(name, typ string) *metav1.Condition {
	ginkgo.GinkgoHelper()
	return conditions.Get(t.Cluster(name).Status.Conditions, typ)
}

// NodeCondition returns the condition typ of a member, nil when it has none; for use
// inside Eventually and Consistently (g).
func (t *Tenant) NodeCondition(g gomega.Gomega, name, typ string) *metav1.Condition {
	var vn v1alpha1.ValkeyNode
	g.Expect(t.Client.Get(step(), t.Key(name), &vn)).To(gomega.Succeed())
	return conditions.Get(vn.Status.Conditions, typ)
}

// Cluster reads a ValkeyCluster.
func (t *Tenant) Cluster(name string) *v1alpha1.ValkeyCluster {
	ginkgo.GinkgoHelper()
	var vc v1alpha1.ValkeyCluster
	gomega.Expect(t.Client.Get(step(), t.Key(name), &vc)).To(gomega.Succeed())
	return &vc
}

// Secret reads a Secret, nil when there is none.
func (t *Tenant) Secret(name string) *corev1.Secret {
	ginkgo.GinkgoHelper()
	var s corev1.Secret
	if err := t.Client.Get(step(), t.Key(name), &s); err != nil {
		gomega.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "read Secret %s: %v", name, err)
		return nil
	}
	return &s
}

// Events returns "type reason note" of the namespace's events.
func (t *Tenant) Events() []string {
	ginkgo.GinkgoHelper()
	var list eventsv1.EventList
	gomega.Expect(t.Client.List(step(), &list, client.InNamespace(t.Namespace))).To(gomega.Succeed())
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Type+" "+e.Reason+" "+e.Note)
	}
	return out
}

// ExpectOwned checks that a Secret is the cluster's as the operator makes its own:
// labelled with the cluster's labels, and controlled by the cluster (deleted with it).
func (t *Tenant) ExpectOwned(s *corev1.Secret, vc *v1alpha1.ValkeyCluster) {
	ginkgo.GinkgoHelper()
	for k, v := range v1alpha1.ClusterLabels(vc.Name) {
		gomega.Expect(s.Labels).To(gomega.HaveKeyWithValue(k, v), "labels of %s", s.Name)
	}
	gomega.Expect(s.OwnerReferences).To(gomega.HaveLen(1), "owners of %s", s.Name)
	gomega.Expect(s.OwnerReferences[0].UID).To(gomega.Equal(vc.UID), "owner of %s", s.Name)
	gomega.Expect(ptr.Deref(s.OwnerReferences[0].Controller, false)).To(gomega.BeTrue(), "owner of %s", s.Name)
}

// MergeStatus merges patch (JSON of the status) into a cluster's status, as a status
// write of an earlier version or a lost write leaves it.
func (t *Tenant) MergeStatus(name, patch string) {
	ginkgo.GinkgoHelper()
	body := []byte(`{"status":` + patch + `}`)
	gomega.Expect(t.Client.Status().Patch(step(), t.Cluster(name), client.RawPatch(types.MergePatchType, body))).To(gomega.Succeed())
}

// Member creates a ValkeyNode of the cluster as the cluster-controller makes it
// (labelled, controlled by its cluster, naming the cluster's Secrets; with also
// applied to its spec) and publishes its pod IP, 127.0.0.1.
func (t *Tenant) Member(cluster, name string, also ...func(*v1alpha1.ValkeyNodeSpec)) *v1alpha1.ValkeyNode {
	ginkgo.GinkgoHelper()
	vc := t.Cluster(cluster)
	vn := &v1alpha1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: name, Labels: v1alpha1.ClusterLabels(cluster),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(vc, v1alpha1.GroupVersion.WithKind("ValkeyCluster"))}},
		Spec: v1alpha1.ValkeyNodeSpec{ClusterName: cluster, Revision: 1, WorkloadType: v1alpha1.WorkloadStatefulSet,
			Image: v1alpha1.DefaultImage, ACLSecretName: v1alpha1.ACLSecretName(cluster), SystemUsersSecretName: v1alpha1.SystemUsersSecretName(cluster)},
	}
	for _, f := range also {
		f(&vn.Spec)
	}
	gomega.Expect(t.Client.Create(step(), vn)).To(gomega.Succeed())
	patch := client.MergeFrom(vn.DeepCopy())
	vn.Status.PodIP = "127.0.0.1"
	gomega.Expect(t.Client.Status().Patch(step(), vn, patch)).To(gomega.Succeed())
	return vn
}

// step bounds one read or write of a Tenant.
func step() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	ginkgo.DeferCleanup(cancel)
	return ctx
}

// FakeClient is a fake client holding objs, with the operator's scheme, for unit tests
// of what reads the API (collectors).
func FakeClient(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(operator.Scheme()).WithObjects(objs...).Build()
}
