package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// shardOf writes a shard as "*a@n1/z1#7 a2@n2/z2 a3@n3!": a member is name@node/zone, the
// primary marked * (and #its config epoch, 0 when omitted), a replica not in sync marked
// !, one in sync for 3 s only (a minute otherwise) marked ~; no /zone for a node without
// one, no @node for a member whose node is not known.
func shardOf(t *testing.T, index int32, spec string) PlacedShard {
	t.Helper()
	sh := PlacedShard{Index: index, PrimaryFor: time.Hour}
	for _, f := range strings.Fields(spec) {
		m := Placed{InSync: true, SyncedFor: time.Minute}
		if strings.HasPrefix(f, "*") {
			m.Primary, f = true, f[1:]
		}
		if strings.HasSuffix(f, "!") {
			m.InSync, m.SyncedFor, f = false, 0, f[:len(f)-1]
		}
		if strings.HasSuffix(f, "~") {
			m.SyncedFor, f = 3*time.Second, f[:len(f)-1]
		}
		if at := strings.LastIndex(f, "#"); at >= 0 {
			if _, err := fmt.Sscan(f[at+1:], &m.Epoch); err != nil {
				t.Fatal(err)
			}
			f = f[:at]
		}
		name, where, _ := strings.Cut(f, "@")
		m.Name = name
		m.Node, m.Zone, _ = strings.Cut(where, "/")
		sh.Members = append(sh.Members, m)
	}
	return sh
}

func shardsOf(t *testing.T, specs ...string) []PlacedShard {
	t.Helper()
	out := make([]PlacedShard, len(specs))
	for i, s := range specs {
		out[i] = shardOf(t, int32(i), s)
	}
	return out
}

// movesOf is plan's moves as "shard:from>to", in order.
func movesOf(p PlacementPlan) string {
	var out []string
	for _, m := range p.Moves {
		out = append(out, fmt.Sprintf("%d:%s>%s", m.Shard, m.From.Name, m.To.Name))
	}
	return strings.Join(out, " ")
}

// primariesPerNode counts, after every move of plan, the primaries on each node.
func primariesPerNode(shards []PlacedShard, p PlacementPlan) map[string]int {
	c := currentChoice(shards)
	for _, m := range p.Moves {
		c[m.Shard] = m.To.Name
	}
	out := map[string]int{}
	for _, sh := range shards {
		if m := sh.member(c[sh.Index]); m != nil {
			out[m.Node]++
		}
	}
	return out
}

