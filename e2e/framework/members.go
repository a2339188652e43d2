package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// Member returns the member of shard sh with the given role, as the cluster's status
// names it (the cluster-controller's view, the one Ready speaks for). The member's own
// ValkeyNode status is the node-controller's view, written after its next read of the
// server: right after Ready, a member just made a replica may still show the role it
// started with. Member waits, up to memberAgreeTimeout, for the two views to agree, so a
// test never takes a replica for its primary.
func (k *Cluster) Member(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, sh int32, role v1alpha1.Role) v1alpha1.ValkeyNode {
	t.Helper()
	start := time.Now()
	var got v1alpha1.ValkeyNode
	var waited string
	err := Until(ctx, memberAgreeTimeout, fmt.Sprintf("the %s of shard %d", role, sh), func(ctx context.Context) (bool, string, error) {
		m, why, err := k.member(ctx, vc, sh, role)
		if err != nil || why != "" {
			waited = why
			return false, why, err
		}
		got = m
		return true, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if waited != "" {
		t.Logf("the %s of shard %d is %s after %s (before: %s)", role, sh, got.Name, time.Since(start).Round(10*time.Millisecond), waited)
	}
	return got
}

// memberAgreeTimeout bounds Member's wait: the node-controller reads a server's role
// again when the cluster-controller's next pass after a failover changes the member's
// Synced condition (a pass at rest runs every 30 s).
const memberAgreeTimeout = 30 * time.Second

// member is one try of Member: the member, or why none is found yet.
func (k *Cluster) member(ctx context.Context, vc *v1alpha1.ValkeyCluster, sh int32, role v1alpha1.Role) (v1alpha1.ValkeyNode, string, error) {
	now := &v1alpha1.ValkeyCluster{}
	if err := k.Client.Get(ctx, client.ObjectKeyFromObject(vc), now); err != nil {
		return v1alpha1.ValkeyNode{}, "", err
	}
	named := "" // by the cluster's status; empty when it names none
	for _, s := range now.Status.Shards {
		switch {
		case s.Index != sh:
		case role == v1alpha1.RolePrimary:
			named = s.Primary
		case role == v1alpha1.RoleReplica && len(s.Replicas) > 0:
			named = s.Replicas[0]
		}
	}
	members, err := k.listMembers(ctx, vc)
	if err != nil {
		return v1alpha1.ValkeyNode{}, "", err
	}
	var found []v1alpha1.ValkeyNode
	for _, m := range members {
		if m.Spec.ShardIndex == sh && m.Status.Role == role && m.Status.NodeID != "" {
			found = append(found, m)
		}
	}
	if named != "" {
		for _, m := range found {
			if m.Name == named {
				return m, "", nil
			}
		}
		return v1alpha1.ValkeyNode{}, fmt.Sprintf("the cluster's status names %s, whose ValkeyNode does not show that role yet (%d %s ValkeyNodes in the shard)", named, len(found), role), nil
	}
	switch {
	case len(found) == 0:
		return v1alpha1.ValkeyNode{}, "no ValkeyNode shows that role", nil
	case role == v1alpha1.RolePrimary && len(found) > 1:
		return v1alpha1.ValkeyNode{}, fmt.Sprintf("%d ValkeyNodes show it", len(found)), nil
	}
	return found[0], "", nil
}

// PodOf returns the pod of the member called name.
func (k *Cluster) PodOf(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, name string) *corev1.Pod {
	t.Helper()
	for _, p := range k.Pods(ctx, t, vc) {
		if p.Labels[v1alpha1.LabelNode] == name {
			return &p
		}
	}
	t.Fatalf("no pod for member %s", name)
	return nil
}

// ContainerRestarts is the restart count of one container of a pod.
func ContainerRestarts(p *corev1.Pod, container string) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.RestartCount
		}
	}
	return 0
}

// OwnerOf returns the node ID that serves slot, as the first member that answers says.
func (k *Cluster) OwnerOf(ctx context.Context, vc *v1alpha1.ValkeyCluster, slot int) (string, error) {
	c, err := k.AnyAdmin(ctx, vc)
	if err != nil {
		return "", err
	}
	defer c.Close()
	nodes, err := c.ClusterNodes(ctx)
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		if n.Primary && !n.Fail && valkey.ContainsSlot(n.Slots, slot) {
			return n.ID, nil
		}
	}
	return "", nil
}

// WaitOwnerChange waits until slot is served by another node than from and returns that
// node; on a timeout it logs how the members see from and the cluster's conditions.
func (k *Cluster) WaitOwnerChange(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, slot int, from string, timeout time.Duration) string {
	t.Helper()
	var owner string
	err := Until(ctx, timeout, fmt.Sprintf("slot %d served by another node than %.8s", slot, from), func(ctx context.Context) (bool, string, error) {
		id, err := k.OwnerOf(ctx, vc, slot)
		owner = id
		return err == nil && id != "" && id != from, "owner " + id, err
	})
	if err != nil {
		t.Logf("the members' view of %.8s: %s", from, k.ViewOf(ctx, t, vc, from))
		if k.Client.Get(ctx, client.ObjectKeyFromObject(vc), vc) == nil {
			for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionDegraded, v1alpha1.ConditionProgressing} {
				LogCondition(t, vc, typ)
			}
		}
		t.Fatal(err)
	}
	return owner
}

