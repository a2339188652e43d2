package framework

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/checker"
	"github.com/valkey-operator/valkey-operator/localkube"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// TestUser is the ACL user the suites add to their clusters to write and read data.
const TestUser = "e2e"

// NewValkeyCluster returns a cluster in namespace ns with the suites' test user, for the
// caller to adjust before Create. Its NetworkPolicy admits the suites' clients on the host
// (HostClients) next to the namespace's pods, on the client and exporter ports.
func NewValkeyCluster(ns, name string, shards, replicas int32) *v1alpha1.ValkeyCluster {
	return &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.ValkeyClusterSpec{
			Shards:           shards,
			ReplicasPerShard: &replicas,
			Users:            []v1alpha1.UserSpec{{Name: TestUser, NoPass: true, Permissions: "+@all ~* &*"}},
			NetworkPolicy: &v1alpha1.NetworkPolicySpec{
				Clients: append([]networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}, HostClients()...),
				Metrics: HostClients(),
			},
		},
	}
}

// HostClients are the peers of the suites' and benchmarks' own clients: they run on the
// host, which reaches the pods from its address on the local Kubernetes' node bridge
// (the source address of everything the host sends to a pod). Clusters whose
// NetworkPolicy leaves them out refuse those clients where the policy is enforced.
func HostClients() []networkingv1.NetworkPolicyPeer {
	return []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: localkube.BridgeIP + "/32"}}}
}

// HostNetwork is the network the host's clients come from (the local Kubernetes' node
// bridge), for a NetworkPolicy that admits every client outside the pod network.
func HostNetwork() string { return localkube.BridgeNetwork }

// ClusterReady is a WaitFor condition: the cluster serves (Ready=True) and its current
// generation is fully applied (Progressing=False), as a user waiting for a change to
// finish would check.
func ClusterReady(vc *v1alpha1.ValkeyCluster) (bool, string) {
	c := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionReady)
	p := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionProgressing)
	if c == nil || p == nil {
		return false, "no Ready or Progressing condition yet"
	}
	done := c.Status == metav1.ConditionTrue && p.Status == metav1.ConditionFalse &&
		p.ObservedGeneration == vc.Generation && vc.Status.ObservedGeneration == vc.Generation
	return done, fmt.Sprintf("Ready=%s %s: %s; Progressing=%s %s: %s (state %s, %d ready shards)",
		c.Status, c.Reason, c.Message, p.Status, p.Reason, p.Message, vc.Status.State, vc.Status.ReadyShards)
}

// ConditionIs is a WaitFor condition on any condition type, status and (optional) reason.
func ConditionIs(typ string, status metav1.ConditionStatus, reason string) func(*v1alpha1.ValkeyCluster) (bool, string) {
	return func(vc *v1alpha1.ValkeyCluster) (bool, string) {
		c := meta.FindStatusCondition(vc.Status.Conditions, typ)
		if c == nil {
			return false, "no " + typ + " condition yet"
		}
		ok := c.Status == status && (reason == "" || c.Reason == reason)
		return ok, fmt.Sprintf("%s=%s %s: %s", typ, c.Status, c.Reason, c.Message)
	}
}

