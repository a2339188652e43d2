package perf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/valkey"
)

// Labels of the floor's objects.
const (
	floorLabel      = "bench.valkey.io/floor"
	floorShardLabel = "bench.valkey.io/shard"
)

// floorPoll is how often the floor's script looks again.
const floorPoll = 20 * time.Millisecond

// Floor is a Valkey cluster formed by a script, without the operator: the same image
// and the same valkey.conf defaults (valkey.RenderConfig, without users), one ConfigMap
// and one StatefulSet per member, a shard's members kept apart by the same preferred
// anti-affinity, no exporter and no probes. Its time from apply to a healthy cluster is
// the floor the operator's time to Ready is compared with.
type Floor struct {
	Client    client.Client
	Namespace string
	// Name prefixes the objects: <name>-<shard>-<index>.
	Name  string
	Image string
	// Version is the image's Valkey version (for the rendered defaults).
	Version          valkey.Version
	Shards, Replicas int
}

// floorMember is one server of the floor.
type floorMember struct {
	name         string
	shard, index int // index 0 is the shard's primary
	addr         string
	client       *valkey.Client
}

func (f Floor) members() []*floorMember {
	var out []*floorMember
	for s := 0; s < f.Shards; s++ {
		for r := 0; r <= f.Replicas; r++ {
			out = append(out, &floorMember{name: fmt.Sprintf("%s-%d-%d", f.Name, s, r), shard: s, index: r})
		}
	}
	return out
}

// FloorResult is one formation of the floor.
type FloorResult struct {
	// Total is the time from the first apply until every server reports
	// cluster_state:ok with every node known and every replica's link is up.
	Total time.Duration
	// Placement maps each member to the Kubernetes node its pod ran on.
	Placement map[string]string
	// Timeline marks the end of each step of the script.
	Timeline Timeline
}

// Run applies the objects and forms the cluster: MEET from the first member, an even
// split of the slots with ADDSLOTSRANGE, REPLICATE once a replica knows its primary.
func (f Floor) Run(ctx context.Context, timeout time.Duration) (FloorResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	members := f.members()
	start := time.Now()
	var res FloorResult
	mark := func(step string) {
		res.Timeline = append(res.Timeline, Mark{At: time.Since(start).Seconds(), State: step})
	}
	if err := f.apply(ctx, members); err != nil {
		return res, err
	}
	mark("applied")
	placement, err := f.waitAddrs(ctx, members)
	if err != nil {
		return res, err
	}
	res.Placement = placement
	mark("every pod has an IP")
	defer closeAll(members)
	if err := eachMember(members, func(m *floorMember) error { return connect(ctx, m) }); err != nil {
		return res, err
	}
	mark("every server answers")
	if err := form(ctx, members, f.Shards); err != nil {
		return res, err
	}
	mark("met, slots added, replicas told")
	if err := waitHealthy(ctx, members); err != nil {
		return res, err
	}
	mark("cluster_state ok, replicas linked")
	res.Total = time.Since(start)
	return res, nil
}

// apply creates every ConfigMap and StatefulSet in parallel, as one kubectl apply of
// a file would (in one go, without waiting for anything).
func (f Floor) apply(ctx context.Context, members []*floorMember) error {
	conf := string(valkey.RenderConfig(valkey.ServerConfig{Port: 6379, DataDir: "/data", ClusterConfigFile: "nodes.conf", Version: f.Version}))
	return eachMember(members, func(m *floorMember) error {
		cm := &corev1.ConfigMap{ObjectMeta: f.meta(m), Data: map[string]string{"valkey.conf": conf}}
		if err := f.Client.Create(ctx, cm); err != nil {
			return fmt.Errorf("create the floor's ConfigMap %s: %w", m.name, err)
		}
		if err := f.Client.Create(ctx, f.statefulSet(m)); err != nil {
			return fmt.Errorf("create the floor's StatefulSet %s: %w", m.name, err)
		}
		return nil
	})
}

