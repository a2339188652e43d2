package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/membership"
	"github.com/valkey-operator/valkey-operator/internal/testsuite"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// env is one spec's world: a namespace, the stand-in kubelet in a manager of its own,
// and the controller in another one, which the spec may stop and start again.
type env struct {
	ns      string
	kubelet *kubelet
	// metrics are the running controller's, registered in registry.
	metrics  *Metrics
	registry *prometheus.Registry
	stop     func()
	// restPeriod is the next controller's RestPeriod (its default when zero).
	restPeriod time.Duration
	// createBatch is the next controller's CreateBatch (its default when zero).
	createBatch int
	// failbackHold is the next controller's FailbackHold (its default when zero).
	failbackHold time.Duration
	// cacheLag is how long the running controller's reads of a cluster show it as it was
	// before the controller's last status write (laggingClient; none when zero).
	cacheLag atomic.Int64
}

// newEnv sets up a spec's world and tears it down when the spec ends.
func newEnv() *env {
	e := &env{ns: fmt.Sprintf("cc-%d", time.Now().UnixNano()%1e9)}
	Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}})).To(Succeed())
	e.kubelet = newKubelet(nil, serverDir())
	mgr := e.manager()
	e.kubelet.c = mgr.GetClient()
	Expect(e.kubelet.setup(mgr)).To(Succeed())
	stopKubelet := run(mgr)
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			e.report()
		}
		e.stopController()
		stopKubelet()
		e.kubelet.stopAll()
	})
	e.startController()
	return e
}

// report writes what a failed spec leaves to explain it: the namespace's events in the
// order they were first seen, and the end of every running server's log.
func (e *env) report() {
	var evs eventsv1.EventList
	if err := k8s.List(context.Background(), &evs, client.InNamespace(e.ns)); err != nil {
		GinkgoWriter.Printf("events of %s: %v\n", e.ns, err)
	}
	sort.SliceStable(evs.Items, func(i, j int) bool {
		return evs.Items[i].EventTime.Before(&evs.Items[j].EventTime)
	})
	GinkgoWriter.Printf("events of %s:\n", e.ns)
	for _, ev := range evs.Items {
		GinkgoWriter.Printf("  %s %s %s/%s %s: %s\n", ev.EventTime.Format("15:04:05.000"), ev.Type,
			ev.Regarding.Kind, ev.Regarding.Name, ev.Reason, ev.Note)
	}
	var vcs v1alpha1.ValkeyClusterList
	if err := k8s.List(context.Background(), &vcs, client.InNamespace(e.ns)); err == nil {
		for _, vc := range vcs.Items {
			st, _ := json.MarshalIndent(vc.Status, "  ", "  ")
			GinkgoWriter.Printf("status of %s (annotations %v):\n  %s\n", vc.Name, vc.Annotations, st)
		}
	}
	for _, s := range e.kubelet.servers() {
		GinkgoWriter.Printf("log of %s:\n%s\n", s.Addr(), s.LogTail(40))
	}
}

// serverDir is where the spec's servers keep their files: in memory when the machine
// has /dev/shm, as every slot a scale moves makes the servers fsync nodes.conf.
func serverDir() string {
	dir, err := os.MkdirTemp("/dev/shm", "cluster-suite-")
	if err != nil {
		return GinkgoT().TempDir()
	}
	DeferCleanup(os.RemoveAll, dir)
	return dir
}

// manager returns a manager of the spec's namespace.
func (e *env) manager() ctrl.Manager {
	mgr, err := testsuite.Manager(cfg, e.ns)
	Expect(err).NotTo(HaveOccurred())
	return mgr
}

// run starts a manager; the function it returns stops it and checks it ended cleanly.
func run(mgr ctrl.Manager) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		Expect(<-done).To(Succeed())
	}
}

// startController runs a new cluster-controller: a fresh reconciler, connection pool and
// metrics, as after a restart of the operator.
func (e *env) startController() {
	mgr := e.manager()
	e.registry = prometheus.NewRegistry()
	e.metrics = NewMetrics(e.registry)
	pool := &valkeyconn.Pool{DialTimeout: time.Second}
	r := &Reconciler{
		Client:    newLaggingClient(mgr.GetClient(), func() time.Duration { return time.Duration(e.cacheLag.Load()) }),
		APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
		Recorder: mgr.GetEventRecorder(FieldManager), Pool: pool, Metrics: e.metrics, Addr: e.kubelet.addr,
		NetworkPolicy: NetworkPolicyDefaults{Enabled: true, OperatorNamespace: "valkey-operator"},
		FastFailover:  true,
		RestPeriod:    e.restPeriod,
		CreateBatch:   e.createBatch,
		FailbackHold:  e.failbackHold,
	}
	Expect(r.SetupWithManager(mgr, 2)).To(Succeed())
	stop := run(mgr)
	e.stop = func() {
		stop()
		pool.Close()
	}
}