func TestPlanPlacement(t *testing.T) {
	cases := []struct {
		name   string
		shards []string
		// moves are the planned moves in order ("shard:from>to"); faults what is wrong
		// now; perfect: the whole rule holds once the moves are made.
		moves   string
		faults  []string
		perfect bool
	}{
		{
			name:    "3x1 on three nodes, one primary each: nothing to do",
			shards:  []string{"*a@n1 a2@n2", "*b@n2 b2@n3", "*c@n3 c2@n1"},
			perfect: true,
		},
		{
			name:   "shard 0 failed over onto node 2 beside shard 1's primary; its member on node 1 is back: it moves back",
			shards: []string{"a@n1 *a2@n2", "*b@n2 b2@n3", "*c@n3 c2@n1"},
			moves:  "0:a2>a", perfect: true,
			faults: []string{"node n2 holds the primaries of shards 0, 1"},
		},
		{
			name:   "the same with zones: the zone holding two primaries is named too",
			shards: []string{"a@n1/z1 *a2@n2/z2", "*b@n2/z2 b2@n3/z3", "*c@n3/z3 c2@n1/z1"},
			moves:  "0:a2>a", perfect: true,
			faults: []string{"node n2 holds the primaries of shards 0, 1", "zone z2 holds the primaries of shards 0, 1"},
		},
		{
			name:   "a spread that needs two shards to move: shard 0 from node 1 to node 2, and shard 2 from node 2 to node 3",
			shards: []string{"*a@n1 a2@n2", "*b@n1 b2@n2", "*c@n2 c2@n3"},
			moves:  "0:a>a2 2:c>c2", perfect: true,
			faults: []string{"node n1 holds the primaries of shards 0, 1"},
		},
		{
			name:   "of two shards that could move back, the one whose primary was promoted last (highest config epoch) moves",
			shards: []string{"*a@n1#2 a2@n2", "*b@n1#9 b2@n2", "*c@n3#5 c2@n1"},
			moves:  "1:b>b2", perfect: true,
			faults: []string{"node n1 holds the primaries of shards 0, 1"},
		},
		{
			name:   "zones first: two primaries on two nodes of one zone, a third zone free: one moves to it",
			shards: []string{"*a@n1/z1 a2@n3/z2", "*b@n2/z1 b2@n3/z2"},
			moves:  "0:a>a2", perfect: true,
			faults: []string{"zone z1 holds the primaries of shards 0, 1"},
		},
		{
			name:   "a primary beside a replica of its own shard moves to the replica that is alone on its node",
			shards: []string{"*a@n1 a2@n1 a3@n2"},
			moves:  "0:a>a3", perfect: true,
			faults: []string{"shard 0's primary a shares node n1 with a replica of its shard"},
		},
		{
			name:    "nodes without the zone label count as nodes only",
			shards:  []string{"*a@n1 a2@n2", "*b@n3/z1 b2@n1"},
			perfect: true,
		},
		{
			name:   "6x1 on three nodes: at most two primaries per node; the third one on node 1 moves",
			shards: []string{"*a@n1 a2@n2", "*b@n1 b2@n3", "*c@n1 c2@n2", "*d@n2 d2@n3", "*e@n3 e2@n1", "*f@n3 f2@n2"},
			moves:  "0:a>a2",
			faults: []string{"node n1 holds the primaries of shards 0, 1, 2",
				"node n3 holds the primaries of shards 4, 5"},
		},
		{
			name:   "6x1 already two per node: the best the nodes allow, nothing moves",
			shards: []string{"*a@n1 a2@n2", "*b@n1 b2@n3", "*c@n2 c2@n1", "*d@n2 d2@n3", "*e@n3 e2@n1", "*f@n3 f2@n2"},
			faults: []string{"node n1 holds the primaries of shards 0, 1", "node n2 holds the primaries of shards 2, 3",
				"node n3 holds the primaries of shards 4, 5"},
		},
		{
			name:   "every member on two nodes (the third drained): two and one is the best, nothing moves",
			shards: []string{"*a@n2 a2@n3", "*b@n2 b2@n3", "*c@n3 c2@n2"},
			faults: []string{"node n2 holds the primaries of shards 0, 1"},
		},
		{
			name:   "a shard whose members share one node: nothing the primaries can do",
			shards: []string{"*a@n1 a2@n1", "*b@n2 b2@n3"},
			faults: []string{"shard 0's primary a shares node n1 with a replica of its shard"},
		},
		{
			name:    "a primary whose node is not known keeps its place and counts for nothing",
			shards:  []string{"*a a2@n2", "*b@n2 b2@n1"},
			perfect: true,
		},
		{
			name:   "a replica whose node is not known is no candidate",
			shards: []string{"*a@n1 a2", "*b@n1 b2@n2"},
			moves:  "1:b>b2", perfect: true,
			faults: []string{"node n1 holds the primaries of shards 0, 1"},
		},
		{
			name:   "two replicas per shard, one shard's primary pushed next to another's: the move picks the free node",
			shards: []string{"a@n1/z1 *a2@n2/z2 a3@n3/z3", "*b@n2/z2 b2@n3/z3 b3@n1/z1", "*c@n3/z3 c2@n1/z1 c3@n2/z2"},
			moves:  "0:a2>a", perfect: true,
			faults: []string{"node n2 holds the primaries of shards 0, 1", "zone z2 holds the primaries of shards 0, 1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			shards := shardsOf(t, tc.shards...)
			p := PlanPlacement(shards)
			if got := movesOf(p); got != tc.moves {
				t.Errorf("moves %q, want %q", got, tc.moves)
			}
			if !slices.Equal(p.Faults, tc.faults) {
				t.Errorf("faults %q, want %q", p.Faults, tc.faults)
			}
			if got := p.best.spread() == (spreadScore{}); got != tc.perfect {
				t.Errorf("perfect after the moves: %v, want %v (best %v)", got, tc.perfect, p.best)
			}
			// Planning again from where the moves lead finds nothing more to do.
			after := slices.Clone(shards)
			for _, m := range p.Moves {
				for i := range after {
					if after[i].Index == m.Shard {
						ms := slices.Clone(after[i].Members)
						for j := range ms {
							ms[j].Primary = ms[j].Name == m.To.Name
						}
						after[i].Members = ms
					}
				}
			}
			if again := PlanPlacement(after); !again.Holds() {
				t.Errorf("after the moves, planned again: %s", movesOf(again))
			}
		})
	}
}

