package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	gomegatypes "github.com/onsi/gomega/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/operator"
	"github.com/valkey-operator/valkey-operator/internal/testsuite"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// The integration specs run the reconciler in a manager against a real API server
// (envtest, with the project's own kube-apiserver and etcd; see suite_test.go). Nothing
// runs pods there: the specs write pod objects and their statuses themselves, and point
// the pods' IPs at real valkey-server processes on this machine (valkeytest).

// testEnv is the running controller against the suite's API server, shared by the
// specs.
type testEnv struct {
	c      client.Client
	dialer *testDialer
	// passes counts finished reconcile passes per node.
	passes sync.Map // types.NamespacedName -> *atomic.Int64
	cancel context.CancelFunc
	done   chan error
	nsSeq  atomic.Int64
	// refused are the addresses whose dial the stand-in network refuses (a pod's
	// network namespace without a listener); any other probe times out, as the pod
	// addresses of the suite lead nowhere.
	refused sync.Map // "ip:port" -> bool
	// answering are the addresses where a server still listens: a dial there returns
	// one end of a pipe and stores the other here, for the test to close as the
	// server's exit would.
	answering sync.Map // "ip:port" -> net.Conn (the server's end, once dialled)
}

// dialWatched is the Reconciler's DialWatched: refused for the addresses in refused, a
// connection for those in answering, else a timeout.
func (te *testEnv) dialWatched(_ context.Context, addr string) (net.Conn, error) {
	if _, ok := te.refused.Load(addr); ok {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	if _, ok := te.answering.Load(addr); ok {
		client, server := net.Pipe()
		te.answering.Store(addr, server)
		return client, nil
	}
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
}

// startEnv starts the controller against the API server at cfg.
func startEnv(cfg *rest.Config) (*testEnv, error) {
	te := &testEnv{dialer: &testDialer{servers: map[string]Server{}}, done: make(chan error, 1)}
	var err error
	if te.c, err = client.New(cfg, client.Options{Scheme: operator.Scheme()}); err != nil {
		return nil, err
	}
	mgr, err := testsuite.Manager(cfg)
	if err != nil {
		return nil, err
	}
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder(FieldManager), Dialer: te.dialer, DialWatched: te.dialWatched}
	counting := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		n, _ := te.passes.LoadOrStore(req.NamespacedName, &atomic.Int64{})
		n.(*atomic.Int64).Add(1)
		return res, err
	})
	if err := register(mgr, 4, r, counting); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	te.cancel = cancel
	go func() { te.done <- mgr.Start(ctx) }()
	return te, nil
}

func (te *testEnv) stop() error {
	te.cancel()
	return <-te.done
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

// get returns the server at ip.
func (d *testDialer) get(ip string) Server {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.servers[ip]
}

// drop makes the server at ip unreachable, as a server that stopped.
func (d *testDialer) drop(ip string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.servers, ip)
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
func (te *testEnv) namespace() string {
	GinkgoHelper()
	ns := fmt.Sprintf("t%d-%d", time.Now().Unix()%100000, te.nsSeq.Add(1))
	te.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	for _, s := range systemSecrets(ns, "demo") {
		te.create(s)
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

func (te *testEnv) create(obj client.Object) {
	GinkgoHelper()
	Expect(te.c.Create(context.Background(), obj)).To(Succeed(), "create %T %s", obj, obj.GetName())
}

// node reads a ValkeyNode.
func (te *testEnv) node(g Gomega, ns, name string) *v1alpha1.ValkeyNode {
	var vn v1alpha1.ValkeyNode
	g.Expect(te.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &vn)).To(Succeed(), "read ValkeyNode %s", name)
	return &vn
}

// contains matches a message that has every fragment.
func contains(fragments ...string) gomegatypes.GomegaMatcher {
	var all []gomegatypes.GomegaMatcher
	for _, f := range fragments {
		all = append(all, ContainSubstring(f))
	}
	return And(all...)
}

// waitCondition waits until the node's condition has the status and reason for the
// node's generation and its message matches msg (nil: any).
func (te *testEnv) waitCondition(ns, name, typ string, status metav1.ConditionStatus, reason string, msg gomegatypes.GomegaMatcher) *v1alpha1.ValkeyNode {
	GinkgoHelper()
	var vn *v1alpha1.ValkeyNode
	Eventually(func(g Gomega) {
		vn = te.node(g, ns, name)
		c := meta.FindStatusCondition(vn.Status.Conditions, typ)
		g.Expect(c).NotTo(BeNil(), "no condition")
		g.Expect(c.Status).To(Equal(status), "%s: %s", c.Reason, c.Message)
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(vn.Generation), "observed generation")
		if msg != nil {
			g.Expect(c.Message).To(msg)
		}
	}).Should(Succeed(), "%s of %s to be %s/%s", typ, name, status, reason)
	return vn
}

// updateNode changes a ValkeyNode's spec, retrying on conflicts.
func (te *testEnv) updateNode(ns, name string, mutate func(*v1alpha1.ValkeyNode)) {
	GinkgoHelper()
	Eventually(func(g Gomega) error {
		vn := te.node(g, ns, name)
		mutate(vn)
		return te.c.Update(context.Background(), vn)
	}).Should(Succeed(), "update ValkeyNode %s", name)
}

// newNode creates a ValkeyNode like testNode in namespace ns.
func (te *testEnv) newNode(ns, name string, mutate ...func(*v1alpha1.ValkeyNode)) *v1alpha1.ValkeyNode {
	GinkgoHelper()
	vn := testNode(mutate...)
	vn.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: ns, Labels: v1alpha1.ShardLabels("demo", vn.Spec.ShardIndex)}
	te.create(vn)
	return vn
}

