//go:build bench

package chaos

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/e2e/perf"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// faultKind is one kind of fault the run injects.
type faultKind struct {
	name string
	// role is the role of the member whose pod is deleted; "" restarts a component.
	role  string
	grace *int64
}

var zero = int64(0)

var faultKinds = []faultKind{
	{name: "kill primary (grace 0)", role: valkey.RolePrimary, grace: &zero},
	{name: "delete primary (graceful)", role: valkey.RolePrimary},
	{name: "kill replica (grace 0)", role: valkey.RoleReplica, grace: &zero},
	{name: "delete replica (graceful)", role: valkey.RoleReplica},
	{name: "restart operator component"},
}

// inject injects up to cfg.maxFaults faults at random times spread over the window.
func (s *chaosRun) inject(ctx context.Context, t *testing.T) {
	mean := cfg.duration / time.Duration(cfg.maxFaults+1)
	for n := 0; n < cfg.maxFaults; {
		if sleep(ctx, s.between(mean/2, mean*3/2)) != nil {
			return
		}
		kind := faultKinds[s.pick(len(faultKinds))]
		f, ok := s.injectOne(ctx, kind)
		if !ok {
			s.mu.Lock()
			s.skipped++
			s.mu.Unlock()
			t.Logf("chaos: +%s skipped %s: %s", s.since(time.Now()), kind.name, f.Note)
			continue
		}
		s.mu.Lock()
		s.faults = append(s.faults, f)
		s.mu.Unlock()
		n++
		t.Logf("chaos: +%s fault %d: %s", s.since(f.At), n, describe(f))
	}
}

// pick returns a random index below n.
func (s *chaosRun) pick(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.IntN(n)
}

// injectOne injects one fault of a kind; ok is false (with the reason in Note) when no
// target fits.
func (s *chaosRun) injectOne(ctx context.Context, kind faultKind) (perf.Fault, bool) {
	if kind.role == "" {
		return s.restartComponent(ctx, kind)
	}
	targets, err := s.targets(ctx)
	if err != nil {
		return perf.Fault{Note: err.Error()}, false
	}
	var fit []target
	for _, tg := range targets {
		if tg.role == kind.role && tg.redundant {
			fit = append(fit, tg)
		}
	}
	if len(fit) == 0 {
		return perf.Fault{Note: "no " + kind.role + " whose shard has full redundancy"}, false
	}
	tg := fit[s.pick(len(fit))]
	f := perf.Fault{At: time.Now(), Kind: kind.name, Target: fmt.Sprintf("%s (shard %d)", tg.pod.Name, tg.shard),
		MayLoseWrites: kind.role == valkey.RolePrimary, Slots: tg.slots}
	var opts []client.DeleteOption
	if kind.grace != nil {
		opts = append(opts, client.GracePeriodSeconds(*kind.grace))
	}
	if err := s.k.Client.Delete(ctx, tg.pod, opts...); err != nil {
		f.Note = "delete failed: " + err.Error()
	}
	return f, true
}

// restartComponent deletes the pods of a random operator component.
func (s *chaosRun) restartComponent(ctx context.Context, kind faultKind) (perf.Fault, bool) {
	var pods corev1.PodList
	if err := s.k.Client.List(ctx, &pods, client.InNamespace(framework.OperatorNamespace)); err != nil {
		return perf.Fault{Note: err.Error()}, false
	}
	byComponent := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if c := p.Labels[perf.ComponentLabel]; c != "" && p.DeletionTimestamp == nil {
			byComponent[c] = append(byComponent[c], p)
		}
	}
	comps := perf.SortedKeys(byComponent)
	if len(comps) == 0 {
		return perf.Fault{Note: "no operator pod"}, false
	}
	comp := comps[s.pick(len(comps))]
	f := perf.Fault{At: time.Now(), Kind: kind.name, Target: comp}
	for _, p := range byComponent[comp] {
		if err := s.k.Client.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			f.Note = "delete failed: " + err.Error()
		}
	}
	return f, true
}

