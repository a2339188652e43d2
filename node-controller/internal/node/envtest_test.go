package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/envtestenv"
	"github.com/valkey-operator/valkey-operator/internal/operator"
)

// The integration tests run the reconciler in a manager against a real API server
// (envtest, with the project's own kube-apiserver and etcd). Nothing runs pods there:
// the tests write pod objects and their statuses themselves, and point the pods' IPs
// at real valkey-server processes on this machine (valkeytest).

// testEnv is the running controller against the package's API server (envtestenv),
// shared by the tests.
type testEnv struct {
	c      client.Client
	dialer *testDialer
	// passes counts finished reconcile passes per node.
	passes sync.Map // types.NamespacedName -> *atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
	nsSeq  atomic.Int64
}

var (
	envOnce   sync.Once
	sharedEnv *testEnv
	envErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedEnv != nil {
		sharedEnv.stop()
	}
	envtestenv.Stop()
	os.Exit(code)
}

// startEnv starts the API server and the controller on first use.
func startEnv(t *testing.T) *testEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (envtest); skipped with -short")
	}
	envOnce.Do(func() { sharedEnv, envErr = newTestEnv() })
	if envErr != nil {
		t.Fatalf("start envtest: %v", envErr)
	}
	return sharedEnv
}

func newTestEnv() (*testEnv, error) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(zapLevel())))
	cfg, err := envtestenv.Config()
	if err != nil {
		return nil, err
	}
	te := &testEnv{dialer: &testDialer{servers: map[string]Server{}}, done: make(chan struct{})}
	if err := te.startManager(cfg); err != nil {
		return nil, err
	}
	return te, nil
}

// zapLevel is quiet unless NODE_TEST_VERBOSE is set.
func zapLevel() zapcore.Level {
	if os.Getenv("NODE_TEST_VERBOSE") != "" {
		return -2
	}
	return 2
}

func (te *testEnv) startManager(cfg *rest.Config) error {
	var err error
	if te.c, err = client.New(cfg, client.Options{Scheme: operator.Scheme()}); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 operator.Scheme(),
		Cache:                  cache.Options{ByObject: CacheByObject()},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return err
	}
	r := &Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder(FieldManager), Dialer: te.dialer}
	counting := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		n, _ := te.passes.LoadOrStore(req.NamespacedName, &atomic.Int64{})
		n.(*atomic.Int64).Add(1)
		return res, err
	})
	if err := register(mgr, 4, counting); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	te.cancel = cancel
	go func() {
		defer close(te.done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}()
	return nil
}

func (te *testEnv) stop() {
	te.cancel()
	<-te.done
}

// passCount is the number of passes finished for a node.
func (te *testEnv) passCount(key types.NamespacedName) int64 {
	n, ok := te.passes.Load(key)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// testDialer maps pod IPs to servers.
type testDialer struct {
	mu      sync.Mutex
	servers map[string]Server
}

func (d *testDialer) set(ip string, s Server) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.servers[ip] = s
}

func (d *testDialer) Dial(_ context.Context, _ *v1alpha1.ValkeyNode, ip string) (Server, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.servers[ip]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("dial %s: connection refused", ip)
}

// namespace creates a namespace with the two Secrets the acl-controller would write.
func (te *testEnv) namespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := fmt.Sprintf("t%d-%d", time.Now().Unix()%100000, te.nsSeq.Add(1))
	te.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	for _, s := range systemSecrets(ns, "demo") {
		if err := te.c.Create(ctx, s); err != nil {
			t.Fatalf("create Secret: %v", err)
		}
	}
	return ns
}

// systemSecrets are the system users Secret and the aclfile Secret of a cluster.
func systemSecrets(ns, cluster string) []*corev1.Secret {
	labels := v1alpha1.ClusterLabels(cluster)
	return []*corev1.Secret{
		{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.SystemUsersSecretName(cluster), Namespace: ns, Labels: labels},
			StringData: map[string]string{
				v1alpha1.UserOperator: "op-password", v1alpha1.UserReplication: "repl-password", v1alpha1.UserExporter: "exp-password",
				v1alpha1.PrimaryAuthKey: "primaryauth repl-password\n",
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ACLSecretName(cluster), Namespace: ns, Labels: labels},
			StringData: map[string]string{v1alpha1.ACLFileKey: "user default off\n" +
				"user _operator on >op-password ~* &* +@all\n" +
				"user _replication on >repl-password +psync +replconf +ping +sync\n" +
				"user _exporter on >exp-password +ping +info +client|list +config|get +cluster|info +slowlog +latency +memory +select +scan +xinfo +type +strlen +llen +scard +zcard +hlen\n"},
		},
	}
}

func (te *testEnv) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := te.c.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// eventually polls f until it returns nil, failing the test with f's last error.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: %v", what, err)
}