func TestPlanPlacementSpreadsManyShardsEvenly(t *testing.T) {
	// 9 shards with two replicas each on 4 nodes, every primary on node n1 at first:
	// at most three primaries on a node (9 = 3+2+2+2) once the moves are made, three of
	// them staying on n1.
	var specs []string
	for i := range 9 {
		specs = append(specs, fmt.Sprintf("*p%d@n1 r%d@n%d s%d@n%d", i, i, 2+i%3, i, 2+(i+1)%3))
	}
	shards := shardsOf(t, specs...)
	p := PlanPlacement(shards)
	counts := primariesPerNode(shards, p)
	for n, c := range counts {
		if c > 3 {
			t.Errorf("node %s holds %d primaries after the moves: %v", n, c, counts)
		}
	}
	if len(counts) != 4 {
		t.Errorf("the primaries use %d nodes, want 4: %v", len(counts), counts)
	}
	if len(p.Moves) != 6 {
		t.Errorf("%d moves, want 6 (three primaries stay on n1): %s", len(p.Moves), movesOf(p))
	}
}

func TestMoveWhy(t *testing.T) {
	shards := shardsOf(t, "a@n1/z1 *a2@n2/z2", "*b@n2/z2 b2@n3/z3", "*c@n3/z3 c2@n1/z1")
	p := PlanPlacement(shards)
	if len(p.Moves) != 1 {
		t.Fatalf("moves %s", movesOf(p))
	}
	want := "zone z2 also holds the primary of shard 1; node n2 also holds the primary of shard 1"
	if p.Moves[0].Why != want {
		t.Errorf("why %q, want %q", p.Moves[0].Why, want)
	}
}

