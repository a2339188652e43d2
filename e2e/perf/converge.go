package perf

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// Converged reports whether a ValkeyCluster matches its spec as its user would check
// it: Ready for its current generation (framework.ClusterReady); exactly the members of
// the spec, each with a Ready pod that runs the spec's image and none terminating; and
// every server agreeing: cluster_state ok, all 16384 slots assigned, no slot importing
// or migrating, no node that is not a member (no stranger), no node failing, every
// replica's link up, and `shards` primaries with slots with `replicasPerShard` replicas
// each. detail says what is not so yet. vc is read again from the API.
func Converged(ctx context.Context, c client.Client, vc *v1alpha1.ValkeyCluster) (bool, string, error) {
	return converged(ctx, c, vc, framework.ClusterReady)
}

// Redundant is Converged, except that the operator may still be about to move primaries
// back to spread them (Progressing True with reason RestoringPlacement): every member
// runs and every replica is in sync, which is full redundancy; where the primaries run
// is PrimariesSpread's question (Spread).
func Redundant(ctx context.Context, c client.Client, vc *v1alpha1.ValkeyCluster) (bool, string, error) {
	return converged(ctx, c, vc, func(vc *v1alpha1.ValkeyCluster) (bool, string) {
		ok, detail := framework.ClusterReady(vc)
		if p := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionProgressing); !ok && p != nil &&
			p.Reason == v1alpha1.ReasonRestoringPlacement && meta.IsStatusConditionTrue(vc.Status.Conditions, v1alpha1.ConditionReady) {
			return true, detail
		}
		return ok, detail
	})
}

// Spread reports whether the cluster has converged (Converged) and its PrimariesSpread
// condition is True: failback has nothing left to move.
func Spread(ctx context.Context, c client.Client, vc *v1alpha1.ValkeyCluster) (bool, string, error) {
	ok, detail, err := Converged(ctx, c, vc)
	if !ok || err != nil {
		return ok, detail, err
	}
	if s := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionPrimariesSpread); s == nil || s.Status != metav1.ConditionTrue {
		return false, fmt.Sprintf("PrimariesSpread: %v", s), nil
	}
	return true, "", nil
}

func converged(ctx context.Context, c client.Client, vc *v1alpha1.ValkeyCluster, ready func(*v1alpha1.ValkeyCluster) (bool, string)) (bool, string, error) {
	if err := c.Get(ctx, client.ObjectKeyFromObject(vc), vc); err != nil {
		return false, "", err
	}
	if ok, detail := ready(vc); !ok {
		return false, detail, nil
	}
	members, err := liveMembers(ctx, c, vc)
	if err != nil {
		return false, "", err
	}
	shards, replicas := int(vc.Spec.ShardCount()), int(vc.Spec.ReplicaCount())
	if want := shards * (1 + replicas); len(members) != want {
		return false, fmt.Sprintf("%d members, want %d", len(members), want), nil
	}
	if problem, err := podsMatch(ctx, c, vc, members); err != nil || problem != "" {
		return false, problem, err
	}
	password, err := operatorPassword(ctx, c, vc)
	if err != nil {
		return false, "", err
	}
	problems := serversAgree(ctx, members, password, shards, replicas)
	if len(problems) > 0 {
		return false, strings.Join(problems[:min(len(problems), 4)], "; "), nil
	}
	return true, "", nil
}

// liveMembers lists the ValkeyNodes of a cluster that are not being deleted.
func liveMembers(ctx context.Context, c client.Client, vc *v1alpha1.ValkeyCluster) ([]v1alpha1.ValkeyNode, error) {
	var list v1alpha1.ValkeyNodeList
	if err := c.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name}); err != nil {
		return nil, err
	}
	var out []v1alpha1.ValkeyNode
	for _, n := range list.Items {
		if n.DeletionTimestamp.IsZero() {
			out = append(out, n)
		}
	}
	return out, nil
}

// podsMatch checks one Ready pod per member, at the member's address, running the
// spec's image, and no other pod of the cluster.
func podsMatch(ctx context.Context, c client.Client, vc *v1alpha1.ValkeyCluster, members []v1alpha1.ValkeyNode) (string, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(vc.Namespace),
		client.MatchingLabels{v1alpha1.LabelInstance: vc.Name, v1alpha1.LabelName: v1alpha1.AppName}); err != nil {
		return "", err
	}
	if len(pods.Items) != len(members) {
		return fmt.Sprintf("%d pods for %d members", len(pods.Items), len(members)), nil
	}
	byMember := map[string]*corev1.Pod{}
	for i := range pods.Items {
		byMember[pods.Items[i].Labels[v1alpha1.LabelNode]] = &pods.Items[i]
	}
	image := vc.Spec.ImageOrDefault()
	for _, m := range members {
		p := byMember[m.Name]
		switch {
		case p == nil:
			return "member " + m.Name + " has no pod", nil
		case !framework.PodIsReady(p):
			return "pod not ready: " + framework.DescribePod(p), nil
		case p.Status.PodIP != m.Status.PodIP || m.Status.NodeID == "":
			return fmt.Sprintf("member %s status (ip %s, id %q) does not match its pod (ip %s)", m.Name, m.Status.PodIP, m.Status.NodeID, p.Status.PodIP), nil
		case !runsImage(p, image):
			return fmt.Sprintf("pod %s does not run %s", p.Name, image), nil
		}
	}
	return "", nil
}

