package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// Failback keeps the primaries where they survive (spec.primaryPlacement, placement.go):
// each pass reads where the members run (their nodes from their ValkeyNodes, the
// nodes' zones from the nodes' labels), plans the best primaries, reports the spread
// (PrimariesSpread, status.shards[].primaryNode and primaryZone, metrics), and, when
// nothing else changes the cluster, makes the plan's first move: one planned failover,
// the same CLUSTER FAILOVER on a replica in sync that a roll makes.

// DefaultFailbackHold is the default FailbackHold.
const DefaultFailbackHold = 10 * time.Second

// nodeLabelsTTL is how long the labels read from a Kubernetes node are used before they
// are read again: zones do not change under running pods, and a node's labels cost a
// request to the API server (no node informer: the operator lists no nodes).
const nodeLabelsTTL = time.Minute

// placementView is what a pass knows of where the members run; nil with policy None.
type placementView struct {
	// key is the topology key whose values are the zones.
	key string
	// zones maps a Kubernetes node to its zone ("" for none).
	zones map[string]string
	// unread names the nodes whose labels could not be read, with why.
	unread []string
	// shards are the shards of the spec as the planner sees them.
	shards []placedShard
	// plan is the planner's verdict on them.
	plan placementPlan
	// step is what failback did or waits for this pass (set by reconcilePlacement).
	step string
	// first is the first primary chosen for each shard that has none (scope.newPrimary),
	// once per pass.
	first map[int32]string
}

// nodeLabels is a node's labels as last read, and when.
type nodeLabels struct {
	labels map[string]string
	at     time.Time
	err    string
}

// nodeLabelCache caches the labels of the nodes members run on, by node name.
type nodeLabelCache struct{ m sync.Map }

// observePlacement reads the zones of the members' nodes and plans the primaries of the
// spec's shards, or returns nil when the policy is None.
func (r *Reconciler) observePlacement(ctx context.Context, s *scope) *placementView {
	if s.VC.Spec.PlacementPolicy() != v1alpha1.PrimaryPlacementSpread {
		return nil
	}
	key := s.VC.Spec.PlacementTopologyKey()
	zones := map[string]string{}
	var unread []string
	for _, m := range s.Topo.Members {
		n := m.Node.Status.NodeName
		if _, done := zones[n]; done || n == "" || !m.Reachable {
			continue
		}
		zone, err := r.zoneOf(ctx, n, key, s.Topo.Now)
		zones[n] = zone
		if err != "" {
			unread = append(unread, fmt.Sprintf("%s (%s)", n, err))
		}
	}
	sort.Strings(unread)
	pv := newPlacementView(s, key, zones, unread)
	ages := r.primaryAges(s)
	for i := range pv.shards {
		pv.shards[i].primaryFor = ages[pv.shards[i].index]
	}
	return pv
}

// primarySeen is a shard's primary and since when this process has seen it serve.
type primarySeen struct {
	name  string
	since time.Time
}

// primaryAges returns how long each shard's primary has served it, as far as this
// process saw: a primary first seen by this pass (a failover, or a restart of the
// operator, which forgets) counts from now.
func (r *Reconciler) primaryAges(s *scope) map[int32]time.Duration {
	var prev map[int32]primarySeen
	if v, ok := r.primariesSeen.Load(s.VC.UID); ok {
		prev = v.(map[int32]primarySeen)
	}
	seen := map[int32]primarySeen{}
	ages := map[int32]time.Duration{}
	for sh := int32(0); sh < s.Shards(); sh++ {
		p := s.Topo.PrimaryOf(sh)
		if p == nil {
			continue
		}
		ps := primarySeen{name: p.Name(), since: s.Topo.Now}
		if old, ok := prev[sh]; ok && old.name == ps.name {
			ps = old
		}
		seen[sh], ages[sh] = ps, s.Topo.Now.Sub(ps.since)
	}
	r.primariesSeen.Store(s.VC.UID, seen)
	return ages
}

// voteWindow is how long a shard's primary must have served before failback fails it
// over: Valkey's primaries vote about one primary once per twice the node timeout, and
// takeoverMargin covers the clocks.
func (s *scope) voteWindow() time.Duration { return 2*nodeTimeout(s.VC) + takeoverMargin }

// newPlacementView plans the spec's shards with the zones given (node to zone).
func newPlacementView(s *scope, key string, zones map[string]string, unread []string) *placementView {
	pv := &placementView{key: key, zones: zones, unread: unread, shards: s.placedShards(zones)}
	pv.plan = planPlacement(pv.shards)
	return pv
}

