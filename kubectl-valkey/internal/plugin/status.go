package plugin

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func statusCommand(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
	events := fs.Int("events", 10, "how many recent events to show")
	return func(ctx context.Context, e *env, args []string) error {
		name, err := clusterArg(args)
		if err != nil {
			return err
		}
		v, err := e.view(ctx, name)
		if err != nil {
			return err
		}
		v.maxEvents = *events
		render(e.out, v, time.Now())
		return nil
	}
}

// clusterView is everything status shows, read from the API.
type clusterView struct {
	vc        *v1alpha1.ValkeyCluster
	nodes     []v1alpha1.ValkeyNode
	events    []eventsv1.Event
	maxEvents int
}

// view reads a cluster, its members and the events about them.
func (e *env) view(ctx context.Context, name string) (*clusterView, error) {
	vc, err := e.getCluster(ctx, name)
	if err != nil {
		return nil, err
	}
	nodes := &v1alpha1.ValkeyNodeList{}
	if err := e.c.List(ctx, nodes, client.InNamespace(e.namespace), client.MatchingLabels{v1alpha1.LabelInstance: name}); err != nil {
		return nil, fmt.Errorf("list the members of %s: %w", name, err)
	}
	v := &clusterView{vc: vc, nodes: nodes.Items}
	evs := &eventsv1.EventList{}
	if err := e.c.List(ctx, evs, client.InNamespace(e.namespace)); err != nil {
		fmt.Fprintf(e.errw, "warning: cannot list events: %v\n", err)
		return v, nil
	}
	members := map[string]bool{}
	for _, n := range nodes.Items {
		members[n.Name] = true
	}
	for _, ev := range evs.Items {
		r := ev.Regarding
		if (r.Kind == "ValkeyCluster" && r.Name == name) || (r.Kind == "ValkeyNode" && members[r.Name]) {
			v.events = append(v.events, ev)
		}
	}
	return v, nil
}