func (e *env) stopController() {
	if e.stop != nil {
		e.stop()
		e.stop = nil
	}
}

// createCluster creates the system users' Secret and names it in status.acl (the
// acl-controller's part) and a cluster of shards x replicas whose servers notice a dead
// peer after 2 s.
func (e *env) createCluster(name string, shards, replicas int32, mutate ...func(*v1alpha1.ValkeyClusterSpec)) {
	ctx := context.Background()
	Expect(k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: v1alpha1.SystemUsersSecretName(name), Labels: v1alpha1.ClusterLabels(name)},
		Data:       map[string][]byte{v1alpha1.UserOperator: []byte(operatorPassword)},
	})).To(Succeed())
	vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}, Spec: v1alpha1.ValkeyClusterSpec{
		Shards: shards, ReplicasPerShard: ptr.To(replicas), Config: v1alpha1.Config{"cluster-node-timeout": "2000"},
	}}
	for _, m := range mutate {
		m(&vc.Spec)
	}
	Expect(k8s.Create(ctx, vc)).To(Succeed())
	patch := client.MergeFrom(vc.DeepCopy())
	vc.Status.ACL = &v1alpha1.ACLStatus{SecretName: v1alpha1.ACLSecretName(name), SystemUsersSecretName: v1alpha1.SystemUsersSecretName(name), Revision: "r1"}
	Expect(k8s.Status().Patch(ctx, vc, patch)).To(Succeed())
}

// update changes a cluster's spec, retrying on conflicts.
func (e *env) update(name string, mutate func(*v1alpha1.ValkeyClusterSpec)) {
	Eventually(func() error {
		vc := e.cluster(Default, name)
		mutate(&vc.Spec)
		return k8s.Update(context.Background(), vc)
	}).Should(Succeed())
}

func (e *env) cluster(g Gomega, name string) *v1alpha1.ValkeyCluster {
	var vc v1alpha1.ValkeyCluster
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: name}, &vc)).To(Succeed())
	return &vc
}

// members lists the cluster's ValkeyNodes, oldest first.
func (e *env) members(g Gomega, name string) []v1alpha1.ValkeyNode {
	var list v1alpha1.ValkeyNodeList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(e.ns), client.MatchingLabels(v1alpha1.ClusterLabels(name)))).To(Succeed())
	sort.Slice(list.Items, func(i, j int) bool { return membership.Older(&list.Items[i], &list.Items[j]) })
	return list.Items
}

// member returns the member serving shard sh as primary (as the cluster's status says)
// or a replica of it.
func (e *env) member(g Gomega, name string, sh int32, primary bool) v1alpha1.ValkeyNode {
	vc := e.cluster(g, name)
	g.Expect(len(vc.Status.Shards)).To(BeNumerically(">", int(sh)))
	want := vc.Status.Shards[sh].Primary
	if !primary {
		g.Expect(vc.Status.Shards[sh].Replicas).NotTo(BeEmpty())
		want = vc.Status.Shards[sh].Replicas[0]
	}
	for _, vn := range e.members(g, name) {
		if vn.Name == want {
			return vn
		}
	}
	g.Expect(want).To(BeEmpty(), "member %s of shard %d is not listed", want, sh)
	return v1alpha1.ValkeyNode{}
}