// ViewOf says how each member's server sees node id (its flags, address and slots).
func (k *Cluster) ViewOf(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, id string) string {
	t.Helper()
	var out []string
	for _, addr := range k.MemberAddrs(ctx, t, vc) {
		nodes, err := k.clusterNodes(ctx, vc, addr)
		if err != nil {
			out = append(out, addr+": "+err.Error())
			continue
		}
		line := "unknown"
		for _, n := range nodes {
			if n.ID == id {
				line = fmt.Sprintf("flags %s addr %q slots %s", strings.Join(n.Flags, ","), n.Addr(), valkey.FormatRanges(n.Slots))
			}
		}
		out = append(out, addr+": "+line)
	}
	return strings.Join(out, "; ")
}

// ForgottenEverywhere waits until no member's server knows node id.
func (k *Cluster) ForgottenEverywhere(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, id string) {
	t.Helper()
	err := Until(ctx, time.Minute, fmt.Sprintf("node %.8s forgotten by every member", id), func(ctx context.Context) (bool, string, error) {
		addrs := k.MemberAddrs(ctx, t, vc)
		for _, addr := range addrs {
			nodes, err := k.clusterNodes(ctx, vc, addr)
			if err != nil {
				return false, "", err
			}
			for _, n := range nodes {
				if n.ID == id {
					return false, addr + " still knows it", nil
				}
			}
		}
		return len(addrs) > 0, fmt.Sprintf("%d members asked", len(addrs)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// WaitNotReadyThenReady waits (briefly) for the cluster to notice a loss, then for it to
// be Ready again, and returns the time since start.
func (k *Cluster) WaitNotReadyThenReady(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, start time.Time, timeout time.Duration) time.Duration {
	t.Helper()
	if err := WaitFor(ctx, k.Client, vc, 30*time.Second, "notice the loss",
		ConditionIs(v1alpha1.ConditionReady, metav1.ConditionFalse, "")); err != nil {
		t.Logf("Ready never turned False: %v", err)
	} else {
		LogCondition(t, vc, v1alpha1.ConditionDegraded)
	}
	k.WaitClusterReady(ctx, t, vc, timeout)
	return time.Since(start)
}

// LogCondition logs one condition of the cluster as a user would read it.
func LogCondition(t testing.TB, vc *v1alpha1.ValkeyCluster, typ string) {
	t.Helper()
	if c := meta.FindStatusCondition(vc.Status.Conditions, typ); c != nil {
		t.Logf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
}

// AdminClient connects to one member as the operator's user, or says why it cannot; the
// caller closes the client.
func (k *Cluster) AdminClient(ctx context.Context, vc *v1alpha1.ValkeyCluster, addr string) (*valkey.Client, error) {
	var s corev1.Secret
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: v1alpha1.SystemUsersSecretName(vc.Name)}, &s); err != nil {
		return nil, err
	}
	return valkey.Dial(ctx, valkey.Options{Addr: addr, Username: v1alpha1.UserOperator,
		Password: string(s.Data[v1alpha1.UserOperator]), DialTimeout: time.Second, CommandTimeout: 2 * time.Second})
}

// clusterNodes asks one member for CLUSTER NODES.
func (k *Cluster) clusterNodes(ctx context.Context, vc *v1alpha1.ValkeyCluster, addr string) ([]valkey.ClusterNode, error) {
	c, err := k.AdminClient(ctx, vc, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ClusterNodes(ctx)
}

// promotionSlack is how long after ServerDown turned True the operator may take to
// promote before Valkey's own election counts as having come first rather than as the
// operator failing to act on its proof (condition times have a one-second resolution).
const promotionSlack = 2 * time.Second

// CheckPromotion checks who promoted the replica of a killed primary (member, its
// shard served by a new owner at promotedAt): the operator, on its proof of the death
// (one Takeover event), or, when the proof came too late for that (the kubelet's or the
// node-controller's report slowed by a busy machine), Valkey's own election. It fails
// when the operator had the proof promotionSlack before the promotion and did not act,
// or promoted more than once; it logs which way it went.
func (k *Cluster) CheckPromotion(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster, member string, promotedAt time.Time) {
	t.Helper()
	evs := k.Events(ctx, t, vc.Namespace, "Takeover")
	switch {
	case len(evs) == 1:
		t.Logf("event: %s %s: %s", evs[0].Type, evs[0].Reason, evs[0].Note)
		return
	case len(evs) > 1:
		t.Errorf("%d Takeover events, want 1:\n%s", len(evs), DescribeEvents(evs))
		return
	}
	vn := &v1alpha1.ValkeyNode{}
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: member}, vn); err != nil {
		if apierrors.IsNotFound(err) {
			t.Logf("no Takeover event; member %s was replaced: Valkey's election promoted its replica", member)
			return
		}
		t.Fatal(err)
	}
	down := meta.FindStatusCondition(vn.Status.Conditions, v1alpha1.ConditionServerDown)
	if down == nil || down.Status != metav1.ConditionTrue || down.LastTransitionTime.Add(promotionSlack).After(promotedAt) {
		t.Logf("no Takeover event: Valkey's own election promoted the replica before the operator had its proof (ServerDown %v)", down)
		return
	}
	t.Errorf("no Takeover event although %s reported ServerDown at %s, %s before its replica was promoted (by Valkey's election): %s",
		member, down.LastTransitionTime.Format(time.TimeOnly), promotedAt.Sub(down.LastTransitionTime.Time).Round(100*time.Millisecond), down.Message)
}