// render writes the one-screen status of a cluster.
func render(w io.Writer, v *clusterView, now time.Time) {
	vc := v.vc
	state := string(vc.Status.State)
	if state == "" {
		state = "Unknown"
	}
	paused := "no"
	if c := meta(vc.Status.Conditions, v1alpha1.ConditionPaused); c != nil && c.Status == metav1.ConditionTrue {
		paused = "yes"
	}
	fmt.Fprintf(w, "ValkeyCluster %s/%s  state %s  shards %d/%d ready  replicas per shard %d  paused %s\n",
		vc.Namespace, vc.Name, state, vc.Status.ReadyShards, vc.Spec.ShardCount(), vc.Spec.ReplicaCount(), paused)
	fmt.Fprintf(w, "image %s  generation %d (observed %d)\n\n", vc.Spec.ImageOrDefault(), vc.Generation, vc.Status.ObservedGeneration)
	if lines := inFlight(vc, now); len(lines) > 0 {
		fmt.Fprintln(w, "IN FLIGHT")
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
		}
		fmt.Fprintln(w)
	}

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tMEMBER\tROLE\tLIFECYCLE\tSLOTS\tSYNC\tPOD\tIP\tNODE\tZONE\tVERSION")
	for _, row := range memberRows(v) {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONDITION\tSTATUS\tREASON\tAGE\tMESSAGE")
	conds := append([]metav1.Condition(nil), vc.Status.Conditions...)
	sort.SliceStable(conds, func(i, j int) bool { return conditionRank(conds[i].Type) < conditionRank(conds[j].Type) })
	for _, c := range conds {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, age(now, c.LastTransitionTime.Time), c.Message)
	}
	_ = tw.Flush()

	fmt.Fprintln(w)
	evs := append([]eventsv1.Event(nil), v.events...)
	sort.SliceStable(evs, func(i, j int) bool { return eventTime(evs[i]).After(eventTime(evs[j])) })
	if v.maxEvents >= 0 && len(evs) > v.maxEvents {
		evs = evs[:v.maxEvents]
	}
	if len(evs) == 0 {
		fmt.Fprintln(w, "no recent events")
		return
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	for _, ev := range evs {
		obj := ev.Regarding.Name
		if ev.Regarding.Kind == "ValkeyNode" {
			obj = "member/" + obj
		} else if ev.Related != nil && ev.Related.Name != "" {
			obj = "member/" + ev.Related.Name
		} else {
			obj = "cluster"
		}
		count := ""
		if ev.Series != nil && ev.Series.Count > 1 {
			count = fmt.Sprintf(" (x%d)", ev.Series.Count)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s\n", age(now, eventTime(ev)), ev.Type, ev.Reason, obj, ev.Note, count)
	}
	_ = tw.Flush()
}

// inFlight lists what the cluster's status says is under way: a failover request not
// answered yet, a rotation of the system users' passwords (running, or requested and not
// started), a certificate revision not served by every member yet.
func inFlight(vc *v1alpha1.ValkeyCluster, now time.Time) []string {
	var out []string
	if p := pendingFailover(vc); p != "" {
		out = append(out, "failover request "+p)
	}
	var rot *v1alpha1.PasswordRotationStatus
	if vc.Status.ACL != nil {
		rot = vc.Status.ACL.Rotation
	}
	switch token := vc.Annotations[v1alpha1.AnnotationRotateSystemPasswords]; {
	case rot != nil && rot.Phase != "" && rot.Phase != v1alpha1.RotationIdle:
		line := fmt.Sprintf("password rotation %q: %s", rot.Request, rot.Phase)
		if rot.PhaseSince != nil {
			line += " for " + age(now, rot.PhaseSince.Time)
		}
		out = append(out, line)
	case token != "" && (rot == nil || rot.CompletedRequest != token):
		out = append(out, fmt.Sprintf("password rotation %q: requested, not started", token))
	}
	if t := vc.Status.TLS; t != nil && t.Rollout != nil && t.Rollout.Phase == v1alpha1.TLSRollingOut {
		line := fmt.Sprintf("certificate revision %s: %s", t.Revision, t.Rollout.Phase)
		if t.Rollout.ReloadAfter != nil {
			line += ", members reload it from " + t.Rollout.ReloadAfter.UTC().Format(time.RFC3339)
		}
		out = append(out, line)
	}
	return out
}

// memberRows lists the members shard by shard, the primary first. A member's zone is
// known when a primary runs on its node: status.shards names each primary's node and
// zone.
func memberRows(v *clusterView) [][]string {
	slots := map[string]string{}
	primaries := map[string]bool{}
	zones := map[string]string{} // Kubernetes node -> zone
	for _, sh := range v.vc.Status.Shards {
		if sh.Primary != "" {
			primaries[sh.Primary] = true
			slots[sh.Primary] = strings.Join(sh.Slots, ",")
		}
		if sh.PrimaryNode != "" && sh.PrimaryZone != "" {
			zones[sh.PrimaryNode] = sh.PrimaryZone
		}
	}
	nodes := append([]v1alpha1.ValkeyNode(nil), v.nodes...)
	sort.SliceStable(nodes, func(i, j int) bool {
		a, b := nodes[i], nodes[j]
		if a.Spec.ShardIndex != b.Spec.ShardIndex {
			return a.Spec.ShardIndex < b.Spec.ShardIndex
		}
		if primaries[a.Name] != primaries[b.Name] {
			return primaries[a.Name]
		}
		return a.Name < b.Name
	})
	var rows [][]string
	for _, n := range nodes {
		role := string(n.Status.Role)
		if primaries[n.Name] {
			role = string(v1alpha1.RolePrimary)
		}
		if role == "" {
			role = "-"
		}
		lifecycle := string(n.Status.Lifecycle)
		if !n.DeletionTimestamp.IsZero() {
			lifecycle = string(v1alpha1.LifecycleLeaving)
		}
		rows = append(rows, []string{
			fmt.Sprint(n.Spec.ShardIndex), n.Name, role, dash(lifecycle), dash(slots[n.Name]),
			syncOf(n), dash(n.Status.PodName), dash(n.Status.PodIP), dash(n.Status.NodeName), dash(zones[n.Status.NodeName]),
			dash(n.Status.Version),
		})
	}
	return rows
}

// syncOf is what the member's Synced condition says of its replication: in sync, syncing,
// link down, or the pod's problem when its pod does not run.
func syncOf(n v1alpha1.ValkeyNode) string {
	if c := meta(n.Status.Conditions, v1alpha1.ConditionPodReady); c != nil && c.Status != metav1.ConditionTrue {
		return "pod " + c.Reason
	}
	c := meta(n.Status.Conditions, v1alpha1.ConditionSynced)
	switch {
	case c == nil:
		return "-"
	case c.Reason == v1alpha1.ReasonIsPrimary:
		return "-"
	case c.Status == metav1.ConditionTrue:
		return "in sync"
	case c.Reason == v1alpha1.ReasonLinkDown:
		return "link down"
	case c.Reason == v1alpha1.ReasonSyncing:
		return "catching up"
	}
	return c.Reason
}

// conditionRank orders the conditions users read first.
func conditionRank(t string) int {
	for i, name := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionProgressing, v1alpha1.ConditionDegraded,
		v1alpha1.ConditionPrimariesSpread, v1alpha1.ConditionPaused} {
		if t == name {
			return i
		}
	}
	return 10
}

func meta(cs []metav1.Condition, t string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

func eventTime(ev eventsv1.Event) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.DeprecatedLastTimestamp.IsZero():
		return ev.DeprecatedLastTimestamp.Time
	}
	return ev.CreationTimestamp.Time
}

func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
