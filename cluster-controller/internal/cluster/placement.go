package cluster

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// Primary placement decides which member of each shard should be its primary so that
// the loss of one Kubernetes node, or of one zone, takes as few primaries as possible.
// It is pure: the input is the shards with their members (node, zone, role, in sync),
// the output the primary each shard should have, the moves that lead there, in order,
// and what does not hold; failback.go reads the cluster into it and carries the moves
// out.
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

// placed is a member as the placement sees it.
type placed struct {
	name string
	// node is the Kubernetes node its pod runs on; "" when not known (no pod, or a
	// server that does not answer): the member is then no candidate and counts nowhere.
	node string
	// zone is the topology key's value on that node; "" for none.
	zone string
	// primary: it serves the shard.
	primary bool
	// inSync: a replica linked to the primary and caught up, or the primary itself.
	inSync bool
	// epoch is the primary's config epoch: the latest failover made the highest.
	epoch uint64
	// syncedFor is how long the member has been in sync (its Synced condition).
	syncedFor time.Duration
}

// placedShard is a shard and its members (leaving members left out).
type placedShard struct {
	index   int32
	members []placed
	// primaryFor is how long its primary has served it, as far as the operator saw (0
	// when it does not know).
	primaryFor time.Duration
}

// primary returns the shard's primary, nil for none.
func (sh placedShard) primary() *placed {
	for i := range sh.members {
		if sh.members[i].primary {
			return &sh.members[i]
		}
	}
	return nil
}

// member returns the shard's member called name, nil for none.
func (sh placedShard) member(name string) *placed {
	for i := range sh.members {
		if sh.members[i].name == name {
			return &sh.members[i]
		}
	}
	return nil
}

// sharesNode reports whether another member of the shard runs on m's node.
func (sh placedShard) sharesNode(m placed) bool {
	for _, o := range sh.members {
		if o.name != m.name && o.node != "" && o.node == m.node {
			return true
		}
	}
	return false
}