// WaitClusterReady waits until vc is Ready for its current generation and returns it.
func (k *Cluster) WaitClusterReady(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := WaitFor(ctx, k.Client, vc, timeout, "cluster "+vc.Name+" Ready", ClusterReady); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// Members lists the ValkeyNodes of a cluster that are not being deleted, by shard.
func (k *Cluster) Members(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster) []v1alpha1.ValkeyNode {
	t.Helper()
	out, err := k.listMembers(ctx, vc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// listMembers is Members for callers that handle the error (a wait retries it).
func (k *Cluster) listMembers(ctx context.Context, vc *v1alpha1.ValkeyCluster) ([]v1alpha1.ValkeyNode, error) {
	var list v1alpha1.ValkeyNodeList
	if err := k.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name}); err != nil {
		return nil, err
	}
	var out []v1alpha1.ValkeyNode
	for _, n := range list.Items {
		if n.DeletionTimestamp.IsZero() {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Spec.ShardIndex != out[j].Spec.ShardIndex {
			return out[i].Spec.ShardIndex < out[j].Spec.ShardIndex
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Pods lists the Valkey pods of a cluster, leaving out pods being deleted (a retired
// member's pod may take its grace period to go).
func (k *Cluster) Pods(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := k.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name, v1alpha1.LabelName: v1alpha1.AppName}); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// PodUIDs maps each pod name of the cluster to its UID (to prove no pod was restarted).
func (k *Cluster) PodUIDs(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range k.Pods(ctx, t, vc) {
		out[p.Name] = string(p.UID)
	}
	return out
}

// MemberAddrs returns "podIP:6379" of every member with an IP.
func (k *Cluster) MemberAddrs(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster) []string {
	t.Helper()
	var out []string
	for _, m := range k.Members(ctx, t, vc) {
		if m.Status.PodIP != "" {
			out = append(out, m.Status.PodIP+":6379")
		}
	}
	return out
}

// Admin returns a connection to one member as the operator's own user (read from the
// system users Secret), to look at what the servers report.
func (k *Cluster) Admin(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, addr string) *valkey.Client {
	t.Helper()
	var s corev1.Secret
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: v1alpha1.SystemUsersSecretName(vc.Name)}, &s); err != nil {
		t.Fatal(err)
	}
	c, err := valkey.Dial(ctx, valkey.Options{Addr: addr, Username: v1alpha1.UserOperator, Password: string(s.Data[v1alpha1.UserOperator])})
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

// StartChecker starts the write-checker on a cluster as the test user.
func (k *Cluster) StartChecker(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster) *checker.Checker {
	t.Helper()
	return k.StartCheckerWith(ctx, t, vc, checker.Options{})
}

// Events returns the events of the namespace whose reason is one of reasons.
func (k *Cluster) Events(ctx context.Context, t testing.TB, ns string, reasons ...string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := k.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		for _, r := range reasons {
			if e.Reason == r {
				out = append(out, e)
			}
		}
	}
	return out
}

// DescribeEvents prints events one per line.
func DescribeEvents(evs []eventsv1.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %s: %s\n", e.Type, e.Reason, e.Note)
	}
	return b.String()
}

// AnyAdmin connects as the operator's user to the first member that answers. It dials
// every member at once: a member whose pod is gone leaves an address that answers
// nothing, and a dial there waits for its timeout, which would otherwise delay every
// poll that lists that member before the others (and what the poll measures).
func (k *Cluster) AnyAdmin(ctx context.Context, vc *v1alpha1.ValkeyCluster) (*valkey.Client, error) {
	var s corev1.Secret
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: v1alpha1.SystemUsersSecretName(vc.Name)}, &s); err != nil {
		return nil, err
	}
	var list v1alpha1.ValkeyNodeList
	if err := k.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name}); err != nil {
		return nil, err
	}
	type dialed struct {
		c   *valkey.Client
		err error
	}
	results := make(chan dialed, len(list.Items))
	dials := 0
	for _, m := range list.Items {
		if m.Status.PodIP == "" {
			continue
		}
		dials++
		go func() {
			c, err := valkey.Dial(ctx, valkey.Options{Addr: m.Status.PodIP + ":6379", Username: v1alpha1.UserOperator,
				Password: string(s.Data[v1alpha1.UserOperator]), DialTimeout: 500 * time.Millisecond})
			results <- dialed{c, err}
		}()
	}
	var errs []string
	for i := range dials {
		r := <-results
		if r.err != nil {
			errs = append(errs, r.err.Error())
			continue
		}
		// The other dials are closed as they end, without holding the caller.
		go func(left int) {
			for range left {
				if r := <-results; r.err == nil {
					r.c.Close()
				}
			}
		}(dials - i - 1)
		return r.c, nil
	}
	return nil, fmt.Errorf("no member answers: %s", strings.Join(errs, "; "))
}

