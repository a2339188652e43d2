package plan

import (
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// Primary placement decides which member of each shard should be its primary so that
// the loss of one Kubernetes node, or of one zone, takes as few primaries as possible.
// It is pure: the input is the shards with their members (node, zone, role, in sync),
// the output the primary each shard should have, the moves that lead there, in order,
// and what does not hold; NewPlacement reads the cluster into it, and the reconciler's
// failback (internal/cluster/failback.go) carries the moves out.
//
// The rule, in order of importance (the score, compared field by field):
//  1. no zone holds two primaries, or as few pairs of them as the zones allow;
//  2. no node holds two primaries, or as few pairs as the nodes allow;
//  3. no primary shares its node with a member of its own shard;
//  4. no primary shares its zone with a member of its own shard;
//  5. and among the choices equal on all of those, the fewest primaries move;
//  6. and among those, the most recently promoted ones (highest config epoch) move: a
//     failback undoes the latest failovers, not an older placement that was fine.
//
// Counting pairs (n primaries in one domain make n(n-1)/2) makes the best choice the
// most even one: with more shards than nodes, no node holds more primaries than another
// plus one, wherever the members allow it. Only members whose node is known count; a
// member without a zone (its node lacks the topology key) counts for its node only.
//
// The best choice is exact, found as a minimum-cost flow (each shard sends one unit
// through the member it picks, to the member's node, to the node's zone; the k-th unit
// through a node or a zone costs k-1 pairs), so a spread that needs several shards to
// move together (shard A can only leave node 1 for node 2 once shard B left node 2 for
// node 3) is found as well as a single move.

// Placed is a member as the placement sees it.
type Placed struct {
	Name string
	// Node is the Kubernetes node its pod runs on; "" when not known (no pod, or a
	// server that does not answer): the member is then no candidate and counts nowhere.
	Node string
	// Zone is the topology key's value on that node; "" for none.
	Zone string
	// primary: it serves the shard.
	Primary bool
	// inSync: a replica linked to the primary and caught up, or the primary itself.
	InSync bool
	// Epoch is the primary's config epoch: the latest failover made the highest.
	Epoch uint64
	// SyncedFor is how long the member has been in sync (its Synced condition).
	SyncedFor time.Duration
}

// PlacedShard is a shard and its members (leaving members left out).
type PlacedShard struct {
	Index   int32
	Members []Placed
	// PrimaryFor is how long its primary has served it, as far as the operator saw (0
	// when it does not know).
	PrimaryFor time.Duration
}

// Primary returns the shard's primary, nil for none.
func (sh PlacedShard) Primary() *Placed {
	for i := range sh.Members {
		if sh.Members[i].Primary {
			return &sh.Members[i]
		}
	}
	return nil
}

// member returns the shard's member called name, nil for none.
func (sh PlacedShard) member(name string) *Placed {
	for i := range sh.Members {
		if sh.Members[i].Name == name {
			return &sh.Members[i]
		}
	}
	return nil
}

// sharesNode reports whether another member of the shard runs on m's node.
func (sh PlacedShard) sharesNode(m Placed) bool {
	for _, o := range sh.Members {
		if o.Name != m.Name && o.Node != "" && o.Node == m.Node {
			return true
		}
	}
	return false
}

// sharesZone reports whether another member of the shard runs in m's zone.
func (sh PlacedShard) sharesZone(m Placed) bool {
	for _, o := range sh.Members {
		if o.Name != m.Name && o.Node != "" && m.Zone != "" && o.Zone == m.Zone {
			return true
		}
	}
	return false
}

// spreadScore measures a choice of primaries; lower is better, field by field.
type spreadScore [6]int

const (
	scoreZonePairs  = iota // pairs of primaries in one zone
	scoreNodePairs         // pairs of primaries on one node
	scoreNodeShared        // primaries on a node with a member of their own shard
	scoreZoneShared        // primaries in a zone with a member of their own shard
	scoreMoves             // shards whose primary changes
	scoreAge               // of the shards that move, how long their primaries have served (ranks)
)

func (a spreadScore) add(b spreadScore) spreadScore {
	for i := range a {
		a[i] += b[i]
	}
	return a
}

func (a spreadScore) neg() spreadScore {
	for i := range a {
		a[i] = -a[i]
	}
	return a
}

// less compares lexicographically.
func (a spreadScore) less(b spreadScore) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// spread is the score without the moves: what the choice is worth, however it was
// reached.
func (a spreadScore) spread() spreadScore {
	a[scoreMoves], a[scoreAge] = 0, 0
	return a
}

// choice maps a shard index to the member chosen as its primary.
type choice map[int32]string

// with returns a copy of c where shard's primary is name.
func (c choice) with(shard int32, name string) choice {
	out := maps.Clone(c)
	if out == nil {
		out = choice{}
	}
	out[shard] = name
	return out
}

// placed yields the shards c chooses a primary for, with that member, where the
// member's node is known.
func (c choice) placed(shards []PlacedShard) iter.Seq2[PlacedShard, *Placed] {
	return func(yield func(PlacedShard, *Placed) bool) {
		for _, sh := range shards {
			name, ok := c[sh.Index]
			if !ok {
				continue
			}
			if m := sh.member(name); m != nil && m.Node != "" && !yield(sh, m) {
				return
			}
		}
	}
}

// currentChoice is the primaries as they are: shards whose primary's node is known.
func currentChoice(shards []PlacedShard) choice {
	out := choice{}
	for _, sh := range shards {
		if p := sh.Primary(); p != nil && p.Node != "" {
			out[sh.Index] = p.Name
		}
	}
	return out
}

// score measures choice c over shards.
func score(shards []PlacedShard, c choice) spreadScore {
	var s spreadScore
	nodes, zones := map[string]int{}, map[string]int{}
	for sh, m := range c.placed(shards) {
		s[scoreNodePairs] += nodes[m.Node]
		nodes[m.Node]++
		if m.Zone != "" {
			s[scoreZonePairs] += zones[m.Zone]
			zones[m.Zone]++
		}
		if sh.sharesNode(*m) {
			s[scoreNodeShared]++
		}
		if sh.sharesZone(*m) {
			s[scoreZoneShared]++
		}
		if !m.Primary {
			s[scoreMoves]++
		}
	}
	return s
}

// PlacementMove is one planned failover: member to takes over shard from member from.
type PlacementMove struct {
	Shard    int32
	From, To Placed
	// Why says what the move mends, as the state before it shows.
	Why string
}

// PlacementPlan is the placement's verdict on a cluster.
type PlacementPlan struct {
	// current is the score of the primaries as they are, best the best reachable one
	// (both with their moves).
	current, best spreadScore
	// target is the best choice: the primary each shard should have.
	target choice
	// Moves lead from the current primaries to target, in the order to make them.
	Moves []PlacementMove
	// Faults says what does not hold now (a node or zone with several primaries, a
	// primary next to its own replica), sorted.
	Faults []string
}

// Holds reports whether the current primaries are as well spread as the members allow.
func (p PlacementPlan) Holds() bool { return len(p.Moves) == 0 }

// Perfect reports whether the current primaries keep the whole rule: nothing shared.
func (p PlacementPlan) Perfect() bool { return p.current.spread() == spreadScore{} }

// PlanPlacement finds the best primaries for shards and the moves that lead there. Only
// members whose node is known are candidates; a shard without a primary on a known node
// keeps what it has and counts for nothing.
func PlanPlacement(shards []PlacedShard) PlacementPlan {
	shards = slices.Clone(shards)
	sort.Slice(shards, func(i, j int) bool { return shards[i].Index < shards[j].Index })
	cur := currentChoice(shards)
	p := PlacementPlan{current: score(shards, cur), Faults: faults(shards, cur)}
	if p.Perfect() {
		p.best, p.target = p.current, cur
		return p
	}
	p.target = bestChoice(shards, cur)
	p.best = score(shards, p.target)
	if !p.best.less(p.current) {
		// The flow is exact; this only guards a tie it could resolve otherwise.
		p.best, p.target = p.current, cur
		return p
	}
	p.Moves = orderMoves(shards, cur, p.target)
	return p
}

// orderMoves orders the moves from cur to target: each next one the move whose result
// scores best, the lowest shard first among equals. A move that alone scores no better
// (half of an exchange) comes when nothing better is left.
func orderMoves(shards []PlacedShard, cur, target choice) []PlacementMove {
	state := maps.Clone(cur)
	byIndex := map[int32]PlacedShard{}
	var pending []int32
	for _, sh := range shards {
		byIndex[sh.Index] = sh
		if t, ok := target[sh.Index]; ok && t != cur[sh.Index] {
			pending = append(pending, sh.Index)
		}
	}
	t := newTally(shards, state)
	var out []PlacementMove
	for len(pending) > 0 {
		bestAt := -1
		var bestDelta spreadScore
		for i, idx := range pending {
			sh := byIndex[idx]
			d := t.delta(sh, *sh.member(state[idx]), *sh.member(target[idx]))
			if bestAt < 0 || d.less(bestDelta) {
				bestAt, bestDelta = i, d
			}
		}
		idx := pending[bestAt]
		sh := byIndex[idx]
		from, to := *sh.member(state[idx]), *sh.member(target[idx])
		out = append(out, PlacementMove{Shard: idx, From: from, To: to, Why: t.why(sh, from)})
		t.move(sh, from, to)
		state[idx] = target[idx]
		pending = slices.Delete(pending, bestAt, bestAt+1)
	}
	return out
}

// tally counts the primaries of a choice per node and zone, by shard.
type tally struct {
	nodes, zones map[string][]int32
}

func newTally(shards []PlacedShard, c choice) *tally {
	t := &tally{nodes: map[string][]int32{}, zones: map[string][]int32{}}
	for _, sh := range shards {
		if m := sh.member(c[sh.Index]); m != nil && m.Node != "" {
			t.add(sh.Index, *m)
		}
	}
	return t
}

func (t *tally) add(shard int32, m Placed) {
	t.nodes[m.Node] = append(t.nodes[m.Node], shard)
	if m.Zone != "" {
		t.zones[m.Zone] = append(t.zones[m.Zone], shard)
	}
}

func (t *tally) remove(shard int32, m Placed) {
	drop := func(xs []int32) []int32 { return slices.DeleteFunc(xs, func(x int32) bool { return x == shard }) }
	t.nodes[m.Node] = drop(t.nodes[m.Node])
	if m.Zone != "" {
		t.zones[m.Zone] = drop(t.zones[m.Zone])
	}
}

func (t *tally) move(sh PlacedShard, from, to Placed) {
	t.remove(sh.Index, from)
	t.add(sh.Index, to)
}

// delta is how the spread changes when shard sh's primary moves from one member to
// another.
func (t *tally) delta(sh PlacedShard, from, to Placed) spreadScore {
	var d spreadScore
	d[scoreNodePairs] = len(t.nodes[to.Node]) - (len(t.nodes[from.Node]) - 1)
	if to.Node == from.Node {
		d[scoreNodePairs] = 0
	}
	zoneCount := func(z string) int { return len(t.zones[z]) }
	if to.Zone != from.Zone {
		if to.Zone != "" {
			d[scoreZonePairs] += zoneCount(to.Zone)
		}
		if from.Zone != "" {
			d[scoreZonePairs] -= zoneCount(from.Zone) - 1
		}
	}
	d[scoreNodeShared] = b2i(sh.sharesNode(to)) - b2i(sh.sharesNode(from))
	d[scoreZoneShared] = b2i(sh.sharesZone(to)) - b2i(sh.sharesZone(from))
	return d
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// why says what shard sh's primary from breaks in the tally: the others on its node
// or in its zone, or its own replica beside it.
func (t *tally) why(sh PlacedShard, from Placed) string {
	others := func(xs []int32) []string {
		var out []string
		for _, x := range xs {
			if x != sh.Index {
				out = append(out, fmt.Sprint(x))
			}
		}
		return out
	}
	onNode := others(t.nodes[from.Node])
	var inZone []string
	if from.Zone != "" {
		inZone = others(t.zones[from.Zone])
	}
	var out []string
	if len(inZone) > 0 {
		out = append(out, fmt.Sprintf("zone %s also holds the primary of %s", from.Zone, ShardList(inZone)))
	}
	if len(onNode) > 0 {
		out = append(out, fmt.Sprintf("node %s also holds the primary of %s", from.Node, ShardList(onNode)))
	}
	if sh.sharesNode(from) {
		out = append(out, fmt.Sprintf("node %s also runs a replica of shard %d", from.Node, sh.Index))
	} else if sh.sharesZone(from) {
		out = append(out, fmt.Sprintf("zone %s also runs a replica of shard %d", from.Zone, sh.Index))
	}
	if len(out) == 0 {
		// Half of an exchange: it frees its place for another shard's primary.
		return fmt.Sprintf("node %s is where another shard's primary is better placed", from.Node)
	}
	return strings.Join(out, "; ")
}

// ShardList is "shard 1" or "shards 1, 2".
func ShardList(idx []string) string {
	if len(idx) == 1 {
		return "shard " + idx[0]
	}
	return "shards " + strings.Join(idx, ", ")
}

// faults lists what choice c breaks: the nodes and zones with several primaries, the
// primaries beside a member of their own shard.
func faults(shards []PlacedShard, c choice) []string {
	nodes, zones := map[string][]string{}, map[string][]string{}
	var out []string
	for sh, m := range c.placed(shards) {
		nodes[m.Node] = append(nodes[m.Node], fmt.Sprint(sh.Index))
		if m.Zone != "" {
			zones[m.Zone] = append(zones[m.Zone], fmt.Sprint(sh.Index))
		}
		if sh.sharesNode(*m) {
			out = append(out, fmt.Sprintf("shard %d's primary %s shares node %s with a replica of its shard", sh.Index, m.Name, m.Node))
		}
	}
	for z, idx := range zones {
		if len(idx) > 1 {
			out = append(out, fmt.Sprintf("zone %s holds the primaries of shards %s", z, strings.Join(idx, ", ")))
		}
	}
	for n, idx := range nodes {
		if len(idx) > 1 {
			out = append(out, fmt.Sprintf("node %s holds the primaries of shards %s", n, strings.Join(idx, ", ")))
		}
	}
	sort.Strings(out)
	return out
}

// BestForSpread picks, among candidates (members of shard, in the caller's order of
// preference), the one whose node and zone keep the spread best given the other shards'
// primaries as they are: the first of the best. It is the choice of a single failover
// (a roll's, a leaving primary's, a lost primary's), which cannot wait for a plan. A
// candidate whose node is not known is taken only when no candidate's node is.
func BestForSpread(shards []PlacedShard, shard int32, candidates []string) string {
	if len(candidates) == 0 {
		return ""
	}
	i := slices.IndexFunc(shards, func(sh PlacedShard) bool { return sh.Index == shard })
	if i < 0 {
		return candidates[0]
	}
	target := shards[i]
	others := currentChoice(shards)
	delete(others, shard)
	best, found := candidates[0], false
	var bestScore spreadScore
	for _, name := range candidates {
		if m := target.member(name); m == nil || m.Node == "" {
			continue
		}
		next := others.with(shard, name)
		if s := score(shards, next).spread(); !found || s.less(bestScore) {
			best, bestScore, found = name, s, true
		}
	}
	return best
}

// NewPrimaries picks the first primary of each shard that has none (a new cluster, a
// new shard): for each shard of candidates in index order, BestForSpread among its
// candidates (in the caller's order of preference), given the primaries there are and
// those picked before it.
func NewPrimaries(shards []PlacedShard, candidates map[int32][]string) map[int32]string {
	shards = slices.Clone(shards)
	idx := slices.Sorted(maps.Keys(candidates))
	out := map[int32]string{}
	for _, sh := range idx {
		pick := BestForSpread(shards, sh, candidates[sh])
		out[sh] = pick
		for i := range shards {
			if shards[i].Index != sh {
				continue
			}
			ms := slices.Clone(shards[i].Members)
			for j := range ms {
				ms[j].Primary = ms[j].Name == pick
			}
			shards[i].Members = ms
		}
	}
	return out
}

// bestChoice is the best choice of primaries: a minimum-cost flow from the shards
// through the nodes of their candidate members and the nodes' zones. Its cost is the
// score: the k-th primary through a node or a zone adds k-1 pairs (an arc whose cost
// grows with its flow), a member beside its own shard adds to the shared counts, a
// member that is not the primary adds a move.
func bestChoice(shards []PlacedShard, cur choice) choice {
	g := &flowGraph{}
	src, sink := g.vertex(), g.vertex()
	nodeV, zoneV := map[string]int{}, map[string]int{}
	nodeZone := map[string]string{}
	var nodes []string // in the order met, for a deterministic graph
	type pick struct {
		shard int32
		name  string
		arc   int
	}
	var picks []pick
	age := ageRanks(shards, cur)
	for _, sh := range shards {
		if _, ok := cur[sh.Index]; !ok {
			continue // its primary's node is not known: it keeps its primary
		}
		sv := g.vertex()
		g.arc(src, sv, 1, spreadScore{}, -1)
		// One arc per node: the member of the shard on it that costs least.
		var mine []pick
		var costs []spreadScore
		at := map[string]int{} // node -> index into mine
		for _, m := range sh.Members {
			if m.Node == "" {
				continue
			}
			if _, ok := nodeV[m.Node]; !ok {
				nodeV[m.Node] = g.vertex()
				nodeZone[m.Node] = m.Zone
				nodes = append(nodes, m.Node)
			}
			var c spreadScore
			if sh.sharesNode(m) {
				c[scoreNodeShared] = 1
			}
			if sh.sharesZone(m) {
				c[scoreZoneShared] = 1
			}
			if m.Name != cur[sh.Index] {
				c[scoreMoves], c[scoreAge] = 1, age[sh.Index]
			}
			if i, ok := at[m.Node]; ok {
				if c.less(costs[i]) {
					mine[i].name, costs[i] = m.Name, c
				}
				continue
			}
			at[m.Node] = len(mine)
			mine = append(mine, pick{shard: sh.Index, name: m.Name})
			costs = append(costs, c)
		}
		for i := range mine {
			mine[i].arc = g.arc(sv, nodeV[sh.member(mine[i].name).Node], 1, costs[i], -1)
		}
		picks = append(picks, mine...)
	}
	for _, n := range nodes {
		to := sink
		if z := nodeZone[n]; z != "" {
			if _, ok := zoneV[z]; !ok {
				zoneV[z] = g.vertex()
				g.arc(zoneV[z], sink, len(cur), spreadScore{}, scoreZonePairs)
			}
			to = zoneV[z]
		}
		g.arc(nodeV[n], to, len(cur), spreadScore{}, scoreNodePairs)
	}
	for g.augment(src, sink) {
	}
	out := choice{}
	for _, p := range picks {
		if g.arcs[p.arc].flow == 1 {
			out[p.shard] = p.name
		}
	}
	return out
}

// ageRanks ranks the shards of cur by how recently their primary was promoted: 0 for
// the highest config epoch, the lowest shard first among equals.
func ageRanks(shards []PlacedShard, cur choice) map[int32]int {
	type aged struct {
		index int32
		epoch uint64
	}
	var all []aged
	for _, sh := range shards {
		if name, ok := cur[sh.Index]; ok {
			all = append(all, aged{sh.Index, sh.member(name).Epoch})
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].epoch != all[j].epoch {
			return all[i].epoch > all[j].epoch
		}
		return all[i].index < all[j].index
	})
	out := make(map[int32]int, len(all))
	for r, a := range all {
		out[a.index] = r
	}
	return out
}

// flowGraph is a flow network whose costs are scores. An arc may be convex: its k-th
// unit costs k-1 in one field of the score (pairs in a node or a zone).
type flowGraph struct {
	arcs []flowArc
	// adj lists, per vertex, the arcs leaving it: index*2 for an arc's forward
	// direction, index*2+1 for its reverse (taking flow back).
	adj [][]int
}

type flowArc struct {
	from, to, capacity, flow int
	cost                     spreadScore
	// convex is the score field its k-th unit adds k-1 to, or -1.
	convex int
}

func (g *flowGraph) vertex() int {
	g.adj = append(g.adj, nil)
	return len(g.adj) - 1
}

// arc adds an arc and returns its index.
func (g *flowGraph) arc(u, v, capacity int, c spreadScore, convex int) int {
	i := len(g.arcs)
	g.arcs = append(g.arcs, flowArc{from: u, to: v, capacity: capacity, cost: c, convex: convex})
	g.adj[u] = append(g.adj[u], 2*i)
	g.adj[v] = append(g.adj[v], 2*i+1)
	return i
}

// residual returns, for a direction of an arc (see adj), where it leads, whether a unit
// can go that way, and what that unit costs.
func (g *flowGraph) residual(dir int) (to int, ok bool, c spreadScore) {
	a := &g.arcs[dir/2]
	if dir%2 == 0 {
		c = a.cost
		if a.convex >= 0 {
			c[a.convex] += a.flow
		}
		return a.to, a.flow < a.capacity, c
	}
	c = a.cost
	if a.convex >= 0 {
		c[a.convex] += a.flow - 1
	}
	return a.from, a.flow > 0, c.neg()
}

// augment sends one unit along a cheapest path from s to t (Bellman-Ford with a queue;
// the residual graph of successive cheapest paths has no negative cycle), and reports
// whether there was one.
func (g *flowGraph) augment(s, t int) bool {
	n := len(g.adj)
	dist := make([]spreadScore, n)
	reached := make([]bool, n)
	inQueue := make([]bool, n)
	via := make([]int, n)
	reached[s] = true
	queue := []int{s}
	inQueue[s] = true
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		inQueue[u] = false
		for _, dir := range g.adj[u] {
			v, ok, c := g.residual(dir)
			if !ok {
				continue
			}
			d := dist[u].add(c)
			if !reached[v] || d.less(dist[v]) {
				dist[v], reached[v], via[v] = d, true, dir
				if !inQueue[v] {
					queue = append(queue, v)
					inQueue[v] = true
				}
			}
		}
	}
	if !reached[t] {
		return false
	}
	for v := t; v != s; {
		dir := via[v]
		a := &g.arcs[dir/2]
		if dir%2 == 0 {
			a.flow++
			v = a.from
		} else {
			a.flow--
			v = a.to
		}
	}
	return true
}