// expectReady waits until the cluster is Ready with its spec fully applied, as a user
// reads it in its status, and the servers agree (expectServers).
func (e *env) expectReady(name string, timeout time.Duration) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		vc := e.cluster(g, name)
		ready := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionReady)
		progressing := conditions.Get(vc.Status.Conditions, v1alpha1.ConditionProgressing)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Ready: %s %s", ready.Reason, ready.Message)
		g.Expect(progressing).NotTo(BeNil())
		g.Expect(progressing.Status).To(Equal(metav1.ConditionFalse), func() string {
			return fmt.Sprintf("Progressing: %s %s (servers' open slots: %s)", progressing.Reason, progressing.Message, e.openSlots())
		})
		g.Expect(vc.Status.ObservedGeneration).To(Equal(vc.Generation))
		g.Expect(vc.Status.State).To(Equal(v1alpha1.StateReady))
		g.Expect(vc.Status.ReadyShards).To(Equal(vc.Spec.ShardCount()))
		e.expectServers(g, vc)
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// expectServers checks the cluster as its servers see it: every member's server says
// cluster_state ok with all 16384 slots served and knows exactly the members; the
// shards of the spec each have a primary with slots and replicasPerShard replicas
// following it; and every member reports Joined, Synced and lifecycle Active.
func (e *env) expectServers(g Gomega, vc *v1alpha1.ValkeyCluster) {
	members := e.members(g, vc.Name)
	g.Expect(members).To(HaveLen(int(vc.Spec.ShardCount() * (1 + vc.Spec.ReplicaCount()))))
	ids := map[string]bool{}
	for _, vn := range members {
		g.Expect(vn.DeletionTimestamp).To(BeNil(), "member %s is leaving", vn.Name)
		g.Expect(vn.Status.NodeID).NotTo(BeEmpty())
		g.Expect(vn.Status.Lifecycle).To(Equal(v1alpha1.LifecycleActive), vn.Name)
		for _, typ := range []string{v1alpha1.ConditionJoined, v1alpha1.ConditionSynced} {
			g.Expect(conditions.IsTrue(vn.Status.Conditions, typ)).To(BeTrue(), "%s of %s: %+v", typ, vn.Name, conditions.Get(vn.Status.Conditions, typ))
		}
		ids[vn.Status.NodeID] = true
	}
	for _, vn := range members {
		s := e.kubelet.server(vn.Name)
		g.Expect(s).NotTo(BeNil(), "no server runs for %s", vn.Name)
		c := dial(g, s)
		info, err := c.ClusterInfo(context.Background())
		c.Close()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info).To(HaveKeyWithValue("cluster_state", "ok"), vn.Name)
		g.Expect(info).To(HaveKeyWithValue("cluster_slots_ok", "16384"), vn.Name)
		g.Expect(info).To(HaveKeyWithValue("cluster_known_nodes", strconv.Itoa(len(members))), vn.Name)
		view := nodesOf(g, s)
		primaries, replicasOf := 0, map[string]int{}
		for _, n := range view {
			g.Expect(ids).To(HaveKey(n.ID), "%s knows %s, which no member is", vn.Name, n.ID)
			if n.Primary && len(n.Slots) > 0 {
				primaries++
			}
			if n.Replica {
				replicasOf[n.PrimaryID]++
			}
		}
		g.Expect(primaries).To(Equal(int(vc.Spec.ShardCount())), "primaries with slots in the view of %s", vn.Name)
		for _, n := range view {
			if n.Primary && len(n.Slots) > 0 {
				g.Expect(replicasOf[n.ID]).To(Equal(int(vc.Spec.ReplicaCount())), "replicas of %s in the view of %s", n.ID, vn.Name)
			}
		}
	}
}