// node reads a ValkeyNode.
func (te *testEnv) node(t *testing.T, ns, name string) *v1alpha1.ValkeyNode {
	t.Helper()
	var vn v1alpha1.ValkeyNode
	if err := te.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &vn); err != nil {
		t.Fatalf("read ValkeyNode %s: %v", name, err)
	}
	return &vn
}

// waitCondition waits until the node's condition has the status and reason and its
// message passes check (nil: any).
func (te *testEnv) waitCondition(t *testing.T, ns, name, typ string, status metav1.ConditionStatus, reason string, check func(string) error) *v1alpha1.ValkeyNode {
	t.Helper()
	var vn *v1alpha1.ValkeyNode
	eventually(t, fmt.Sprintf("%s of %s to be %s/%s", typ, name, status, reason), func() error {
		vn = te.node(t, ns, name)
		c := meta.FindStatusCondition(vn.Status.Conditions, typ)
		switch {
		case c == nil:
			return errors.New("no condition")
		case c.Status != status || c.Reason != reason:
			return fmt.Errorf("is %s/%s: %s", c.Status, c.Reason, c.Message)
		case c.ObservedGeneration != vn.Generation:
			return fmt.Errorf("observed generation %d of %d", c.ObservedGeneration, vn.Generation)
		case check != nil:
			return check(c.Message)
		}
		return nil
	})
	return vn
}

// updateNode changes a ValkeyNode's spec, retrying on conflicts.
func (te *testEnv) updateNode(t *testing.T, ns, name string, mutate func(*v1alpha1.ValkeyNode)) {
	t.Helper()
	eventually(t, "update ValkeyNode "+name, func() error {
		vn := te.node(t, ns, name)
		mutate(vn)
		return te.c.Update(context.Background(), vn)
	})
}

// newNode creates a ValkeyNode like testNode in namespace ns.
func (te *testEnv) newNode(t *testing.T, ns, name string, mutate ...func(*v1alpha1.ValkeyNode)) *v1alpha1.ValkeyNode {
	t.Helper()
	vn := testNode(mutate...)
	vn.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: ns, Labels: v1alpha1.ShardLabels("demo", vn.Spec.ShardIndex)}
	te.create(t, vn)
	return vn
}

// get reads an object, failing the test when it cannot.
func (te *testEnv) get(t *testing.T, ns, name string, obj client.Object) {
	t.Helper()
	if err := te.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatalf("read %T %s: %v", obj, name, err)
	}
}

// waitObject waits until the object exists and check passes.
func (te *testEnv) waitObject(t *testing.T, ns, name string, obj client.Object, check func() error) {
	t.Helper()
	eventually(t, fmt.Sprintf("%T %s", obj, name), func() error {
		if err := te.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
			return err
		}
		if check != nil {
			return check()
		}
		return nil
	})
}

// absent fails the test unless the object does not exist.
func (te *testEnv) absent(t *testing.T, ns, name string, obj client.Object) {
	t.Helper()
	err := te.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, obj)
	if !apierrors.IsNotFound(err) {
		t.Fatalf("%T %s exists (err %v)", obj, name, err)
	}
}

// startPod creates the pod a workload controller would create from tmpl, and marks
// it running at ip: what a kubelet would report.
func (te *testEnv) startPod(t *testing.T, ns, name string, tmpl corev1.PodTemplateSpec, ip string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Name, pod.Namespace = name, ns
	te.create(t, pod)
	return te.setPodStatus(t, pod, runningStatus(ip))
}

// runningStatus is the status of a pod whose server runs at ip.
func runningStatus(ip string) corev1.PodStatus {
	return corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: ServerContainer, Image: "valkey/valkey:8.0.1", Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		}},
	}
}

// setPodStatus writes a pod's status, as the kubelet would.
func (te *testEnv) setPodStatus(t *testing.T, pod *corev1.Pod, st corev1.PodStatus) *corev1.Pod {
	t.Helper()
	eventually(t, "write status of pod "+pod.Name, func() error {
		var cur corev1.Pod
		if err := te.c.Get(context.Background(), client.ObjectKeyFromObject(pod), &cur); err != nil {
			return err
		}
		cur.Status = st
		if err := te.c.Status().Update(context.Background(), &cur); err != nil {
			return err
		}
		pod = &cur
		return nil
	})
	return pod
}

// waitEvent waits for an event about the node with the given reason.
func (te *testEnv) waitEvent(t *testing.T, ns, node, reason string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	eventually(t, "event "+reason+" about "+node, func() error {
		var list eventsv1.EventList
		if err := te.c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == node && e.Reason == reason {
				found = e
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(list.Items))
	})
	return found
}

// controlledBy checks that obj has a controller reference to the node.
func controlledBy(obj metav1.Object, vn *v1alpha1.ValkeyNode) error {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.UID != vn.UID || ref.Kind != "ValkeyNode" {
		return fmt.Errorf("%s is not controlled by ValkeyNode %s (%v)", obj.GetName(), vn.Name, ref)
	}
	return nil
}