// get reads an object.
func (te *testEnv) get(g Gomega, ns, name string, obj client.Object) {
	g.Expect(te.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, obj)).To(Succeed(), "read %T %s", obj, name)
}

// waitObject waits until the object exists and check (nil: none) passes.
func (te *testEnv) waitObject(ns, name string, obj client.Object, check func(g Gomega)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		te.get(g, ns, name, obj)
		if check != nil {
			check(g)
		}
	}).Should(Succeed(), "%T %s", obj, name)
}

// absent checks that the object does not exist.
func (te *testEnv) absent(ns, name string, obj client.Object) {
	GinkgoHelper()
	err := te.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, obj)
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s exists (err %v)", obj, name, err)
}

// startPod creates the pod a workload controller would create from tmpl, and marks
// it running at ip: what a kubelet would report.
func (te *testEnv) startPod(ns, name string, tmpl corev1.PodTemplateSpec, ip string) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Name, pod.Namespace = name, ns
	te.create(pod)
	return te.setPodStatus(pod, runningStatus(ip))
}

// waitDialled waits until the controller has dialled addr, one of answering, and returns
// the server's end of that connection.
func (te *testEnv) waitDialled(addr string) net.Conn {
	GinkgoHelper()
	var server net.Conn
	Eventually(func() net.Conn {
		v, _ := te.answering.Load(addr)
		server, _ = v.(net.Conn)
		return server
	}).ShouldNot(BeNil(), "the controller dials "+addr)
	return server
}

// servingStatefulSetNode creates a StatefulSet node whose pod runs a real server at
// ips[0] (the dialer reaches that server at each of ips) and waits until the node
// reports the pod ready: PodReady, not only ServerDown=False, which a pod without a
// status gives too, so the node's status has the pod's address.
func (te *testEnv) servingStatefulSetNode(ns, name string, ips ...string) (*corev1.Pod, *appsv1.StatefulSet) {
	GinkgoHelper()
	srv := valkeytest.Start(GinkgoTB(), 1, valkeytest.Options{})[0]
	for _, ip := range ips {
		te.dialer.set(ip, srv.Dial(GinkgoTB()))
	}
	te.newNode(ns, name)
	var sts appsv1.StatefulSet
	te.waitObject(ns, name, &sts, func(Gomega) {})
	pod := te.startPod(ns, name+"-0", sts.Spec.Template, ips[0])
	te.waitCondition(ns, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonPodRunning, nil)
	return pod, &sts
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
func (te *testEnv) setPodStatus(pod *corev1.Pod, st corev1.PodStatus) *corev1.Pod {
	GinkgoHelper()
	Eventually(func() error {
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
	}).Should(Succeed(), "write status of pod %s", pod.Name)
	return pod
}

// waitEvent waits for an event about the node with the given reason.
func (te *testEnv) waitEvent(ns, node, reason string) {
	GinkgoHelper()
	Eventually(func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(te.c.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			out = append(out, e.Regarding.Name+" "+e.Reason)
		}
		return out
	}).Should(ContainElement(node+" "+reason), "event %s about %s", reason, node)
}

// controlledBy checks that obj has a controller reference to the node.
func controlledBy(g Gomega, obj metav1.Object, vn *v1alpha1.ValkeyNode) {
	ref := metav1.GetControllerOf(obj)
	g.Expect(ref).NotTo(BeNil(), "%s has no controller", obj.GetName())
	g.Expect(ref.UID).To(Equal(vn.UID), "%s is not controlled by ValkeyNode %s (%v)", obj.GetName(), vn.Name, ref)
	g.Expect(ref.Kind).To(Equal("ValkeyNode"), "controller of %s", obj.GetName())
}

// verbose reports whether NODE_TEST_VERBOSE asks for the controller's debug logs.
func verbose() bool { return os.Getenv("NODE_TEST_VERBOSE") != "" }
