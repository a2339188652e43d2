package cluster

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/status"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// kubelet stands in for what envtest lacks: the kubelet that runs a member's pod and the
// node-controller that reports it. For every ValkeyNode it starts a valkey-server on a
// loopback address of its own (the pod IP), with the member's config and the operator's
// user, and writes the ValkeyNode status the node-controller would write: podName,
// podIP, revision and PodReady, under the node-controller's field manager. A new
// spec.revision gets a new pod: the server stops and a new one starts, empty, at a new
// address. It stops the server once the ValkeyNode is gone (Kubernetes would delete the
// pod then). It has no volumes: rolls in place (persistence) are not covered.
type kubelet struct {
	c   client.Client
	dir string // the servers' directories go here

	mu      sync.Mutex
	pods    map[string]*pod // by ValkeyNode name
	byIP    map[string]*valkeytest.Server
	deleted map[string]bool // bare pods gone for good: never started again
	held    map[string]bool // crashed servers not restarted yet (a restarted server's wait)
	// busRelay starts the servers behind bus relays, so a spec can cut the bus between
	// two of them (valkeytest.CutBus). Set before the cluster is created.
	busRelay bool
	// nodeOf, when set, is the Kubernetes node a member's pod runs on (status.nodeName,
	// as the scheduler would choose it), asked once per member. Set before the cluster
	// is created.
	nodeOf func(vn *v1alpha1.ValkeyNode) string
	nodes  map[string]string // by ValkeyNode name
}

// pod is the server of one member.
type pod struct {
	server   *valkeytest.Server
	name     string // the pod's name; a new pod gets a new one
	revision int64  // the spec revision it was started for
}

// The node-controller's field manager: the stand-in's status writes merge with the
// cluster-controller's as the real ones do.
const nodeFieldManager = "node-controller"

// Credentials of every stand-in server: the admin the suite looks with, and the
// operator's user the controller logs in as (the password of its system users Secret).
const (
	adminPassword       = "admin-password-of-the-suite"
	replicationPassword = "replication-password-of-the-suite"
	operatorPassword    = "operator-password-of-the-suite"
)

// nextIP numbers the servers' addresses across the suite: 127.0.1.1, 127.0.1.2, ...
var nextIP atomic.Int64

func newIP() string {
	n := nextIP.Add(1) - 1
	return fmt.Sprintf("127.0.%d.%d", 1+n/250, 1+n%250)
}

func newKubelet(c client.Client, dir string) *kubelet {
	return &kubelet{c: c, dir: dir, pods: map[string]*pod{}, byIP: map[string]*valkeytest.Server{}, deleted: map[string]bool{}, held: map[string]bool{},
		nodes: map[string]string{}}
}

// addr is the Reconciler's Addr: the server at the member's pod IP.
func (k *kubelet) addr(vn *v1alpha1.ValkeyNode) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s, ok := k.byIP[vn.Status.PodIP]; ok {
		return s.Addr()
	}
	return valkeyconn.Addr(vn.Status.PodIP)
}

// setup registers the stand-in with a manager of its own, so that it keeps running
// while the suite stops and starts the controller's.
func (k *kubelet) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("kubelet").For(&v1alpha1.ValkeyNode{}).Complete(k)
}