// zoneOf returns the value of label key on Kubernetes node name ("" when it has none),
// from the cache when it was read less than nodeLabelsTTL ago; err says why the labels
// could not be read. The key kubernetes.io/hostname is the node itself: nothing is read.
func (r *Reconciler) zoneOf(ctx context.Context, name, key string, now time.Time) (zone, err string) {
	if key == "kubernetes.io/hostname" {
		return "", ""
	}
	if v, ok := r.nodeLabels.m.Load(name); ok {
		if nl := v.(nodeLabels); now.Sub(nl.at) < nodeLabelsTTL {
			return nl.labels[key], nl.err
		}
	}
	reader := client.Reader(r.Client)
	if r.APIReader != nil {
		reader = r.APIReader
	}
	n := &metav1.PartialObjectMetadata{}
	n.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Node"})
	nl := nodeLabels{at: now}
	switch e := reader.Get(ctx, client.ObjectKey{Name: name}, n); {
	case e == nil:
		nl.labels = n.Labels
	case apierrors.IsNotFound(e):
		// A node that is gone holds nothing; its members' nodes change soon.
	default:
		nl.err = e.Error()
	}
	r.nodeLabels.m.Store(name, nl)
	return nl.labels[key], nl.err
}

// placedShards is the spec's shards as the planner sees them: each active member with
// the node its pod runs on (when its server answers), that node's zone, whether it is
// the shard's primary, in sync with it, and for how long.
func (s *scope) placedShards(zones map[string]string) []placedShard {
	var out []placedShard
	for sh := int32(0); sh < s.Shards(); sh++ {
		p := s.Topo.PrimaryOf(sh)
		ps := placedShard{index: sh}
		for _, m := range s.Active(sh) {
			pm := placed{name: m.Name(), primary: m == p, inSync: m == p || plan.Synced(m, p)}
			if m.Reachable {
				pm.node = m.Node.Status.NodeName
				pm.zone = zones[pm.node]
			}
			if pm.primary {
				pm.epoch = m.Self.ConfigEpoch
			}
			if c := conditions.Get(m.Node.Status.Conditions, v1alpha1.ConditionSynced); pm.inSync && c != nil && c.Status == metav1.ConditionTrue {
				pm.syncedFor = s.Topo.Now.Sub(c.LastTransitionTime.Time)
			}
			ps.members = append(ps.members, pm)
		}
		out = append(out, ps)
	}
	return out
}

// spreadChoice picks, among candidates of shard sh in the caller's order of preference,
// the one whose node and zone keep the primaries spread (the first with policy None).
func (s *scope) spreadChoice(sh int32, candidates []*plan.Member) *plan.Member {
	if len(candidates) == 0 {
		return nil
	}
	if s.place == nil {
		return candidates[0]
	}
	names := make([]string, len(candidates))
	for i, m := range candidates {
		names[i] = m.Name()
	}
	pick := bestForSpread(s.place.shards, sh, names)
	for _, m := range candidates {
		if m.Name() == pick {
			return m
		}
	}
	return candidates[0]
}

// byOffset orders replicas from the most caught up, keeping the order of equals.
func byOffset(ms []*plan.Member) []*plan.Member {
	out := append([]*plan.Member(nil), ms...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Repl.Offset > out[j].Repl.Offset })
	return out
}

// mostCaughtUpAll returns the replicas with the highest offset.
func mostCaughtUpAll(ms []*plan.Member) []*plan.Member {
	best := mostCaughtUp(ms)
	if best == nil {
		return nil
	}
	var out []*plan.Member
	for _, m := range ms {
		if m.Repl.Offset == best.Repl.Offset {
			out = append(out, m)
		}
	}
	return out
}

// failbackBusy says what keeps failback from moving a primary now, or "": failback
// starts no failover while anything else changes the cluster or the cluster does not
// serve with all its redundancy.
func (s *scope) failbackBusy() string {
	switch {
	case s.step.reason != "":
		return fmt.Sprintf("waiting for the cluster to finish what it is doing (%s)", s.step.reason)
	case !s.Ready():
		return "waiting for the cluster to be Ready, every replica in sync"
	case !s.settled():
		return "waiting for the cluster to settle"
	case !s.MembersUpToDate():
		return "waiting for the roll to end"
	}
	if _, ok := s.VC.Annotations[v1alpha1.AnnotationFailover]; ok {
		return "waiting for the requested failover"
	}
	for sh := int32(0); sh < s.Shards(); sh++ {
		if m := s.failoverPending(sh); m != nil {
			return fmt.Sprintf("waiting for %s to complete its takeover of shard %d", m.Name(), sh)
		}
	}
	return ""
}

// reconcilePlacement makes failback's next move (planFailback): one planned failover
// per pass, the same a roll makes, on a replica in sync for FailbackHold at least.
func (r *Reconciler) reconcilePlacement(ctx context.Context, s *scope) (time.Duration, error) {
	if s.place == nil || s.place.plan.holds() {
		return 0, nil
	}
	f := planFailback(s.place.shards, s.place.plan, s.failbackBusy(), failbackTiming{hold: r.failbackHold(), votes: s.voteWindow()})
	if f.move == nil {
		s.place.step = f.wait
		if s.Ready() {
			// A serving cluster whose other phases wait for nothing would be at rest, and
			// a pass at rest looks again only when something changes: say what failback
			// waits for (a takeover, time), so passes keep coming.
			s.progress(v1alpha1.ReasonRestoringPlacement, "%s", f.wait)
		}
		s.lookAgainWithin(f.after)
		return 0, nil
	}
	mv := f.move
	var to *plan.Member
	for _, m := range s.Active(mv.shard) {
		if m.Name() == mv.to.name {
			to = m
		}
	}
	if to == nil {
		return 0, nil
	}
	what := fmt.Sprintf("shard %d: %s takes over from %s on %s: %s", mv.shard, mv.to.name, mv.from.name, where(mv.to), mv.why)
	if rest := len(s.place.plan.moves) - 1; rest > 0 {
		what += fmt.Sprintf("; %d more planned: %s", rest, plannedMoves(s.place.plan.moves[1:]))
	}
	s.place.step = what
	s.progress(v1alpha1.ReasonRestoringPlacement, "%s", what)
	r.event(s.VC, to.Node, eventNormal, v1alpha1.ReasonRestoringPlacement, "Failover", "%s", what)
	if err := r.failoverAs(ctx, s, to, "restoring the primaries' spread", v1alpha1.FailoverPlacement); err != nil {
		return 0, err
	}
	return requeueFast, nil
}

