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

// Failback keeps the primaries where they survive (spec.primaryPlacement, planned in
// internal/plan/placement.go): each pass reads where the members run (their nodes from
// their ValkeyNodes, the nodes' zones from the nodes' labels), plans the best primaries,
// reports the spread
// (PrimariesSpread, status.shards[].primaryNode and primaryZone, metrics), and, when
// nothing else changes the cluster, makes the plan's first move: one planned failover,
// the same CLUSTER FAILOVER on a replica in sync that a roll makes.

// DefaultFailbackHold is the default FailbackHold.
const DefaultFailbackHold = 10 * time.Second

// nodeLabelsTTL is how long the labels read from a Kubernetes node are used before they
// are read again: zones do not change under running pods, and a node's labels cost a
// request to the API server (no node informer: the operator lists no nodes).
const nodeLabelsTTL = time.Minute

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
func (r *Reconciler) observePlacement(ctx context.Context, s *scope) *plan.Placement {
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
	pv := plan.NewPlacement(&s.Cluster, key, zones, unread)
	ages := r.primaryAges(s)
	for i := range pv.Shards {
		pv.Shards[i].PrimaryFor = ages[pv.Shards[i].Index]
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

// failbackBusy says what keeps failback from moving a primary now, or "": failback
// starts no failover while anything else changes the cluster or the cluster does not
// serve with all its redundancy.
func (s *scope) failbackBusy() string {
	switch {
	case s.step.reason != "":
		return fmt.Sprintf("waiting for the cluster to finish what it is doing (%s)", s.step.reason)
	case !s.Ready():
		return "waiting for the cluster to be Ready, every replica in sync"
	case !s.Settled():
		return "waiting for the cluster to settle"
	case !s.MembersUpToDate():
		return "waiting for the roll to end"
	}
	if _, ok := s.VC.Annotations[v1alpha1.AnnotationFailover]; ok {
		return "waiting for the requested failover"
	}
	for sh := int32(0); sh < s.Shards(); sh++ {
		if m := s.FailoverPending(sh); m != nil {
			return fmt.Sprintf("waiting for %s to complete its takeover of shard %d", m.Name(), sh)
		}
	}
	return ""
}

// reconcilePlacement makes failback's next move (plan.PlanFailback): one planned failover
// per pass, the same a roll makes, on a replica in sync for FailbackHold at least.
func (r *Reconciler) reconcilePlacement(ctx context.Context, s *scope) (time.Duration, error) {
	if s.Place == nil || s.Place.Plan.Holds() {
		return 0, nil
	}
	f := plan.PlanFailback(s.Place.Shards, s.Place.Plan, s.failbackBusy(), plan.FailbackTiming{Hold: r.failbackHold(), Votes: s.VoteWindow()})
	if f.Move == nil {
		s.Place.Step = f.Wait
		if s.Ready() {
			// A serving cluster whose other phases wait for nothing would be at rest, and
			// a pass at rest looks again only when something changes: say what failback
			// waits for (a takeover, time), so passes keep coming.
			s.progress(v1alpha1.ReasonRestoringPlacement, "%s", f.Wait)
		}
		s.lookAgainWithin(f.After)
		return 0, nil
	}
	mv := f.Move
	var to *plan.Member
	for _, m := range s.Active(mv.Shard) {
		if m.Name() == mv.To.Name {
			to = m
		}
	}
	if to == nil {
		return 0, nil
	}
	what := fmt.Sprintf("shard %d: %s takes over from %s on %s: %s", mv.Shard, mv.To.Name, mv.From.Name, where(mv.To), mv.Why)
	if rest := len(s.Place.Plan.Moves) - 1; rest > 0 {
		what += fmt.Sprintf("; %d more planned: %s", rest, plannedMoves(s.Place.Plan.Moves[1:]))
	}
	s.Place.Step = what
	s.progress(v1alpha1.ReasonRestoringPlacement, "%s", what)
	r.event(s.VC, to.Node, eventNormal, v1alpha1.ReasonRestoringPlacement, "Failover", "%s", what)
	if err := r.failoverAs(ctx, s, to, "restoring the primaries' spread", v1alpha1.FailoverPlacement); err != nil {
		return 0, err
	}
	return plan.RequeueFast, nil
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
func where(m plan.Placed) string {
	if m.Zone == "" {
		return "node " + m.Node
	}
	return fmt.Sprintf("node %s (zone %s)", m.Node, m.Zone)
}

// plannedMoves lists moves for messages.
func plannedMoves(ms []plan.PlacementMove) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("shard %d to %s on %s", m.Shard, m.To.Name, where(m.To))
	}
	return strings.Join(out, ", ")
}

// placementCondition reports the spread: True when it holds (Spread) or is as good as
// the nodes allow (BestPossible), False while a better one exists (NotSpread), Unknown
// with policy None or while a primary's node is not known.
func placementCondition(s *scope, gen int64) metav1.Condition {
	if s.Place == nil {
		return conditions.Unknown(v1alpha1.ConditionPrimariesSpread, v1alpha1.ReasonPlacementOff,
			"spec.primaryPlacement.policy is None: the operator neither checks nor restores where the primaries run", gen)
	}
	var noPrimary, unknown []string
	for _, sh := range s.Place.Shards {
		switch p := sh.Primary(); {
		case p == nil:
			noPrimary = append(noPrimary, fmt.Sprint(sh.Index))
		case p.Node == "":
			unknown = append(unknown, fmt.Sprint(sh.Index))
		}
	}
	suffix := ""
	if len(s.Place.Unread) > 0 {
		suffix = "; the labels of nodes " + strings.Join(s.Place.Unread, ", ") + " cannot be read: their zones are not known"
	}
	switch {
	case s.credErr != nil || plan.Empty(s.Topo):
		return conditions.Unknown(v1alpha1.ConditionPrimariesSpread, v1alpha1.ReasonWaiting, "the cluster is being created", gen)
	case len(noPrimary) > 0:
		return conditions.Unknown(v1alpha1.ConditionPrimariesSpread, v1alpha1.ReasonUnknown,
			fmt.Sprintf("%s no primary", hasOrHave(noPrimary)), gen)
	case len(unknown) > 0:
		return conditions.Unknown(v1alpha1.ConditionPrimariesSpread, v1alpha1.ReasonUnknown,
			fmt.Sprintf("the node of the primary of %s is not known yet", plan.ShardList(unknown)), gen)
	}
	p := s.Place.Plan
	switch {
	case p.Holds() && p.Perfect():
		return conditions.New(v1alpha1.ConditionPrimariesSpread, true, v1alpha1.ReasonSpread,
			spreadSummary(s.Place)+suffix, gen)
	case p.Holds():
		return conditions.New(v1alpha1.ConditionPrimariesSpread, true, v1alpha1.ReasonBestPossible,
			"as evenly as the nodes the members run on allow: "+strings.Join(p.Faults, "; ")+suffix, gen)
	}
	msg := strings.Join(p.Faults, "; ") + "; planned: " + plannedMoves(p.Moves)
	if s.Place.Step != "" {
		msg += "; " + s.Place.Step
	} else if s.paused {
		msg += "; the cluster is paused"
	}
	return conditions.New(v1alpha1.ConditionPrimariesSpread, false, v1alpha1.ReasonNotSpread, msg+suffix, gen)
}

// spreadSummary says how the primaries are spread, for a spread that holds.
func spreadSummary(pv *plan.Placement) string {
	nodes, zones := map[string]bool{}, map[string]bool{}
	n := 0
	for _, sh := range pv.Shards {
		if p := sh.Primary(); p != nil {
			n++
			nodes[p.Node] = true
			if p.Zone != "" {
				zones[p.Zone] = true
			}
		}
	}
	msg := fmt.Sprintf("the %d primaries run on %d nodes", n, len(nodes))
	if len(zones) > 0 {
		msg += fmt.Sprintf(" in %d zones (%s)", len(zones), pv.Key)
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
