package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// Member causes on the cluster. The node-controller reports each member's problems on
// its ValkeyNode (conditions and events there); a user reads the ValkeyCluster. So this
// controller, which reads every member each pass, tells each cause once on the cluster
// too, as a Warning event of the same reason, aggregated over the members that have it:
// "ConfigRefused: 3 members (vk-a, vk-b, vk-c): the server refused maxmemory-policy: ...".
//
// Once per cause: a cause is told when a member entered it (its condition's
// lastTransitionTime) after the last event of that reason on the cluster. Members that
// join a cause already told are not told again until a member enters it anew. Before it
// is told, a cause must keep the same members for causeSettle, so members that enter it
// together (the node-controller reports each on its own) make one event, and a cause
// that clears at once (a pod replaced in a second) makes none. The time of the last
// event per reason is kept in memory and, the first time a process sees a cluster, read
// from the cluster's events in the API, so a restarted controller does not tell again
// what it told before.

// causeSettle is how long a cause keeps its members before it is told.
const causeSettle = 5 * time.Second

// maxNamedMembers bounds the member names in an event.
const maxNamedMembers = 5

// Member-level reasons, by the condition that carries them. ConfigApplied's Refused and
// ServerDown are told under the names of the failure catalog.
var (
	podCauses = map[string]bool{
		v1alpha1.ReasonPodTerminated: true, v1alpha1.ReasonPodMissing: true, v1alpha1.ReasonCrashLoop: true,
		v1alpha1.ReasonPodUnschedulable: true, v1alpha1.ReasonImagePullBackOff: true, v1alpha1.ReasonPriorityClassNotFound: true,
		v1alpha1.ReasonFailedCreate: true, v1alpha1.ReasonNameConflict: true, v1alpha1.ReasonReplyTooLarge: true,
		v1alpha1.ReasonUnsupportedServer: true,
	}
	storageCauses = map[string]bool{v1alpha1.ReasonStorageClassNotFound: true, v1alpha1.ReasonResizeInfeasible: true}
)

const (
	// EventConfigRefused: members refused a live setting (ConfigApplied=False Refused).
	EventConfigRefused = "ConfigRefused"
	// EventServerDown: the kubelet saw members' servers exit (ServerDown=True).
	EventServerDown = "ServerDown"
)

// memberCause is one member-level cause and the members that have it.
type memberCause struct {
	reason string
	// members are the members' names, sorted; message the first one's condition message.
	members []string
	message string
	// entered is the latest time a member entered the cause (its condition's transition).
	entered time.Time
}

// note is the event's text: the cause, how many members, a bounded list of names, and
// the first member's message.
func (c memberCause) note() string {
	what := "member"
	if len(c.members) > 1 {
		what = "members"
	}
	names := c.members
	more := ""
	if len(names) > maxNamedMembers {
		more = fmt.Sprintf(" and %d more", len(names)-maxNamedMembers)
		names = names[:maxNamedMembers]
	}
	return fmt.Sprintf("%s: %d %s (%s%s): %s", c.reason, len(c.members), what, strings.Join(names, ", "), more, plan.Truncate(c.message, 400))
}

// memberCauses collects the causes of the members (pure), in reason order. Members
// being deleted are left out: their end is the operator's doing.
func memberCauses(nodes []*v1alpha1.ValkeyNode) []memberCause {
	by := map[string]*memberCause{}
	add := func(reason string, vn *v1alpha1.ValkeyNode, c *metav1.Condition) {
		mc := by[reason]
		if mc == nil {
			mc = &memberCause{reason: reason, message: plan.MemberMessage(c)}
			by[reason] = mc
		}
		mc.members = append(mc.members, vn.Name)
		if t := c.LastTransitionTime.Time; t.After(mc.entered) {
			mc.entered = t
		}
	}
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b *v1alpha1.ValkeyNode) int { return strings.Compare(a.Name, b.Name) })
	for _, vn := range sorted {
		if !vn.DeletionTimestamp.IsZero() {
			continue
		}
		cs := vn.Status.Conditions
		if c := conditions.Get(cs, v1alpha1.ConditionPodReady); c != nil && c.Status == metav1.ConditionFalse && podCauses[c.Reason] {
			add(c.Reason, vn, c)
		}
		if c := conditions.Get(cs, v1alpha1.ConditionStorageReady); c != nil && c.Status == metav1.ConditionFalse && storageCauses[c.Reason] {
			add(c.Reason, vn, c)
		}
		if c := conditions.Get(cs, v1alpha1.ConditionConfigApplied); c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonConfigRefused {
			add(EventConfigRefused, vn, c)
		}
		if c := conditions.Get(cs, v1alpha1.ConditionServerDown); c != nil && c.Status == metav1.ConditionTrue {
			add(EventServerDown, vn, c)
		}
	}
	out := make([]memberCause, 0, len(by))
	for _, mc := range by {
		out = append(out, *mc)
	}
	slices.SortFunc(out, func(a, b memberCause) int { return strings.Compare(a.reason, b.reason) })
	return out
}