func TestPlanFailback(t *testing.T) {
	backOnNode1 := []string{"a@n1 *a2@n2", "*b@n2 b2@n3", "*c@n3 c2@n1"}
	cases := []struct {
		name   string
		shards []string
		mod    func([]PlacedShard)
		busy   string
		// want is "shard:from>to" for a move now, or the wait.
		want string
	}{
		{name: "spread: nothing to do", shards: []string{"*a@n1 a2@n2", "*b@n2 b2@n3"}, want: ""},
		{name: "the former primary is back and in sync: it takes over again", shards: backOnNode1, want: "0:a2>a"},
		{
			name:   "the former primary is back but still syncing: wait for it",
			shards: []string{"a@n1! *a2@n2", "*b@n2 b2@n3", "*c@n3 c2@n1"},
			want:   "shard 0: waiting for a to be in sync before a takes over",
		},
		{
			name:   "another replica of the shard is not in sync: the shard waits whole",
			shards: []string{"a@n1 *a2@n2 a3@n3!", "*b@n2 b2@n3 b3@n1", "*c@n3 c2@n1 c3@n2"},
			want:   "shard 0: waiting for a3 to be in sync before a takes over",
		},
		{
			name:   "the former primary came back in sync 3 s ago: it takes over once it has been for 10 s",
			shards: []string{"a@n1~ *a2@n2", "*b@n2 b2@n3", "*c@n3 c2@n1"},
			want:   "shard 0: a takes over once it has been in sync for 10s (3s so far)",
		},
		{
			name:   "shard 0 failed over 5 s ago: the primaries vote on it again once it is 12 s (2 x cluster-node-timeout and a margin)",
			shards: backOnNode1,
			mod:    func(shards []PlacedShard) { shards[0].PrimaryFor = 5 * time.Second },
			want:   "shard 0: a takes over once a2 has served for 12s, when the primaries vote on the shard again (5s so far)",
		},
		{name: "a roll in flight: wait", shards: backOnNode1, busy: "waiting for the roll to end", want: "waiting for the roll to end"},
		{
			name:   "a spread that needs two moves makes the first one only",
			shards: []string{"*a@n1 a2@n2", "*b@n1 b2@n2", "*c@n2 c2@n3"},
			want:   "0:a>a2",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			shards := shardsOf(t, tc.shards...)
			if tc.mod != nil {
				tc.mod(shards)
			}
			f := PlanFailback(shards, PlanPlacement(shards), tc.busy, FailbackTiming{Hold: 10 * time.Second, Votes: 12 * time.Second})
			got := f.Wait
			if f.Move != nil {
				got = fmt.Sprintf("%d:%s>%s", f.Move.Shard, f.Move.From.Name, f.Move.To.Name)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBestForSpread(t *testing.T) {
	cases := []struct {
		name       string
		shards     []string
		shard      int32
		candidates []string
		want       string
	}{
		{
			name:   "the replica on the node without a primary wins over the first one",
			shards: []string{"*a@n1 a2@n2 a3@n3", "*b@n2 b2@n3 b3@n1"}, shard: 0,
			candidates: []string{"a2", "a3"}, want: "a3",
		},
		{
			name:   "the zone counts before the node",
			shards: []string{"*a@n1/z1 a2@n2/z1 a3@n3/z2", "*b@n4/z1 b2@n3/z2"}, shard: 0,
			candidates: []string{"a2", "a3"}, want: "a3",
		},
		{
			name:   "equal places: the caller's first (the most caught up)",
			shards: []string{"*a@n1 a2@n2 a3@n3", "*b@n1 b2@n2"}, shard: 0,
			candidates: []string{"a3", "a2"}, want: "a3",
		},
		{
			name:   "a lost primary's replicas: the dead primary's node counts for nothing",
			shards: []string{"*a a2@n2 a3@n3", "*b@n2 b2@n1"}, shard: 0,
			candidates: []string{"a2", "a3"}, want: "a3",
		},
		{
			name:   "no node known: the caller's first",
			shards: []string{"*a a2 a3"}, shard: 0,
			candidates: []string{"a2", "a3"}, want: "a2",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := BestForSpread(shardsOf(t, tc.shards...), tc.shard, tc.candidates); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestNewPrimaries(t *testing.T) {
	cases := []struct {
		name   string
		shards []string
		// candidates per shard, in order of preference (the oldest member first).
		candidates map[int32][]string
		want       string // "shard:member ..." in shard order
	}{
		{
			name:       "a new 3x1 cluster whose oldest members all run on node 1: one primary per node",
			shards:     []string{"a@n1 a2@n2", "b@n1 b2@n3", "c@n1 c2@n2"},
			candidates: map[int32][]string{0: {"a", "a2"}, 1: {"b", "b2"}, 2: {"c", "c2"}},
			want:       "0:a 1:b2 2:c2",
		},
		{
			name:       "a new shard next to shards that have primaries: the free node",
			shards:     []string{"*a@n1 a2@n2", "*b@n2 b2@n3", "c@n2 c2@n3"},
			candidates: map[int32][]string{2: {"c", "c2"}},
			want:       "2:c2",
		},
		{
			name:       "nodes not known: the oldest",
			shards:     []string{"a a2"},
			candidates: map[int32][]string{0: {"a", "a2"}},
			want:       "0:a",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := NewPrimaries(shardsOf(t, tc.shards...), tc.candidates)
			var out []string
			for _, sh := range slices.Sorted(maps.Keys(got)) {
				out = append(out, fmt.Sprintf("%d:%s", sh, got[sh]))
			}
			if strings.Join(out, " ") != tc.want {
				t.Errorf("got %v, want %s", out, tc.want)
			}
		})
	}
}