func (f Floor) meta(m *floorMember) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.name, Namespace: f.Namespace, Labels: f.labels(m)}
}

func (f Floor) labels(m *floorMember) map[string]string {
	return map[string]string{floorLabel: f.Name, floorShardLabel: strconv.Itoa(m.shard), "bench.valkey.io/member": m.name}
}

// statefulSet runs one member: the operator's server command and volumes, without the
// exporter, the probes and the users.
func (f Floor) statefulSet(m *floorMember) *appsv1.StatefulSet {
	labels := f.labels(m)
	shard := map[string]string{floorLabel: f.Name, floorShardLabel: strconv.Itoa(m.shard)}
	pod := corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](1),
		AutomountServiceAccountToken:  ptr.To(false),
		EnableServiceLinks:            ptr.To(false),
		SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](999), RunAsGroup: ptr.To[int64](999), FSGroup: ptr.To[int64](999)},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: shard}, TopologyKey: corev1.LabelHostname}}}}},
		Containers: []corev1.Container{{
			Name:    "server",
			Image:   f.Image,
			Command: []string{"valkey-server", "/etc/valkey/valkey.conf", "--cluster-announce-ip", "$(POD_IP)"},
			Env: []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "etc", MountPath: "/etc/valkey", ReadOnly: true},
				{Name: "data", MountPath: "/data"}, {Name: "tmp", MountPath: "/tmp"}},
			SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
		}},
		Volumes: []corev1.Volume{
			{Name: "etc", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: m.name}}}},
			{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
	return &appsv1.StatefulSet{
		ObjectMeta: f.meta(m),
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](1),
			ServiceName:         f.Name + "-nodes",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"bench.valkey.io/member": m.name}},
			Template:            corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod},
		},
	}
}

// waitAddrs waits until every member's pod has an IP and returns where each runs.
func (f Floor) waitAddrs(ctx context.Context, members []*floorMember) (map[string]string, error) {
	for {
		var pods corev1.PodList
		if err := f.Client.List(ctx, &pods, client.InNamespace(f.Namespace), client.MatchingLabels{floorLabel: f.Name}); err != nil {
			return nil, err
		}
		ips, nodes := map[string]string{}, map[string]string{}
		for _, p := range pods.Items {
			if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
				ips[p.Labels["bench.valkey.io/member"]] = p.Status.PodIP
				nodes[p.Labels["bench.valkey.io/member"]] = p.Spec.NodeName
			}
		}
		if len(ips) == len(members) {
			for _, m := range members {
				m.addr = ips[m.name] + ":6379"
			}
			return nodes, nil
		}
		if err := sleep(ctx, floorPoll); err != nil {
			return nil, fmt.Errorf("wait for the floor's pod IPs (%d of %d): %w", len(ips), len(members), err)
		}
	}
}

// connect dials a member until its server answers PING.
func connect(ctx context.Context, m *floorMember) error {
	for {
		c, err := valkey.Dial(ctx, valkey.Options{Addr: m.addr, DialTimeout: 200 * time.Millisecond, CommandTimeout: time.Second})
		if err == nil {
			if err = c.Ping(ctx); err == nil {
				m.client = c
				return nil
			}
			c.Close()
		}
		if serr := sleep(ctx, floorPoll); serr != nil {
			return fmt.Errorf("connect to %s (%s): %w (last: %v)", m.name, m.addr, serr, err)
		}
	}
}

// form is the script: the first member meets every other one while each primary takes
// its even share of the slots; then each replica, once it knows its primary, follows it.
func form(ctx context.Context, members []*floorMember, shards int) error {
	anchor, ranges := members[0], valkey.EvenRanges(shards)
	err := eachMember(members, func(m *floorMember) error {
		if m != anchor {
			host, _, _ := splitHostPort(m.addr)
			if err := anchor.client.Meet(ctx, host, 6379, 16379); err != nil {
				return err
			}
		}
		if m.index == 0 {
			return m.client.AddSlotsRange(ctx, ranges[m.shard])
		}
		return nil
	})
	if err != nil {
		return err
	}
	primaries := map[int]string{}
	for _, m := range members {
		if m.index == 0 {
			id, err := m.client.MyID(ctx)
			if err != nil {
				return err
			}
			primaries[m.shard] = id
		}
	}
	return eachMember(members, func(m *floorMember) error {
		if m.index == 0 {
			return nil
		}
		return replicate(ctx, m, primaries[m.shard])
	})
}