// FailbackTiming holds the waits of PlanFailback.
type FailbackTiming struct {
	// Hold is how long the member taking over must have been in sync.
	Hold time.Duration
	// Votes is how long the shard's primary must have served before it is failed over:
	// Valkey's primaries refuse to vote twice about one primary within twice the
	// cluster-node-timeout, and a manual failover that gets no votes holds its primary's
	// writes until it times out.
	Votes time.Duration
}

// FailbackPlan is failback's next step: a move to make now, or why none is made (and,
// when only time is missing, after how long to look again).
type FailbackPlan struct {
	Move  *PlacementMove
	Wait  string
	After time.Duration
}

// PlanFailback decides on plan's first move. It is made only when nothing else changes
// the cluster (busy says what does: a roll, a scale, a failover in flight, a cluster
// not healthy), every member of its shard is in sync (a planned failover then loses no
// write, and the shard keeps all its replicas through it), and the member taking over
// has been in sync for hold at least (a server that keeps crashing is not made primary
// each time it comes back), and the shard's primary has served long enough for the
// voters (timing.votes). One move per pass; the next pass plans again from what the
// servers then say.
func PlanFailback(shards []PlacedShard, plan PlacementPlan, busy string, timing FailbackTiming) FailbackPlan {
	if plan.Holds() {
		return FailbackPlan{}
	}
	if busy != "" {
		return FailbackPlan{Wait: busy}
	}
	m := plan.Moves[0]
	var served time.Duration
	for _, sh := range shards {
		if sh.Index != m.Shard {
			continue
		}
		served = sh.PrimaryFor
		for _, o := range sh.Members {
			if !o.InSync {
				return FailbackPlan{Wait: fmt.Sprintf("shard %d: waiting for %s to be in sync before %s takes over", m.Shard, o.Name, m.To.Name)}
			}
		}
	}
	if m.To.SyncedFor < timing.Hold {
		return FailbackPlan{After: timing.Hold - m.To.SyncedFor, Wait: fmt.Sprintf(
			"shard %d: %s takes over once it has been in sync for %s (%s so far)", m.Shard, m.To.Name, timing.Hold, m.To.SyncedFor.Round(time.Second))}
	}
	if served < timing.Votes {
		return FailbackPlan{After: timing.Votes - served, Wait: fmt.Sprintf(
			"shard %d: %s takes over once %s has served for %s, when the primaries vote on the shard again (%s so far)",
			m.Shard, m.To.Name, m.From.Name, timing.Votes, served.Round(time.Second))}
	}
	return FailbackPlan{Move: &m}
}