// Reconcile starts the member's server when it has none and reports it.
func (k *kubelet) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var vn v1alpha1.ValkeyNode
	if err := k.c.Get(ctx, req.NamespacedName, &vn); err != nil {
		if apierrors.IsNotFound(err) {
			k.remove(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if k.isHeld(vn.Name) {
		return ctrl.Result{RequeueAfter: 200 * time.Millisecond}, nil
	}
	p, err := k.ensure(&vn)
	if err != nil || p == nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, k.report(ctx, &vn, p)
}

// ensure returns the member's pod, starting it if it has none or if it was built for
// another revision (nil for a bare pod that is gone for good).
func (k *kubelet) ensure(vn *v1alpha1.ValkeyNode) (*pod, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.pods[vn.Name]; p != nil && p.revision != vn.Spec.Revision && vn.DeletionTimestamp.IsZero() {
		// The node-controller replaces the pod of a new revision.
		p.server.Stop()
		delete(k.pods, vn.Name)
	}
	if p := k.pods[vn.Name]; p != nil || k.deleted[vn.Name] {
		return p, nil
	}
	dir, err := os.MkdirTemp(k.dir, vn.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("directory of %s: %w", vn.Name, err)
	}
	s, err := valkeytest.StartIn(dir, valkeytest.Options{
		Host: newIP(), Config: vn.Spec.Config, BusRelay: k.busRelay,
		AdminPassword: adminPassword, ReplicationPassword: replicationPassword,
		Users: []string{"user " + v1alpha1.UserOperator + " on #" + valkey.ACLPasswordHash(operatorPassword) + " ~* &* +@all"},
	})
	if err != nil {
		return nil, fmt.Errorf("start the server of %s: %w", vn.Name, err)
	}
	p := &pod{server: s, name: fmt.Sprintf("%s-%d", vn.Name, time.Now().UnixNano()%1e6), revision: vn.Spec.Revision}
	k.pods[vn.Name] = p
	k.byIP[s.Host] = s
	return p, nil
}

// podStatus is the part of a ValkeyNode's status the node-controller owns, as far as the
// stand-in fills it.
type podStatus struct {
	PodName    string             `json:"podName,omitempty"`
	PodIP      string             `json:"podIP,omitempty"`
	NodeName   string             `json:"nodeName,omitempty"`
	Revision   int64              `json:"revision,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// report writes the status of a running pod, when it changed.
func (k *kubelet) report(ctx context.Context, vn *v1alpha1.ValkeyNode, p *pod) error {
	ready := conditions.New(v1alpha1.ConditionPodReady, true, v1alpha1.ReasonPodRunning,
		fmt.Sprintf("the server of pod %s answers at %s", p.name, p.server.Addr()), vn.Generation)
	up := conditions.New(v1alpha1.ConditionServerDown, false, v1alpha1.ReasonServing, "it answers", vn.Generation)
	return k.write(ctx, vn, podStatus{PodName: p.name, PodIP: p.server.Host, NodeName: k.nodeName(vn), Revision: p.revision}, ready, up)
}

// nodeName is the node the member's pods run on, chosen once ("" without nodeOf).
func (k *kubelet) nodeName(vn *v1alpha1.ValkeyNode) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.nodeOf == nil {
		return ""
	}
	if n, ok := k.nodes[vn.Name]; ok {
		return n
	}
	n := k.nodeOf(vn)
	k.nodes[vn.Name] = n
	return n
}

func (k *kubelet) write(ctx context.Context, vn *v1alpha1.ValkeyNode, want podStatus, conds ...metav1.Condition) error {
	want.Conditions = conditions.Resolve(vn.Status.Conditions, time.Now(), conds...)
	have := podStatus{PodName: vn.Status.PodName, PodIP: vn.Status.PodIP, NodeName: vn.Status.NodeName, Revision: vn.Status.Revision,
		Conditions: conditions.Owned(vn.Status.Conditions, v1alpha1.ConditionPodReady, v1alpha1.ConditionServerDown)}
	if status.Equal(have, want) {
		return nil
	}
	if err := status.Apply(ctx, k.c, nodeFieldManager, vn, v1alpha1.GroupVersion.WithKind("ValkeyNode"), want); err != nil {
		return fmt.Errorf("report the pod of %s: %w", vn.Name, err)
	}
	return nil
}

// remove stops the server of a ValkeyNode that is gone.
func (k *kubelet) remove(name string) {
	k.mu.Lock()
	p := k.pods[name]
	delete(k.pods, name)
	k.mu.Unlock()
	if p != nil {
		p.server.Stop()
	}
}

// kill SIGKILLs the member's server and takes its pod away.
func (k *kubelet) kill(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.pods[name]; p != nil {
		p.server.Stop()
		delete(k.pods, name)
	}
}

// crash SIGKILLs a member's server and reports what the node-controller would once the
// kubelet saw the container exit: ServerDown=True, the pod in place. The server is not
// started again until release (a restarted server waits).
func (k *kubelet) crash(ctx context.Context, vn *v1alpha1.ValkeyNode) error {
	k.mu.Lock()
	k.held[vn.Name] = true
	k.mu.Unlock()
	k.kill(vn.Name)
	silent := conditions.New(v1alpha1.ConditionPodReady, false, v1alpha1.ReasonServerUnreachable,
		fmt.Sprintf("pod %s runs but its server does not answer", vn.Status.PodName), vn.Generation)
	down := conditions.New(v1alpha1.ConditionServerDown, true, v1alpha1.ReasonContainerExited,
		fmt.Sprintf("container server of pod %s exited with code 137 after signal 9", vn.Status.PodName), vn.Generation)
	return k.write(ctx, vn, podStatus{PodName: vn.Status.PodName, PodIP: vn.Status.PodIP, NodeName: vn.Status.NodeName, Revision: vn.Status.Revision}, silent, down)
}

// release lets a crashed member's server start again, empty.
func (k *kubelet) release(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.held, name)
}

func (k *kubelet) isHeld(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.held[name]
}

// deletePod kills a bare pod's server (workloadType Pod): nothing brings it back, and
// the node-controller reports it missing.
func (k *kubelet) deletePod(ctx context.Context, vn *v1alpha1.ValkeyNode) error {
	k.mu.Lock()
	k.deleted[vn.Name] = true
	k.mu.Unlock()
	k.kill(vn.Name)
	gone := conditions.New(v1alpha1.ConditionPodReady, false, v1alpha1.ReasonPodMissing,
		fmt.Sprintf("pod %s is gone; a bare pod is not recreated: the cluster-controller replaces the member", vn.Status.PodName), vn.Generation)
	return k.write(ctx, vn, podStatus{PodName: vn.Status.PodName, Revision: vn.Status.Revision}, gone)
}

// recreatePod kills a member's server and starts its pod again, empty and at a new
// address: a StatefulSet's pod deleted without a volume and with no grace period, its
// server killed first. It reports what the node-controller does then: the pod gone,
// and (its probe of the old address refused) ServerDown=True.
func (k *kubelet) recreatePod(ctx context.Context, vn *v1alpha1.ValkeyNode) error {
	k.kill(vn.Name)
	// The write brings a pass of the stand-in, which starts the new pod.
	return k.reportGone(ctx, vn)
}

// reportGone reports what the node-controller does once the member's pod is gone and its
// probe of the old address was refused: ServerDown=True.
func (k *kubelet) reportGone(ctx context.Context, vn *v1alpha1.ValkeyNode) error {
	pending := conditions.New(v1alpha1.ConditionPodReady, false, v1alpha1.ReasonPodPending,
		fmt.Sprintf("pod %s is being deleted", vn.Status.PodName), vn.Generation)
	down := conditions.New(v1alpha1.ConditionServerDown, true, v1alpha1.ReasonContainerExited,
		fmt.Sprintf("pod %s is gone and its server no longer listens at %s (connection refused)", vn.Status.PodName, vn.Status.PodIP), vn.Generation)
	return k.write(ctx, vn, podStatus{PodName: vn.Status.PodName, Revision: vn.Status.Revision}, pending, down)
}

// replacePod is recreatePod for a Deployment's pod, whose replacement runs at once: the
// node-controller's report of the old server's exit (ServerDown=True) is followed at
// once by the new pod's, whose server answers empty at a new address
// (ServerDown=False). The old server is killed last, a moment after the reports: a pass
// that read the first report finds the old primary's replica still linked to it and
// waits for the link to close (plan.DrainWait), and by then the report is gone.
func (k *kubelet) replacePod(ctx context.Context, vn *v1alpha1.ValkeyNode) error {
	k.mu.Lock()
	k.held[vn.Name] = true // the stand-in's own passes wait: this starts the new pod
	old := k.pods[vn.Name]
	delete(k.pods, vn.Name)
	k.mu.Unlock()
	defer k.release(vn.Name)
	if old != nil {
		defer old.server.Stop()
	}
	if err := k.reportGone(ctx, vn); err != nil {
		return err
	}
	var now v1alpha1.ValkeyNode
	if err := k.c.Get(ctx, client.ObjectKeyFromObject(vn), &now); err != nil {
		return err
	}
	p, err := k.ensure(&now)
	if err != nil {
		return err
	}
	return k.report(ctx, &now, p)
}

// servers returns the running servers.
func (k *kubelet) servers() []*valkeytest.Server {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]*valkeytest.Server, 0, len(k.pods))
	for _, p := range k.pods {
		out = append(out, p.server)
	}
	return out
}

// server returns the running server of a member, or nil.
func (k *kubelet) server(name string) *valkeytest.Server {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.pods[name]; p != nil {
		return p.server
	}
	return nil
}

// stopAll stops every server, when the spec ends.
func (k *kubelet) stopAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.pods {
		p.server.Stop()
	}
	k.pods = map[string]*pod{}
}