// replicate waits until the member knows its primary, then replicates it.
func replicate(ctx context.Context, m *floorMember, primaryID string) error {
	for {
		nodes, err := m.client.ClusterNodes(ctx)
		if err == nil && knows(nodes, primaryID) {
			if err = m.client.Replicate(ctx, primaryID); err == nil {
				return nil
			}
		}
		if serr := sleep(ctx, floorPoll); serr != nil {
			return fmt.Errorf("%s: replicate %s: %w (last: %v)", m.name, short(primaryID), serr, err)
		}
	}
}

func knows(nodes []valkey.ClusterNode, id string) bool {
	for _, n := range nodes {
		if n.ID == id && !n.Handshake {
			return true
		}
	}
	return false
}

// waitHealthy waits until every server reports cluster_state:ok and knows every
// member, and every replica's link to its primary is up.
func waitHealthy(ctx context.Context, members []*floorMember) error {
	want := strconv.Itoa(len(members))
	for {
		pending := ""
		for _, m := range members {
			if why := notHealthy(ctx, m, want); why != "" {
				pending = m.name + ": " + why
				break
			}
		}
		if pending == "" {
			return nil
		}
		if err := sleep(ctx, floorPoll); err != nil {
			return fmt.Errorf("wait for the floor to be healthy: %w (last: %s)", err, pending)
		}
	}
}

// notHealthy says why a member is not done yet ("" when it is).
func notHealthy(ctx context.Context, m *floorMember, knownNodes string) string {
	info, err := m.client.ClusterInfo(ctx)
	if err != nil {
		return err.Error()
	}
	if info["cluster_state"] != "ok" || info["cluster_known_nodes"] != knownNodes {
		return fmt.Sprintf("cluster_state %s, %s known nodes", info["cluster_state"], info["cluster_known_nodes"])
	}
	if m.index == 0 {
		return ""
	}
	repl, err := m.client.ReplicationInfo(ctx)
	if err != nil {
		return err.Error()
	}
	if repl.Role != valkey.RoleReplica || !repl.LinkUp {
		return fmt.Sprintf("role %s, link up %t", repl.Role, repl.LinkUp)
	}
	return ""
}

// Delete removes the floor's objects and waits until its pods are gone.
func (f Floor) Delete(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sel := client.MatchingLabels{floorLabel: f.Name}
	bg := client.PropagationPolicy(metav1.DeletePropagationBackground)
	if err := f.Client.DeleteAllOf(ctx, &appsv1.StatefulSet{}, client.InNamespace(f.Namespace), sel, bg); err != nil {
		return fmt.Errorf("delete the floor's StatefulSets: %w", err)
	}
	if err := f.Client.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(f.Namespace), sel); err != nil {
		return fmt.Errorf("delete the floor's ConfigMaps: %w", err)
	}
	return WaitPodsGone(ctx, f.Client, f.Namespace, sel)
}

// WaitPodsGone waits until no pod of the namespace matches the labels.
func WaitPodsGone(ctx context.Context, c client.Client, namespace string, sel client.MatchingLabels) error {
	for {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(namespace), sel); err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return nil
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return fmt.Errorf("wait for %d pods to go: %w", len(pods.Items), err)
		}
	}
}

// eachMember runs f for every member in parallel and joins the errors.
func eachMember(members []*floorMember, f func(*floorMember) error) error {
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(m)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func closeAll(members []*floorMember) {
	for _, m := range members {
		if m.client != nil {
			m.client.Close()
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// splitHostPort splits "ip:port".
func splitHostPort(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.Atoi(port)
	return host, p, err
}
