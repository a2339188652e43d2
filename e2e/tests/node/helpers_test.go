//go:build e2e

package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// Timeouts of this suite's waits.
const (
	podTimeout    = 120 * time.Second
	statusTimeout = 60 * time.Second
	ioTimeout     = 3 * time.Second
)

// cluster is the name of the (hand-made) cluster the features' nodes belong to.
const cluster = "demo"

// must fails the test now when err is not nil.
func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// scheme knows the Kubernetes types and the operator's API.
func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	must(t, clientgoscheme.AddToScheme(s), "scheme")
	must(t, v1alpha1.AddToScheme(s), "scheme")
	return s
}

// fixture is what every feature of the suite works with.
type fixture struct {
	k *framework.Cluster
	// c reads and writes with the admin's rights; nodes writes ValkeyNodes as the
	// cluster-controller would.
	c, nodes client.Client
	ns       string
	// passwords of the system users, as the acl-controller would generate them.
	passwords     map[string]string
	valkeyImage   string // image of Valkey 8.0
	exporterImage string // image of the exporter
}

type fixtureKey struct{}

// setUp is the first setup step of every feature: the system users' Secrets of the
// cluster (written by hand: without a ValkeyCluster the acl-controller writes none) and
// a node-controller for the feature's namespace.
func setUp(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
	k := framework.ClusterFrom(ctx, t)
	c, err := client.New(k.REST, client.Options{Scheme: scheme(t)})
	must(t, err, "client")
	f := &fixture{k: k, c: c, nodes: theOperator.Writer(t, k), ns: framework.Namespace(ctx), passwords: map[string]string{}}
	img, err := k.ValkeyImage(8, 0)
	must(t, err, "Valkey 8.0 image")
	f.valkeyImage = img.Ref
	exp, err := k.ComponentImage("exporter")
	must(t, err, "exporter image")
	f.exporterImage = exp.Ref
	for _, u := range []string{v1alpha1.UserOperator, v1alpha1.UserReplication, v1alpha1.UserExporter, v1alpha1.UserLifecycle} {
		f.passwords[u] = randomPassword()
	}
	for _, s := range f.secrets() {
		must(t, c.Create(ctx, s), "create Secret "+s.Name)
	}
	stop := theOperator.Start(ctx, t, k, f.ns)
	t.Cleanup(stop)
	return context.WithValue(ctx, fixtureKey{}, f)
}

// fixtureFrom returns the feature's fixture.
func fixtureFrom(ctx context.Context, t *testing.T) *fixture {
	f, ok := ctx.Value(fixtureKey{}).(*fixture)
	if !ok {
		t.Fatal("no fixture: the feature's setup must call setUp")
	}
	return f
}

func randomPassword() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// secrets are the two Secrets the acl-controller will write: the system users'
// passwords (with the primaryauth include) and the aclfile.
func (f *fixture) secrets() []*corev1.Secret {
	labels := v1alpha1.ClusterLabels(cluster)
	p := f.passwords
	acl := strings.Join([]string{
		"user default off",
		"user " + v1alpha1.UserOperator + " on >" + p[v1alpha1.UserOperator] + " ~* &* +@all",
		"user " + v1alpha1.UserReplication + " on >" + p[v1alpha1.UserReplication] + " +psync +replconf +ping +sync",
		"user " + v1alpha1.UserExporter + " on >" + p[v1alpha1.UserExporter] + " ~* +@read +@connection +info +config|get +cluster|info +cluster|nodes" +
			" +slowlog|get +slowlog|len +latency|latest +latency|histogram +client|list +client|info +memory|stats +select",
		"user " + v1alpha1.UserLifecycle + " on >" + p[v1alpha1.UserLifecycle] + " +info +cluster|failover +client|list",
	}, "\n") + "\n"
	return []*corev1.Secret{
		{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.SystemUsersSecretName(cluster), Namespace: f.ns, Labels: labels},
			StringData: map[string]string{
				v1alpha1.UserOperator: p[v1alpha1.UserOperator], v1alpha1.UserReplication: p[v1alpha1.UserReplication],
				v1alpha1.UserExporter:            p[v1alpha1.UserExporter],
				v1alpha1.UserLifecycle:           p[v1alpha1.UserLifecycle],
				v1alpha1.PrimaryAuthKey:          "primaryauth " + p[v1alpha1.UserReplication] + "\n",
				v1alpha1.ExporterPasswordFileKey: string(v1alpha1.ExporterPasswordFile(p[v1alpha1.UserExporter], framework.ValkeyPort)),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ACLSecretName(cluster), Namespace: f.ns, Labels: labels},
			StringData: map[string]string{v1alpha1.ACLFileKey: acl},
		},
	}
}