// runsImage reports whether the pod's server container is specified with image.
func runsImage(p *corev1.Pod, image string) bool {
	for _, ctr := range p.Spec.Containers {
		if ctr.Name == "server" {
			return ctr.Image == image || strings.TrimPrefix(ctr.Image, "docker.io/") == strings.TrimPrefix(image, "docker.io/")
		}
	}
	return false
}

// operatorPassword reads the operator user's password from the system users Secret.
func operatorPassword(ctx context.Context, c client.Client, vc *v1alpha1.ValkeyCluster) (string, error) {
	var s corev1.Secret
	key := client.ObjectKey{Namespace: vc.Namespace, Name: v1alpha1.SystemUsersSecretName(vc.Name)}
	if err := c.Get(ctx, key, &s); err != nil {
		return "", fmt.Errorf("read the system users: %w", err)
	}
	return string(s.Data[v1alpha1.UserOperator]), nil
}

// serverView is what one member's server reports.
type serverView struct {
	member string
	info   map[string]string
	nodes  []valkey.ClusterNode
	repl   valkey.Replication
	err    error
}

// serversAgree asks every member's server in parallel and lists what does not match.
func serversAgree(ctx context.Context, members []v1alpha1.ValkeyNode, password string, shards, replicas int) []string {
	views := make([]serverView, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			views[i] = inspectServer(ctx, m, password)
		}()
	}
	wg.Wait()
	ids := map[string]bool{}
	for _, m := range members {
		ids[m.Status.NodeID] = true
	}
	var problems []string
	for _, v := range views {
		problems = append(problems, v.problems(ids)...)
	}
	if len(problems) == 0 {
		problems = shardProblems(views[0].nodes, shards, replicas)
	}
	return problems
}

func inspectServer(ctx context.Context, m v1alpha1.ValkeyNode, password string) serverView {
	v := serverView{member: m.Name}
	c, err := valkey.Dial(ctx, valkey.Options{Addr: m.Status.PodIP + ":6379", Username: v1alpha1.UserOperator, Password: password,
		DialTimeout: time.Second, CommandTimeout: 2 * time.Second})
	if err != nil {
		v.err = err
		return v
	}
	defer c.Close()
	if v.info, v.err = c.ClusterInfo(ctx); v.err != nil {
		return v
	}
	if v.nodes, v.err = c.ClusterNodes(ctx); v.err != nil {
		return v
	}
	v.repl, v.err = c.ReplicationInfo(ctx)
	return v
}

// problems lists what one server reports that a converged cluster would not.
func (v serverView) problems(ids map[string]bool) []string {
	if v.err != nil {
		return []string{v.member + ": " + v.err.Error()}
	}
	var out []string
	if v.info["cluster_state"] != "ok" || v.info["cluster_slots_assigned"] != "16384" || v.info["cluster_known_nodes"] != strconv.Itoa(len(ids)) {
		out = append(out, fmt.Sprintf("%s: cluster_state %s, %s slots assigned, %s known nodes (want %d)", v.member,
			v.info["cluster_state"], v.info["cluster_slots_assigned"], v.info["cluster_known_nodes"], len(ids)))
	}
	for _, n := range v.nodes {
		switch {
		case !ids[n.ID]:
			out = append(out, fmt.Sprintf("%s knows a stranger %s (%s %v)", v.member, short(n.ID), n.Addr(), n.Flags))
		case n.Fail || n.PFail || n.Handshake || n.NoAddr:
			out = append(out, fmt.Sprintf("%s sees %s as %v", v.member, short(n.ID), n.Flags))
		case n.Myself && (len(n.Importing) > 0 || len(n.Migrating) > 0):
			out = append(out, fmt.Sprintf("%s has open slots: importing %v migrating %v", v.member, n.Importing, n.Migrating))
		}
	}
	if v.repl.Role == valkey.RoleReplica && !v.repl.LinkUp {
		out = append(out, v.member+": replica link down")
	}
	return out
}

// shardProblems checks the shape one server sees: shards primaries with slots, each
// with replicas replicas, and no primary without slots.
func shardProblems(nodes []valkey.ClusterNode, shards, replicas int) []string {
	followers := map[string]int{}
	for _, n := range nodes {
		if n.Replica {
			followers[n.PrimaryID]++
		}
	}
	var out []string
	owners := 0
	for _, n := range nodes {
		if !n.Primary {
			continue
		}
		if len(n.Slots) == 0 {
			out = append(out, "primary "+short(n.ID)+" serves no slot")
			continue
		}
		owners++
		if followers[n.ID] != replicas {
			out = append(out, fmt.Sprintf("primary %s has %d replicas, want %d", short(n.ID), followers[n.ID], replicas))
		}
	}
	if owners != shards {
		out = append(out, fmt.Sprintf("%d primaries serve slots, want %d", owners, shards))
	}
	return out
}

func short(id string) string { return id[:min(len(id), 8)] }