// causeReasons are the event reasons memberCauses produces.
func isCauseReason(reason string) bool {
	return podCauses[reason] || storageCauses[reason] || reason == EventConfigRefused || reason == EventServerDown
}

// causeLog is what this process told about one cluster.
type causeLog struct {
	mu     sync.Mutex
	seeded bool
	// told is the time of the last event per reason.
	told map[string]time.Time
	// settling: per reason, the members seen and since when.
	settling map[string]settling
}

type settling struct {
	members string
	since   time.Time
}

// step decides which causes to tell now (pure but for the log it updates), and how soon
// to look again for those still settling (0: none).
func (l *causeLog) step(causes []memberCause, now time.Time) (tell []memberCause, after time.Duration) {
	present := map[string]bool{}
	for _, c := range causes {
		present[c.reason] = true
		if t, ok := l.told[c.reason]; ok && !t.Before(c.entered.Truncate(time.Second)) {
			delete(l.settling, c.reason)
			continue
		}
		sig := strings.Join(c.members, ",")
		st, ok := l.settling[c.reason]
		if !ok || st.members != sig {
			st = settling{members: sig, since: now}
			l.settling[c.reason] = st
		}
		if wait := st.since.Add(causeSettle).Sub(now); wait > 0 {
			if after == 0 || wait < after {
				after = wait
			}
			continue
		}
		tell = append(tell, c)
		l.told[c.reason] = now
		delete(l.settling, c.reason)
	}
	for reason := range l.settling {
		if !present[reason] {
			delete(l.settling, reason)
		}
	}
	return tell, after
}

// reportMemberCauses tells the members' causes on the cluster (see above) and returns
// how soon a settling cause needs the next pass (0: none).
func (r *Reconciler) reportMemberCauses(ctx context.Context, vc *v1alpha1.ValkeyCluster, nodes []*v1alpha1.ValkeyNode) time.Duration {
	causes := memberCauses(nodes)
	v, _ := r.causes.LoadOrStore(vc.UID, &causeLog{told: map[string]time.Time{}, settling: map[string]settling{}})
	l := v.(*causeLog)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(causes) == 0 && len(l.settling) == 0 {
		return 0
	}
	if !l.seeded {
		if err := r.seedCauseLog(ctx, vc, l); err != nil {
			log.FromContext(ctx).Info("cannot read the cluster's events; member causes may be told again", "reason", err.Error())
		}
		l.seeded = true
	}
	tell, after := l.step(causes, r.Clock())
	for _, c := range tell {
		r.event(vc, nil, eventWarning, c.reason, "Observe", "%s", c.note())
	}
	return after
}

// eventPage bounds the events one list reads.
const eventPage = 500

// seedCauseLog reads the last time each cause was told on the cluster from its events.
func (r *Reconciler) seedCauseLog(ctx context.Context, vc *v1alpha1.ValkeyCluster, l *causeLog) error {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	var list corev1.EventList
	sel := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.uid", string(vc.UID)),
		fields.OneTermEqualSelector("type", corev1.EventTypeWarning))
	// One page at most: anyone who may create events in the namespace decides how many
	// match, and a seed from the first page only tells a cause again a little early.
	if err := reader.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingFieldsSelector{Selector: sel},
		client.Limit(eventPage)); err != nil {
		return fmt.Errorf("list events of %s: %w", types.NamespacedName{Namespace: vc.Namespace, Name: vc.Name}, err)
	}
	for _, e := range list.Items {
		if e.ReportingController != FieldManager || !isCauseReason(e.Reason) {
			continue
		}
		at := e.EventTime.Time
		if e.Series != nil && e.Series.LastObservedTime.After(at) {
			at = e.Series.LastObservedTime.Time
		}
		if e.LastTimestamp.After(at) {
			at = e.LastTimestamp.Time
		}
		if at.After(l.told[e.Reason]) {
			l.told[e.Reason] = at
		}
	}
	return nil
}