// newNode is a ValkeyNode as the cluster-controller would write it.
func (f *fixture) newNode(name string, workload v1alpha1.WorkloadType, mutate ...func(*v1alpha1.ValkeyNode)) *v1alpha1.ValkeyNode {
	vn := &v1alpha1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: v1alpha1.ShardLabels(cluster, 0)},
		Spec: v1alpha1.ValkeyNodeSpec{
			ClusterName: cluster, ShardIndex: 0, Revision: 1, WorkloadType: workload,
			Image:                 f.valkeyImage,
			Exporter:              v1alpha1.ExporterSpec{Image: f.exporterImage},
			Config:                map[string]string{"maxmemory": "64mb", "appendonly": "no"},
			ACLSecretName:         v1alpha1.ACLSecretName(cluster),
			SystemUsersSecretName: v1alpha1.SystemUsersSecretName(cluster),
		},
	}
	for _, m := range mutate {
		m(vn)
	}
	return vn
}

// create creates the node.
func (f *fixture) create(ctx context.Context, t *testing.T, vn *v1alpha1.ValkeyNode) {
	t.Helper()
	must(t, f.nodes.Create(ctx, vn), "create ValkeyNode "+vn.Name)
}

// update changes a node's spec as the cluster-controller does, with a patch (its rules
// have no update), retrying on conflicts.
func (f *fixture) update(ctx context.Context, t *testing.T, name string, mutate func(*v1alpha1.ValkeyNode)) {
	t.Helper()
	err := framework.Until(ctx, statusTimeout, "update ValkeyNode "+name, func(ctx context.Context) (bool, string, error) {
		var vn v1alpha1.ValkeyNode
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &vn); err != nil {
			return false, "", err
		}
		base := vn.DeepCopy()
		mutate(&vn)
		if err := f.nodes.Patch(ctx, &vn, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return false, "", err
		}
		return true, "", nil
	})
	must(t, err, "update ValkeyNode")
}

// waitCondition waits until a condition of the node has the status and reason (and its
// message contains every fragment) for the node's current generation.
func (f *fixture) waitCondition(ctx context.Context, t *testing.T, name, typ string, status metav1.ConditionStatus, reason string, fragments ...string) *v1alpha1.ValkeyNode {
	t.Helper()
	vn := &v1alpha1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}}
	err := framework.WaitFor(ctx, f.c, vn, statusTimeout+podTimeout, fmt.Sprintf("have %s %s/%s", typ, status, reason), func(vn *v1alpha1.ValkeyNode) (bool, string) {
		c := meta.FindStatusCondition(vn.Status.Conditions, typ)
		if c == nil {
			return false, "no condition " + typ
		}
		seen := fmt.Sprintf("%s %s/%s: %s (generation %d of %d)", typ, c.Status, c.Reason, c.Message, c.ObservedGeneration, vn.Generation)
		if c.Status != status || c.Reason != reason || c.ObservedGeneration != vn.Generation {
			return false, seen
		}
		for _, frag := range fragments {
			if !strings.Contains(c.Message, frag) {
				return false, seen
			}
		}
		return true, ""
	})
	must(t, err, "condition")
	return vn
}

// serverPod waits until the node reports its pod Ready and returns that pod.
func (f *fixture) serverPod(ctx context.Context, t *testing.T, name string) *corev1.Pod {
	t.Helper()
	vn := f.waitCondition(ctx, t, name, v1alpha1.ConditionPodReady, metav1.ConditionTrue, v1alpha1.ReasonPodRunning)
	var pod corev1.Pod
	must(t, f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: vn.Status.PodName}, &pod), "get pod "+vn.Status.PodName)
	if pod.Status.PodIP != vn.Status.PodIP {
		t.Fatalf("status.podIP %s, pod IP %s", vn.Status.PodIP, pod.Status.PodIP)
	}
	return &pod
}

// valkey connects to a pod's server as a system user.
func (f *fixture) valkey(t *testing.T, pod *corev1.Pod, user string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{framework.PodAddr(pod)}, Username: user, Password: f.passwords[user],
		ForceSingleClient: true, DisableCache: true, DisableRetry: true, AlwaysRESP2: true,
		Dialer: net.Dialer{Timeout: ioTimeout}, ConnWriteTimeout: ioTimeout,
	})
	must(t, err, "connect to "+pod.Name+" as "+user)
	t.Cleanup(c.Close)
	return c
}

// do runs one command and returns its reply as a string.
func do(ctx context.Context, c rueidis.Client, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	return c.Do(ctx, c.B().Arbitrary(args...).Build()).ToString()
}

// configGet reads one parameter of a server.
func configGet(ctx context.Context, t *testing.T, c rueidis.Client, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	m, err := c.Do(ctx, c.B().ConfigGet().Parameter(key).Build()).AsStrMap()
	must(t, err, "CONFIG GET "+key)
	return m[key]
}

// infoField reads one field of INFO.
func infoField(ctx context.Context, t *testing.T, c rueidis.Client, section, field string) string {
	t.Helper()
	s, err := do(ctx, c, "INFO", section)
	must(t, err, "INFO "+section)
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return ""
}