// Placement is what a pass knows of where the members run; nil with policy None.
type Placement struct {
	// Key is the topology key whose values are the zones.
	Key string
	// Zones maps a Kubernetes node to its zone ("" for none).
	Zones map[string]string
	// Unread names the nodes whose labels could not be read, with why.
	Unread []string
	// Shards are the shards of the spec as the planner sees them.
	Shards []PlacedShard
	// Plan is the planner's verdict on them.
	Plan PlacementPlan
	// Step is what failback did or waits for this pass (set by reconcilePlacement).
	Step string
	// First is the first primary chosen for each shard that has none (Cluster.Candidate),
	// once per pass.
	First map[int32]string
}

// VoteWindow is how long a shard's primary must have served before failback fails it
// over: Valkey's primaries vote about one primary once per twice the node timeout, and
// TakeoverMargin covers the clocks.
func (c *Cluster) VoteWindow() time.Duration { return 2*NodeTimeout(c.VC) + TakeoverMargin }

// NewPlacement plans the spec's shards with the zones given (node to zone).
func NewPlacement(c *Cluster, key string, zones map[string]string, unread []string) *Placement {
	pv := &Placement{Key: key, Zones: zones, Unread: unread, Shards: c.PlacedShards(zones)}
	pv.Plan = PlanPlacement(pv.Shards)
	return pv
}