// UpdateSpec changes the cluster's spec as a user would (kubectl edit), retrying on
// conflicts with the controllers' status writes; vc is left at the updated object.
func (k *Cluster) UpdateSpec(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, mutate func(*v1alpha1.ValkeyClusterSpec)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k.Client.Get(ctx, client.ObjectKeyFromObject(vc), vc); err != nil {
			return err
		}
		mutate(&vc.Spec)
		return k.Client.Update(ctx, vc)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ScaleOperator sets the replicas of one operator component's Deployment
// ("cluster-controller", ...) and waits until exactly that many of its pods run and are
// ready (none left for 0).
func (k *Cluster) ScaleOperator(ctx context.Context, t testing.TB, component string, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: OperatorNamespace, Name: OperatorDeployment(component)}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k.Client.Get(ctx, key, d); err != nil {
			return err
		}
		d.Spec.Replicas = ptr.To(replicas)
		return k.Client.Update(ctx, d)
	})
	if err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	err = WaitForList(ctx, k.Client, &pods, 2*time.Minute, fmt.Sprintf("%d %s pods running", replicas, component),
		func(l *corev1.PodList) (bool, string) {
			ready := ReadyPods(l)
			return len(l.Items) == int(replicas) && len(ready) == int(replicas), DescribePods(l)
		}, client.InNamespace(OperatorNamespace), client.MatchingLabels{"app.kubernetes.io/component": component})
	if err != nil {
		t.Fatal(err)
	}
}

// WaitMembersCondition waits until the cluster has members members and condition typ is
// True on every one of them.
func (k *Cluster) WaitMembersCondition(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, typ string, members int, timeout time.Duration) {
	t.Helper()
	var nodes v1alpha1.ValkeyNodeList
	err := WaitForList(ctx, k.Client, &nodes, timeout, typ+"=True on every member",
		func(l *v1alpha1.ValkeyNodeList) (bool, string) {
			var behind []string
			for _, n := range l.Items {
				c := meta.FindStatusCondition(n.Status.Conditions, typ)
				if c == nil || c.Status != metav1.ConditionTrue {
					behind = append(behind, fmt.Sprintf("%s: %v", n.Name, c))
				}
			}
			return len(l.Items) == members && len(behind) == 0, fmt.Sprintf("%d members, behind: %v", len(l.Items), behind)
		}, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name})
	if err != nil {
		t.Fatal(err)
	}
}

// StopChecker stops the write-checker, reads every acknowledged write back and logs the
// report (labelled with what, when set). With mustKeepAll a lost acknowledged write
// fails the test; an unplanned loss of a primary may lose unreplicated writes, which the
// caller then only reports.
func StopChecker(ctx context.Context, t testing.TB, ch *checker.Checker, what string, mustKeepAll bool) checker.Report {
	t.Helper()
	r, err := ch.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if what != "" {
		t.Logf("write-checker (%s): %s", what, r)
	} else {
		t.Logf("write-checker: %s", r)
	}
	if mustKeepAll && r.Lost > 0 {
		t.Errorf("%d acknowledged writes lost: %v", r.Lost, r.LostKeys)
		for _, s := range lostSpans(r.LostWrites) {
			t.Logf("  %s", s)
		}
	}
	return r
}

// lostSpans describes the lost writes of each slot as the time span they were
// acknowledged in ("slot 10923: 161 acknowledged from 00:28:00.113 to 00:28:01.020"),
// to match them with the faults a test injected.
func lostSpans(ws []checker.LostWrite) []string {
	type span struct {
		n           int
		first, last time.Time
	}
	spans := map[int]*span{}
	var slots []int
	for _, w := range ws {
		s, ok := spans[w.Slot]
		if !ok {
			s = &span{first: w.AckedAt, last: w.AckedAt}
			spans[w.Slot] = s
			slots = append(slots, w.Slot)
		}
		s.n++
		if w.AckedAt.Before(s.first) {
			s.first = w.AckedAt
		}
		if w.AckedAt.After(s.last) {
			s.last = w.AckedAt
		}
	}
	slices.Sort(slots)
	out := make([]string, 0, len(slots))
	for _, slot := range slots {
		s := spans[slot]
		out = append(out, fmt.Sprintf("slot %d: %d acknowledged from %s to %s", slot, s.n,
			s.first.Format("15:04:05.000"), s.last.Format("15:04:05.000")))
	}
	return out
}