// claimAllSlots gives the single-node cluster every slot, as the cluster-controller
// would for a new shard, so the server accepts keys.
func claimAllSlots(ctx context.Context, t *testing.T, c rueidis.Client) {
	t.Helper()
	_, err := do(ctx, c, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
	must(t, err, "CLUSTER ADDSLOTSRANGE")
	err = framework.Until(ctx, statusTimeout, "the cluster state to be ok", func(ctx context.Context) (bool, string, error) {
		s, err := do(ctx, c, "CLUSTER", "INFO")
		if err != nil {
			return false, "", err
		}
		return strings.Contains(s, "cluster_state:ok"), s, nil
	})
	must(t, err, "cluster state")
}

// metrics reads the exporter's metrics of a pod.
func metrics(ctx context.Context, pod *corev1.Pod) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(9121)) + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), nil
}

// waitExporterUp waits until the exporter of a pod reports redis_up 1.
func waitExporterUp(ctx context.Context, t *testing.T, pod *corev1.Pod) {
	t.Helper()
	err := framework.Until(ctx, statusTimeout, "redis_up 1 from the exporter of "+pod.Name, func(ctx context.Context) (bool, string, error) {
		m, err := metrics(ctx, pod)
		if err != nil {
			return false, "", err
		}
		for _, line := range strings.Split(m, "\n") {
			if strings.HasPrefix(line, "redis_up ") {
				return strings.TrimSpace(strings.TrimPrefix(line, "redis_up ")) == "1", line, nil
			}
		}
		return false, "no redis_up metric", nil
	})
	must(t, err, "exporter")
}

// checkServer checks what every running node shows: the rendered config is the one
// the server runs, it answers an authenticated PING (and refuses an anonymous one),
// and its exporter reports it up.
func (f *fixture) checkServer(ctx context.Context, t *testing.T, name string, pod *corev1.Pod) {
	t.Helper()
	var cm corev1.ConfigMap
	must(t, f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &cm), "get ConfigMap")
	mounted, err := f.k.Exec(ctx, f.ns, pod.Name, "server", "cat", "/etc/valkey/valkey.conf")
	must(t, err, "read the mounted valkey.conf")
	if strings.TrimSpace(mounted) != strings.TrimSpace(cm.Data["valkey.conf"]) {
		t.Errorf("the pod's valkey.conf differs from the ConfigMap:\n%s\n---\n%s", mounted, cm.Data["valkey.conf"])
	}
	op := f.valkey(t, pod, v1alpha1.UserOperator)
	for key, want := range map[string]string{"dir": "/data", "cluster-enabled": "yes", "cluster-node-timeout": "5000", "cluster-announce-ip": pod.Status.PodIP} {
		if got := configGet(ctx, t, op, key); got != want {
			t.Errorf("CONFIG GET %s = %q, want %q", key, got, want)
		}
	}
	if got, err := do(ctx, f.valkey(t, pod, v1alpha1.UserExporter), "PING"); err != nil || got != "PONG" {
		t.Errorf("authenticated PING at %s = %q, %v", pod.Status.PodIP, got, err)
	}
	if err := framework.Ping(ctx, framework.PodAddr(pod), ioTimeout); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("an anonymous PING was not refused: %v", err)
	}
	waitExporterUp(ctx, t, pod)
}

// waitReplaced waits until the node runs a pod other than old, Ready, and returns it.
func (f *fixture) waitReplaced(ctx context.Context, t *testing.T, name string, old *corev1.Pod) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := framework.Until(ctx, podTimeout+statusTimeout, "a new Ready pod of "+name, func(ctx context.Context) (bool, string, error) {
		var vn v1alpha1.ValkeyNode
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &vn); err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(vn.Status.Conditions, v1alpha1.ConditionPodReady)
		if c == nil || c.Status != metav1.ConditionTrue || vn.Status.PodName == "" {
			return false, fmt.Sprintf("PodReady %v", c), nil
		}
		var p corev1.Pod
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: vn.Status.PodName}, &p); err != nil {
			return false, "", err
		}
		if p.UID == old.UID || p.Status.PodIP != vn.Status.PodIP {
			return false, "still the old pod: " + framework.DescribePod(&p), nil
		}
		pod = &p
		return true, "", nil
	})
	must(t, err, "replacement")
	return pod
}

// writeKey writes a key and saves the dataset to disk.
func writeKey(ctx context.Context, t *testing.T, c rueidis.Client, key, value string) {
	t.Helper()
	_, err := do(ctx, c, "SET", key, value)
	must(t, err, "SET "+key)
	_, err = do(ctx, c, "SAVE")
	must(t, err, "SAVE")
}

// readKey reads a key; a missing key is "".
func readKey(ctx context.Context, c rueidis.Client, key string) (string, error) {
	v, err := do(ctx, c, "GET", key)
	if rueidis.IsRedisNil(err) {
		return "", nil
	}
	return v, err
}

// holds checks for d that check keeps passing: for what must not happen (a restart,
// a recreated pod), where no event marks the moment it would have happened.
func holds(ctx context.Context, t *testing.T, d time.Duration, what string, check func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := check(ctx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}