// sharesZone reports whether another member of the shard runs in m's zone.
func (sh placedShard) sharesZone(m placed) bool {
	for _, o := range sh.members {
		if o.name != m.name && o.node != "" && m.zone != "" && o.zone == m.zone {
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

// currentChoice is the primaries as they are: shards whose primary's node is known.
func currentChoice(shards []placedShard) choice {
	out := choice{}
	for _, sh := range shards {
		if p := sh.primary(); p != nil && p.node != "" {
			out[sh.index] = p.name
		}
	}
	return out
}

// score measures choice c over shards.
func score(shards []placedShard, c choice) spreadScore {
	var s spreadScore
	nodes, zones := map[string]int{}, map[string]int{}
	for _, sh := range shards {
		name, ok := c[sh.index]
		if !ok {
			continue
		}
		m := sh.member(name)
		if m == nil || m.node == "" {
			continue
		}
		s[scoreNodePairs] += nodes[m.node]
		nodes[m.node]++
		if m.zone != "" {
			s[scoreZonePairs] += zones[m.zone]
			zones[m.zone]++
		}
		if sh.sharesNode(*m) {
			s[scoreNodeShared]++
		}
		if sh.sharesZone(*m) {
			s[scoreZoneShared]++
		}
		if !m.primary {
			s[scoreMoves]++
		}
	}
	return s
}

// placementMove is one planned failover: member to takes over shard from member from.
type placementMove struct {
	shard    int32
	from, to placed
	// why says what the move mends, as the state before it shows.
	why string
}

// placementPlan is the placement's verdict on a cluster.
type placementPlan struct {
	// current is the score of the primaries as they are, best the best reachable one
	// (both with their moves).
	current, best spreadScore
	// target is the best choice: the primary each shard should have.
	target choice
	// moves lead from the current primaries to target, in the order to make them.
	moves []placementMove
	// faults says what does not hold now (a node or zone with several primaries, a
	// primary next to its own replica), sorted.
	faults []string
}

// holds reports whether the current primaries are as well spread as the members allow.
func (p placementPlan) holds() bool { return len(p.moves) == 0 }

// perfect reports whether the current primaries keep the whole rule: nothing shared.
func (p placementPlan) perfect() bool { return p.current.spread() == spreadScore{} }

// planPlacement finds the best primaries for shards and the moves that lead there. Only
// members whose node is known are candidates; a shard without a primary on a known node
// keeps what it has and counts for nothing.
func planPlacement(shards []placedShard) placementPlan {
	shards = slices.Clone(shards)
	sort.Slice(shards, func(i, j int) bool { return shards[i].index < shards[j].index })
	cur := currentChoice(shards)
	p := placementPlan{current: score(shards, cur), faults: faults(shards, cur)}
	if p.perfect() {
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
	p.moves = orderMoves(shards, cur, p.target)
	return p
}

// orderMoves orders the moves from cur to target: each next one the move whose result
// scores best, the lowest shard first among equals. A move that alone scores no better
// (half of an exchange) comes when nothing better is left.
func orderMoves(shards []placedShard, cur, target choice) []placementMove {
	state := maps.Clone(cur)
	byIndex := map[int32]placedShard{}
	var pending []int32
	for _, sh := range shards {
		byIndex[sh.index] = sh
		if t, ok := target[sh.index]; ok && t != cur[sh.index] {
			pending = append(pending, sh.index)
		}
	}
	t := newTally(shards, state)
	var out []placementMove
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
		out = append(out, placementMove{shard: idx, from: from, to: to, why: t.why(sh, from)})
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

func newTally(shards []placedShard, c choice) *tally {
	t := &tally{nodes: map[string][]int32{}, zones: map[string][]int32{}}
	for _, sh := range shards {
		if m := sh.member(c[sh.index]); m != nil && m.node != "" {
			t.add(sh.index, *m)
		}
	}
	return t
}

func (t *tally) add(shard int32, m placed) {
	t.nodes[m.node] = append(t.nodes[m.node], shard)
	if m.zone != "" {
		t.zones[m.zone] = append(t.zones[m.zone], shard)
	}
}

func (t *tally) remove(shard int32, m placed) {
	drop := func(xs []int32) []int32 { return slices.DeleteFunc(xs, func(x int32) bool { return x == shard }) }
	t.nodes[m.node] = drop(t.nodes[m.node])
	if m.zone != "" {
		t.zones[m.zone] = drop(t.zones[m.zone])
	}
}

func (t *tally) move(sh placedShard, from, to placed) {
	t.remove(sh.index, from)
	t.add(sh.index, to)
}

// delta is how the spread changes when shard sh's primary moves from one member to
// another.
func (t *tally) delta(sh placedShard, from, to placed) spreadScore {
	var d spreadScore
	d[scoreNodePairs] = len(t.nodes[to.node]) - (len(t.nodes[from.node]) - 1)
	if to.node == from.node {
		d[scoreNodePairs] = 0
	}
	zoneCount := func(z string) int { return len(t.zones[z]) }
	if to.zone != from.zone {
		if to.zone != "" {
			d[scoreZonePairs] += zoneCount(to.zone)
		}
		if from.zone != "" {
			d[scoreZonePairs] -= zoneCount(from.zone) - 1
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
func (t *tally) why(sh placedShard, from placed) string {
	others := func(xs []int32) []string {
		var out []string
		for _, x := range xs {
			if x != sh.index {
				out = append(out, fmt.Sprint(x))
			}
		}
		return out
	}
	onNode := others(t.nodes[from.node])
	var inZone []string
	if from.zone != "" {
		inZone = others(t.zones[from.zone])
	}
	var out []string
	if len(inZone) > 0 {
		out = append(out, fmt.Sprintf("zone %s also holds the primary of %s", from.zone, shardList(inZone)))
	}
	if len(onNode) > 0 {
		out = append(out, fmt.Sprintf("node %s also holds the primary of %s", from.node, shardList(onNode)))
	}
	if sh.sharesNode(from) {
		out = append(out, fmt.Sprintf("node %s also runs a replica of shard %d", from.node, sh.index))
	} else if sh.sharesZone(from) {
		out = append(out, fmt.Sprintf("zone %s also runs a replica of shard %d", from.zone, sh.index))
	}
	if len(out) == 0 {
		// Half of an exchange: it frees its place for another shard's primary.
		return fmt.Sprintf("node %s is where another shard's primary is better placed", from.node)
	}
	return strings.Join(out, "; ")
}

// shardList is "shard 1" or "shards 1, 2".
func shardList(idx []string) string {
	if len(idx) == 1 {
		return "shard " + idx[0]
	}
	return "shards " + strings.Join(idx, ", ")
}

// faults lists what choice c breaks: the nodes and zones with several primaries, the
// primaries beside a member of their own shard.
func faults(shards []placedShard, c choice) []string {
	nodes, zones := map[string][]string{}, map[string][]string{}
	var out []string
	for _, sh := range shards {
		name, ok := c[sh.index]
		if !ok {
			continue
		}
		m := sh.member(name)
		if m == nil || m.node == "" {
			continue
		}
		nodes[m.node] = append(nodes[m.node], fmt.Sprint(sh.index))
		if m.zone != "" {
			zones[m.zone] = append(zones[m.zone], fmt.Sprint(sh.index))
		}
		if sh.sharesNode(*m) {
			out = append(out, fmt.Sprintf("shard %d's primary %s shares node %s with a replica of its shard", sh.index, m.name, m.node))
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

// bestForSpread picks, among candidates (members of shard, in the caller's order of
// preference), the one whose node and zone keep the spread best given the other shards'
// primaries as they are: the first of the best. It is the choice of a single failover
// (a roll's, a leaving primary's, a lost primary's), which cannot wait for a plan. A
// candidate whose node is not known is taken only when no candidate's node is.
func bestForSpread(shards []placedShard, shard int32, candidates []string) string {
	if len(candidates) == 0 {
		return ""
	}
	i := slices.IndexFunc(shards, func(sh placedShard) bool { return sh.index == shard })
	if i < 0 {
		return candidates[0]
	}
	target := shards[i]
	others := currentChoice(shards)
	delete(others, shard)
	best, found := candidates[0], false
	var bestScore spreadScore
	for _, name := range candidates {
		if m := target.member(name); m == nil || m.node == "" {
			continue
		}
		next := others.with(shard, name)
		if s := score(shards, next).spread(); !found || s.less(bestScore) {
			best, bestScore, found = name, s, true
		}
	}
	return best
}

// newPrimaries picks the first primary of each shard that has none (a new cluster, a
// new shard): for each shard of candidates in index order, bestForSpread among its
// candidates (in the caller's order of preference), given the primaries there are and
// those picked before it.
func newPrimaries(shards []placedShard, candidates map[int32][]string) map[int32]string {
	shards = slices.Clone(shards)
	idx := slices.Sorted(maps.Keys(candidates))
	out := map[int32]string{}
	for _, sh := range idx {
		pick := bestForSpread(shards, sh, candidates[sh])
		out[sh] = pick
		for i := range shards {
			if shards[i].index != sh {
				continue
			}
			ms := slices.Clone(shards[i].members)
			for j := range ms {
				ms[j].primary = ms[j].name == pick
			}
			shards[i].members = ms
		}
	}
	return out
}

// bestChoice is the best choice of primaries: a minimum-cost flow from the shards
// through the nodes of their candidate members and the nodes' zones. Its cost is the
// score: the k-th primary through a node or a zone adds k-1 pairs (an arc whose cost
// grows with its flow), a member beside its own shard adds to the shared counts, a
// member that is not the primary adds a move.
func bestChoice(shards []placedShard, cur choice) choice {
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
		if _, ok := cur[sh.index]; !ok {
			continue // its primary's node is not known: it keeps its primary
		}
		sv := g.vertex()
		g.arc(src, sv, 1, spreadScore{}, -1)
		// One arc per node: the member of the shard on it that costs least.
		var mine []pick
		var costs []spreadScore
		at := map[string]int{} // node -> index into mine
		for _, m := range sh.members {
			if m.node == "" {
				continue
			}
			if _, ok := nodeV[m.node]; !ok {
				nodeV[m.node] = g.vertex()
				nodeZone[m.node] = m.zone
				nodes = append(nodes, m.node)
			}
			var c spreadScore
			if sh.sharesNode(m) {
				c[scoreNodeShared] = 1
			}
			if sh.sharesZone(m) {
				c[scoreZoneShared] = 1
			}
			if m.name != cur[sh.index] {
				c[scoreMoves], c[scoreAge] = 1, age[sh.index]
			}
			if i, ok := at[m.node]; ok {
				if c.less(costs[i]) {
					mine[i].name, costs[i] = m.name, c
				}
				continue
			}
			at[m.node] = len(mine)
			mine = append(mine, pick{shard: sh.index, name: m.name})
			costs = append(costs, c)
		}
		for i := range mine {
			mine[i].arc = g.arc(sv, nodeV[sh.member(mine[i].name).node], 1, costs[i], -1)
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
func ageRanks(shards []placedShard, cur choice) map[int32]int {
	type aged struct {
		index int32
		epoch uint64
	}
	var all []aged
	for _, sh := range shards {
		if name, ok := cur[sh.index]; ok {
			all = append(all, aged{sh.index, sh.member(name).epoch})
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

// failbackTiming holds the waits of planFailback.
type failbackTiming struct {
	// hold is how long the member taking over must have been in sync.
	hold time.Duration
	// votes is how long the shard's primary must have served before it is failed over:
	// Valkey's primaries refuse to vote twice about one primary within twice the
	// cluster-node-timeout, and a manual failover that gets no votes holds its primary's
	// writes until it times out.
	votes time.Duration
}

// failbackPlan is failback's next step: a move to make now, or why none is made (and,
// when only time is missing, after how long to look again).
type failbackPlan struct {
	move  *placementMove
	wait  string
	after time.Duration
}

// planFailback decides on plan's first move. It is made only when nothing else changes
// the cluster (busy says what does: a roll, a scale, a failover in flight, a cluster
// not healthy), every member of its shard is in sync (a planned failover then loses no
// write, and the shard keeps all its replicas through it), and the member taking over
// has been in sync for hold at least (a server that keeps crashing is not made primary
// each time it comes back), and the shard's primary has served long enough for the
// voters (timing.votes). One move per pass; the next pass plans again from what the
// servers then say.
func planFailback(shards []placedShard, plan placementPlan, busy string, timing failbackTiming) failbackPlan {
	if plan.holds() {
		return failbackPlan{}
	}
	if busy != "" {
		return failbackPlan{wait: busy}
	}
	m := plan.moves[0]
	var served time.Duration
	for _, sh := range shards {
		if sh.index != m.shard {
			continue
		}
		served = sh.primaryFor
		for _, o := range sh.members {
			if !o.inSync {
				return failbackPlan{wait: fmt.Sprintf("shard %d: waiting for %s to be in sync before %s takes over", m.shard, o.name, m.to.name)}
			}
		}
	}
	if m.to.syncedFor < timing.hold {
		return failbackPlan{after: timing.hold - m.to.syncedFor, wait: fmt.Sprintf(
			"shard %d: %s takes over once it has been in sync for %s (%s so far)", m.shard, m.to.name, timing.hold, m.to.syncedFor.Round(time.Second))}
	}
	if served < timing.votes {
		return failbackPlan{after: timing.votes - served, wait: fmt.Sprintf(
			"shard %d: %s takes over once %s has served for %s, when the primaries vote on the shard again (%s so far)",
			m.shard, m.to.name, m.from.name, timing.votes, served.Round(time.Second))}
	}
	return failbackPlan{move: &m}
}