// target is a member as its server reports it.
type target struct {
	pod   *corev1.Pod
	shard int32
	role  string
	slots []valkey.SlotRange
	// redundant: for a primary, a replica follows it with its link up; for a replica,
	// its link to its primary is up.
	redundant bool
}

// targets asks every member's server for its role, and finds which primaries have a
// replica in sync, so that a kill never takes the last copy of a shard.
func (s *chaosRun) targets(ctx context.Context) ([]target, error) {
	vc := &v1alpha1.ValkeyCluster{}
	if err := s.k.Client.Get(ctx, s.key, vc); err != nil {
		return nil, err
	}
	pods, members, password, err := s.membersAndPods(ctx, vc)
	if err != nil {
		return nil, err
	}
	out := make([]target, len(members))
	replOf := make([]valkey.Replication, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		out[i] = target{pod: pods[m.Name], shard: m.Spec.ShardIndex}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].role, out[i].slots, replOf[i] = inspect(ctx, m.Status.PodIP, password)
		}()
	}
	wg.Wait()
	synced := map[string]bool{} // primary IP -> has a replica with its link up
	for i := range out {
		if out[i].role == valkey.RoleReplica && replOf[i].LinkUp {
			synced[replOf[i].PrimaryHost] = true
			out[i].redundant = true
		}
	}
	var fit []target
	for i, m := range members {
		if out[i].role == valkey.RolePrimary {
			out[i].redundant = len(out[i].slots) > 0 && synced[m.Status.PodIP]
		}
		if out[i].pod != nil && framework.PodIsReady(out[i].pod) {
			fit = append(fit, out[i])
		}
	}
	return fit, nil
}

// membersAndPods returns the cluster's live members with an address, their pods by
// member name, and the operator user's password.
func (s *chaosRun) membersAndPods(ctx context.Context, vc *v1alpha1.ValkeyCluster) (map[string]*corev1.Pod, []v1alpha1.ValkeyNode, string, error) {
	var nodes v1alpha1.ValkeyNodeList
	if err := s.k.Client.List(ctx, &nodes, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name}); err != nil {
		return nil, nil, "", err
	}
	var podList corev1.PodList
	if err := s.k.Client.List(ctx, &podList, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name, v1alpha1.LabelName: v1alpha1.AppName}); err != nil {
		return nil, nil, "", err
	}
	var secret corev1.Secret
	if err := s.k.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: v1alpha1.SystemUsersSecretName(vc.Name)}, &secret); err != nil {
		return nil, nil, "", err
	}
	pods := map[string]*corev1.Pod{}
	for i := range podList.Items {
		p := &podList.Items[i]
		if p.Status.PodIP != "" {
			pods[p.Labels[v1alpha1.LabelNode]] = p
		}
	}
	var members []v1alpha1.ValkeyNode
	for _, m := range nodes.Items {
		if m.DeletionTimestamp.IsZero() && m.Status.PodIP != "" && pods[m.Name] != nil && pods[m.Name].Status.PodIP == m.Status.PodIP {
			members = append(members, m)
		}
	}
	return pods, members, string(secret.Data[v1alpha1.UserOperator]), nil
}

// inspect returns a server's role, the slots it serves and its replication state
// (zero values when it does not answer).
func inspect(ctx context.Context, ip, password string) (string, []valkey.SlotRange, valkey.Replication) {
	c, err := valkey.Dial(ctx, valkey.Options{Addr: ip + ":6379", Username: v1alpha1.UserOperator, Password: password,
		DialTimeout: time.Second, CommandTimeout: 2 * time.Second})
	if err != nil {
		return "", nil, valkey.Replication{}
	}
	defer c.Close()
	repl, err := c.ReplicationInfo(ctx)
	if err != nil {
		return "", nil, valkey.Replication{}
	}
	nodes, err := c.ClusterNodes(ctx)
	if err != nil {
		return "", nil, valkey.Replication{}
	}
	for _, n := range nodes {
		if n.Myself {
			return repl.Role, n.Slots, repl
		}
	}
	return repl.Role, nil, repl
}