// failbackHold is how long a member must have been in sync before failback makes it a
// primary.
func (r *Reconciler) failbackHold() time.Duration {
	if r.FailbackHold > 0 {
		return r.FailbackHold
	}
	return DefaultFailbackHold
}

// where is a member's node and zone, for messages.
func where(m placed) string {
	if m.zone == "" {
		return "node " + m.node
	}
	return fmt.Sprintf("node %s (zone %s)", m.node, m.zone)
}

// plannedMoves lists moves for messages.
func plannedMoves(ms []placementMove) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("shard %d to %s on %s", m.shard, m.to.name, where(m.to))
	}
	return strings.Join(out, ", ")
}

// placementCondition reports the spread: True when it holds (Spread) or is as good as
// the nodes allow (BestPossible), False while a better one exists (NotSpread), Unknown
// with policy None or while a primary's node is not known.
func placementCondition(s *scope, gen int64) metav1.Condition {
	if s.place == nil {
		return conditions.Unknown(v1alpha1.ConditionPrimariesSpread, v1alpha1.ReasonPlacementOff,
			"spec.primaryPlacement.policy is None: the operator neither checks nor restores where the primaries run", gen)
	}
	var noPrimary, unknown []string
	for _, sh := range s.place.shards {
		switch p := sh.primary(); {
		case p == nil:
			noPrimary = append(noPrimary, fmt.Sprint(sh.index))
		case p.node == "":
			unknown = append(unknown, fmt.Sprint(sh.index))
		}
	}
	suffix := ""
	if len(s.place.unread) > 0 {
		suffix = "; the labels of nodes " + strings.Join(s.place.unread, ", ") + " cannot be read: their zones are not known"
	}
	switch {
	case s.credErr != nil || plan.Empty(s.Topo):
		return conditions.Unknown(v1alpha1.ConditionPrimariesSpread, v1alpha1.ReasonWaiting, "the cluster is being created", gen)
	case len(noPrimary) > 0:
		return conditions.Unknown(v1alpha1.ConditionPrimariesSpread, v1alpha1.ReasonUnknown,
			fmt.Sprintf("%s no primary", hasOrHave(noPrimary)), gen)
	case len(unknown) > 0:
		return conditions.Unknown(v1alpha1.ConditionPrimariesSpread, v1alpha1.ReasonUnknown,
			fmt.Sprintf("the node of the primary of %s is not known yet", shardList(unknown)), gen)
	}
	p := s.place.plan
	switch {
	case p.holds() && p.perfect():
		return conditions.New(v1alpha1.ConditionPrimariesSpread, true, v1alpha1.ReasonSpread,
			spreadSummary(s.place)+suffix, gen)
	case p.holds():
		return conditions.New(v1alpha1.ConditionPrimariesSpread, true, v1alpha1.ReasonBestPossible,
			"as evenly as the nodes the members run on allow: "+strings.Join(p.faults, "; ")+suffix, gen)
	}
	msg := strings.Join(p.faults, "; ") + "; planned: " + plannedMoves(p.moves)
	if s.place.step != "" {
		msg += "; " + s.place.step
	} else if s.paused {
		msg += "; the cluster is paused"
	}
	return conditions.New(v1alpha1.ConditionPrimariesSpread, false, v1alpha1.ReasonNotSpread, msg+suffix, gen)
}

// spreadSummary says how the primaries are spread, for a spread that holds.
func spreadSummary(pv *placementView) string {
	nodes, zones := map[string]bool{}, map[string]bool{}
	n := 0
	for _, sh := range pv.shards {
		if p := sh.primary(); p != nil {
			n++
			nodes[p.node] = true
			if p.zone != "" {
				zones[p.zone] = true
			}
		}
	}
	msg := fmt.Sprintf("the %d primaries run on %d nodes", n, len(nodes))
	if len(zones) > 0 {
		msg += fmt.Sprintf(" in %d zones (%s)", len(zones), pv.key)
	}
	return msg + ", none beside a replica of its own shard"
}

// hasOrHave is "shard 1 has" or "shards 1, 2 have".
func hasOrHave(idx []string) string {
	if len(idx) == 1 {
		return "shard " + idx[0] + " has"
	}
	return "shards " + strings.Join(idx, ", ") + " have"
}