// dial logs in to a server as the suite's admin; the caller closes the client.
func dial(g Gomega, s *valkeytest.Server) *valkey.Client {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := valkey.Dial(ctx, s.Options())
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

// nodesOf returns a server's CLUSTER NODES.
func nodesOf(g Gomega, s *valkeytest.Server) []valkey.ClusterNode {
	c := dial(g, s)
	defer c.Close()
	nodes, err := c.ClusterNodes(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	return nodes
}

// router sends each key to the server that serves its slot, as a cluster client does
// after reading the slot map.
type router struct {
	slots   map[int]string // slot -> address
	clients map[string]*valkey.Client
	opts    valkey.Options
}

// newRouter reads the slot map from s; Close closes its clients.
func newRouter(g Gomega, s *valkeytest.Server) *router {
	r := &router{slots: map[int]string{}, clients: map[string]*valkey.Client{}, opts: s.Options()}
	for _, n := range nodesOf(g, s) {
		if !n.Primary {
			continue
		}
		for _, rg := range n.Slots {
			for slot := rg.Start; slot <= rg.End; slot++ {
				r.slots[slot] = n.Addr()
			}
		}
	}
	g.Expect(r.slots).To(HaveLen(valkey.SlotCount))
	return r
}

func (r *router) client(g Gomega, key string) *valkey.Client {
	addr := r.slots[valkey.KeySlot(key)]
	if c := r.clients[addr]; c != nil {
		return c
	}
	o := r.opts
	o.Addr = addr
	c, err := valkey.Dial(context.Background(), o)
	g.Expect(err).NotTo(HaveOccurred())
	r.clients[addr] = c
	return c
}

func (r *router) Close() {
	for _, c := range r.clients {
		c.Close()
	}
}

// writeKeys writes n keys, each on the server of its slot, and returns them.
func writeKeys(s *valkeytest.Server, n int) map[string]string {
	GinkgoHelper()
	r := newRouter(Default, s)
	defer r.Close()
	keys := map[string]string{}
	for i := range n {
		k, v := "key:"+strconv.Itoa(i), "value-"+strconv.Itoa(i)
		_, err := r.client(Default, k).Do(context.Background(), "SET", k, v)
		Expect(err).NotTo(HaveOccurred())
		keys[k] = v
	}
	return keys
}

// expectKeys reads every key from the server of its slot, as the cluster's slot map
// says now.
func expectKeys(g Gomega, s *valkeytest.Server, keys map[string]string) {
	r := newRouter(g, s)
	defer r.Close()
	for k, v := range keys {
		got, err := r.client(g, k).Do(context.Background(), "GET", k)
		g.Expect(err).NotTo(HaveOccurred(), "GET %s", k)
		g.Expect(got).To(Equal(v), "GET %s", k)
	}
}

// anyServer returns the server of a member of the cluster.
func (e *env) anyServer(name string) *valkeytest.Server {
	GinkgoHelper()
	for _, vn := range e.members(Default, name) {
		if s := e.kubelet.server(vn.Name); s != nil {
			return s
		}
	}
	Fail("no server runs for cluster " + name)
	return nil
}

// failovers returns the planned failovers the running controller counted per shard.
func (e *env) failovers(name string, shards int32) []int {
	return e.failoversOf(name, shards, kindPlanned)
}

// failoversOf is failovers of one kind (planned, forced).
func (e *env) failoversOf(name string, shards int32, kind string) []int {
	out := make([]int, shards)
	for sh := range out {
		out[sh] = int(testutil.ToFloat64(e.metrics.failovers.WithLabelValues(e.ns, name, strconv.Itoa(sh), kind)))
	}
	return out
}

// series returns the running controller's series of a cluster, as a scraper reads
// them: "name{label=value,...}" (labels sorted, namespace and cluster left out) -> value.
func (e *env) series(g Gomega, name string) map[string]float64 {
	mfs, err := e.registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			var ns, cluster string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "namespace":
					ns = l.GetValue()
				case "cluster":
					cluster = l.GetValue()
				default:
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
			}
			if ns != e.ns || cluster != name {
				continue
			}
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			out[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

// ownerWatch records, every 50 ms, which node serves given slots as the servers say: the
// server that claims the slot for itself, the highest config epoch winning while an old
// and a new primary both claim it. Each change of owner is a failover seen by clients.
type ownerWatch struct {
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	owner   map[int]string
	changes map[int]int
}

func (e *env) watchOwners(slots ...int) *ownerWatch {
	w := &ownerWatch{stop: make(chan struct{}), done: make(chan struct{}), owner: map[int]string{}, changes: map[int]int{}}
	go func() {
		defer close(w.done)
		for {
			w.sample(e.kubelet.servers(), slots)
			select {
			case <-w.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	DeferCleanup(w.Stop)
	return w
}

func (w *ownerWatch) sample(servers []*valkeytest.Server, slots []int) {
	type claim struct {
		id    string
		epoch uint64
	}
	best := map[int]claim{}
	for _, s := range servers {
		self, ok := selfOf(s)
		if !ok || !self.Primary {
			continue
		}
		for _, slot := range slots {
			if valkey.ContainsSlot(self.Slots, slot) && (best[slot].id == "" || self.ConfigEpoch > best[slot].epoch) {
				best[slot] = claim{self.ID, self.ConfigEpoch}
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for slot, c := range best {
		if prev, ok := w.owner[slot]; ok && prev != c.id {
			w.changes[slot]++
		}
		w.owner[slot] = c.id
	}
}

// selfOf returns a server's own line of CLUSTER NODES.
func selfOf(s *valkeytest.Server) (valkey.ClusterNode, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := valkey.Dial(ctx, s.Options())
	if err != nil {
		return valkey.ClusterNode{}, false
	}
	defer c.Close()
	nodes, err := c.ClusterNodes(ctx)
	if err != nil {
		return valkey.ClusterNode{}, false
	}
	for _, n := range nodes {
		if n.Myself {
			return n, true
		}
	}
	return valkey.ClusterNode{}, false
}

// Stop ends the watch and returns the owner changes per slot.
func (w *ownerWatch) Stop() map[int]int {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[int]int{}
	for k, v := range w.changes {
		out[k] = v
	}
	return out
}

// firstSlots returns the first slot of each shard of a fresh cluster of n shards.
func firstSlots(n int32) []int {
	out := make([]int, n)
	for sh, rs := range valkey.EvenRanges(int(n)) {
		out[sh] = rs[0].Start
	}
	return out
}

// openSlots lists the slots each server's own view has importing or migrating, for a
// failure message.
func (e *env) openSlots() string {
	var out []string
	for _, srv := range e.kubelet.servers() {
		// Not srv.Dial: a server stopped meanwhile is reported, not a failed spec.
		c, err := valkey.Dial(context.Background(), srv.Options())
		var nodes []valkey.ClusterNode
		if err == nil {
			nodes, err = c.ClusterNodes(context.Background())
			c.Close()
		}
		if err != nil {
			out = append(out, srv.Addr()+": "+err.Error())
			continue
		}
		for _, n := range nodes {
			if n.Myself && (len(n.Importing) > 0 || len(n.Migrating) > 0) {
				out = append(out, fmt.Sprintf("%s (primary %v): importing %v, migrating %v", srv.Addr(), n.Primary, n.Importing, n.Migrating))
			}
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}