// PlacedShards is the spec's shards as the planner sees them: each active member with
// the node its pod runs on (when its server answers), that node's zone, whether it is
// the shard's primary, in sync with it, and for how long.
func (c *Cluster) PlacedShards(zones map[string]string) []PlacedShard {
	var out []PlacedShard
	for sh := int32(0); sh < c.Shards(); sh++ {
		p := c.Topo.PrimaryOf(sh)
		ps := PlacedShard{Index: sh}
		for _, m := range c.Active(sh) {
			pm := Placed{Name: m.Name(), Primary: m == p, InSync: m == p || Synced(m, p)}
			if m.Reachable {
				pm.Node = m.Node.Status.NodeName
				pm.Zone = zones[pm.Node]
			}
			if pm.Primary {
				pm.Epoch = m.Self.ConfigEpoch
			}
			if cond := conditions.Get(m.Node.Status.Conditions, v1alpha1.ConditionSynced); pm.InSync && cond != nil && cond.Status == metav1.ConditionTrue {
				pm.SyncedFor = c.Topo.Now.Sub(cond.LastTransitionTime.Time)
			}
			ps.Members = append(ps.Members, pm)
		}
		out = append(out, ps)
	}
	return out
}

// SpreadChoice picks, among candidates of shard sh in the caller's order of preference,
// the one whose node and zone keep the primaries spread (the first with policy None).
func (c *Cluster) SpreadChoice(sh int32, candidates []*Member) *Member {
	if len(candidates) == 0 {
		return nil
	}
	if c.Place == nil {
		return candidates[0]
	}
	names := make([]string, len(candidates))
	for i, m := range candidates {
		names[i] = m.Name()
	}
	pick := BestForSpread(c.Place.Shards, sh, names)
	for _, m := range candidates {
		if m.Name() == pick {
			return m
		}
	}
	return candidates[0]
}

// ByOffset orders replicas from the most caught up, keeping the order of equals.
func ByOffset(ms []*Member) []*Member {
	out := append([]*Member(nil), ms...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Repl.Offset > out[j].Repl.Offset })
	return out
}

// MostCaughtUpAll returns the replicas with the highest offset.
func MostCaughtUpAll(ms []*Member) []*Member {
	best := MostCaughtUp(ms)
	if best == nil {
		return nil
	}
	var out []*Member
	for _, m := range ms {
		if m.Repl.Offset == best.Repl.Offset {
			out = append(out, m)
		}
	}
	return out
}

// MostCaughtUp returns the replica with the highest replication offset, nil for none.
func MostCaughtUp(ms []*Member) *Member {
	if len(ms) == 0 {
		return nil
	}
	best := ms[0]
	for _, m := range ms[1:] {
		if m.Repl.Offset > best.Repl.Offset {
			best = m
		}
	}
	return best
}
