package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf/redact"
)

// Slot migration pacing: one pass moves slots for at most migrationBudget, then writes
// status and comes back, so progress is visible and a spec change is seen between
// batches. Keys move keysPerMigrate at a time.
const (
	migrationBudget = 5 * time.Second
	keysPerMigrate  = 200
	// slotsPerBatch slots move together on Valkey before 9.0 (pipelined SETSLOT and
	// GETKEYSINSLOT).
	slotsPerBatch  = 64
	migrateTimeout = 10 * time.Second
)

// reconcileScale moves slots until every shard of the spec holds an even share and the
// shards beyond the spec hold none, then retires what the spec no longer asks for:
// members of removed shards, and surplus replicas (never a primary). Slots left open are
// finished first; plan.Cluster.PlanScale decides the rest.
func (r *Reconciler) reconcileScale(ctx context.Context, s *scope) (time.Duration, error) {
	wait, err := r.scale(ctx, s)
	if valkey.IsClusterDown(err) {
		// A primary saw the cluster fail between the observation and the move (a member
		// restarting, a new one still learning the slot map by gossip, which no event
		// announces): the slots stay open and a pass finishes them once it is ok again.
		// An error would back off exponentially and stall the move for minutes.
		s.progress(v1alpha1.ReasonMigratingSlots, "waiting for the cluster to be ok again: %s", err)
		return plan.RequeueSync, nil
	}
	return wait, err
}

// scale finishes open slots, then takes the scale plan's next step.
func (r *Reconciler) scale(ctx context.Context, s *scope) (time.Duration, error) {
	if s.ScaleHeld() {
		return 0, nil
	}
	if wait, err := r.finishOpenSlots(ctx, s); err != nil || wait > 0 {
		return wait, err
	}
	p := s.PlanScale()
	switch p.Step {
	case plan.ScaleNothing:
		return 0, nil
	case plan.ScaleWaitForPrimaries:
		s.progress(p.Reason, "%s", p.Message)
		return plan.RequeueWait, nil
	case plan.ScaleWaitForState:
		// Gossip brings the state; no Kubernetes event says when.
		s.progress(p.Reason, "%s", p.Message)
		return plan.RequeueSync, nil
	case plan.ScaleMoveSlots:
		return r.moveAll(ctx, s, p)
	}
	for _, rt := range p.Retire {
		if err := r.retire(ctx, s.VC, rt.Member, rt.Why); err != nil {
			return 0, err
		}
	}
	s.progress(p.Reason, "%s", p.Message)
	return plan.RequeueFast, nil
}

// moveAll makes the plan's slot moves, for at most migrationBudget.
func (r *Reconciler) moveAll(ctx context.Context, s *scope, p plan.ScalePlan) (time.Duration, error) {
	s.progress(p.Reason, "%s", p.Message)
	deadline := time.Now().Add(migrationBudget)
	for _, mv := range p.Moves {
		from, to := s.Topo.ByID(mv.From), s.Topo.ByID(mv.To)
		if from == nil || to == nil || !from.Reachable || !to.Reachable {
			return plan.RequeueWait, nil
		}
		done, err := r.moveSlots(ctx, s, from, to, mv.Slots, deadline)
		if err != nil {
			return 0, err
		}
		if !done {
			return plan.RequeueFast, nil
		}
	}
	r.event(s.VC, nil, eventNormal, "SlotsMoved", "MigrateSlots", "moved %d slots to balance %d shards", p.Slots, s.Shards())
	return plan.RequeueFast, nil
}

// atomicMoves reports whether slots move from one primary to the other with CLUSTER
// MIGRATESLOTS: both run Valkey 9.0 or later and no member is known to run an older one
// (a roll between majors). A member that does not answer now counts by the version it
// last reported, so one slow dial does not switch a scale to the other way of moving
// slots halfway; the two ways leave states the other refuses (finishOpenSlots clears
// them).
func (s *scope) atomicMoves(from, to *plan.Member) bool {
	if !from.LiveVersion().AtLeast(9, 0) || !to.LiveVersion().AtLeast(9, 0) {
		return false
	}
	for _, m := range s.Topo.Members {
		if v := m.LiveVersion(); !v.IsZero() && !v.AtLeast(9, 0) {
			return false
		}
	}
	return true
}

// moveSlots moves ranges from one primary to another until done or the deadline.
func (r *Reconciler) moveSlots(ctx context.Context, s *scope, from, to *plan.Member, ranges []valkey.SlotRange, deadline time.Time) (bool, error) {
	if s.atomicMoves(from, to) {
		return r.migrateAtomically(ctx, s, from, to, ranges)
	}
	var slots []int
	for _, rg := range ranges {
		for slot := rg.Start; slot <= rg.End; slot++ {
			slots = append(slots, slot)
		}
	}
	for batch := range slices.Chunk(slots, slotsPerBatch) {
		if time.Now().After(deadline) {
			return false, nil
		}
		if err := r.migrateSlots(ctx, s, from, to, batch); err != nil {
			return false, err
		}
	}
	return true, nil
}

// migrateSlots moves a batch of slots with their keys (Valkey before 9.0): the target
// imports them, the source marks them migrating, keys move slot by slot in batches
// (clients get ASK redirects for moved keys meanwhile), then both, and every other
// primary, are told the new owner. Each step is one pipelined round trip for the whole
// batch, so a slot costs a MIGRATE per batch of its keys, not eight round trips.
func (r *Reconciler) migrateSlots(ctx context.Context, s *scope, from, to *plan.Member, slots []int) error {
	src, err := r.client(ctx, s, from)
	if err != nil {
		return err
	}
	dst, err := r.client(ctx, s, to)
	if err != nil {
		return err
	}
	var open []int // not migrating to the target yet (a pass may have started some)
	for _, slot := range slots {
		if from.Self.Migrating[slot] != to.ID() {
			open = append(open, slot)
		}
	}
	if err := dst.SetSlots(ctx, open, "IMPORTING", from.ID()); err != nil {
		return err
	}
	if err := src.SetSlots(ctx, open, "MIGRATING", to.ID()); err != nil {
		return err
	}
	return r.drainAndAssign(ctx, s, src, dst, from, to, slots)
}

// drainAndAssign moves the keys still in slots from src to dst and gives the slots to dst.
func (r *Reconciler) drainAndAssign(ctx context.Context, s *scope, src, dst *valkey.Client, from, to *plan.Member, slots []int) error {
	host, port, err := to.HostPort()
	if err != nil {
		return err
	}
	for pending := slots; len(pending) > 0; {
		keys, err := src.KeysInSlots(ctx, pending, keysPerMigrate)
		if err != nil {
			return err
		}
		var next []int
		for _, slot := range pending {
			if len(keys[slot]) == 0 {
				continue
			}
			if err := src.Migrate(ctx, valkey.MigrateArgs{
				Host: host, Port: port, Keys: keys[slot], Timeout: migrateTimeout,
				Username: s.cred.Username, Password: s.cred.Password, Replace: true,
			}); err != nil {
				return fmt.Errorf("migrate %d keys of slot %d to %s: %w", len(keys[slot]), slot, to.Name(), err)
			}
			next = append(next, slot)
		}
		pending = next
	}
	// The target's config epoch above every other first: it claims the slots with it, and a
	// claim under a lower epoch than the source's loses to the source's next message, which
	// still lists the slots (Valkey 8.0: the target then drops the slots and deletes the
	// keys it was given, and the source gives them to the target: no one serves them).
	if _, _, err := dst.BumpEpoch(ctx); err != nil {
		return err
	}
	// The target first, so it owns the slots before the source stops redirecting to it;
	// then the source and the other primaries at once (each answers only once its
	// replicas acknowledged, so one after the other would add their waits).
	if err := dst.SetSlots(ctx, slots, "NODE", to.ID()); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, m := range s.Topo.Reachable() {
		if m == from || m == to || !m.IsPrimary() {
			continue
		}
		if c, err := r.client(ctx, s, m); err == nil {
			wg.Go(func() { _ = c.SetSlots(ctx, slots, "NODE", to.ID()) }) // gossip would tell it too; this is faster
		}
	}
	err = src.SetSlots(ctx, slots, "NODE", to.ID())
	wg.Wait()
	return err
}

// migrateAtomically starts CLUSTER MIGRATESLOTS on the source (Valkey 9.0+) and reports
// done once the source lists the job as finished.
func (r *Reconciler) migrateAtomically(ctx context.Context, s *scope, from, to *plan.Member, ranges []valkey.SlotRange) (bool, error) {
	src, err := r.client(ctx, s, from)
	if err != nil {
		return false, err
	}
	jobs, err := src.SlotMigrations(ctx)
	if err != nil {
		return false, err
	}
	for _, j := range jobs {
		if !j.Done() {
			return false, nil // one running: wait for it
		}
	}
	if j := lastFailed(jobs, ranges, to.ID()); j != nil {
		r.event(s.VC, nil, eventWarning, "SlotMigrationFailed", "MigrateSlots", "the migration of slots %s from %s to %s failed (%s): starting it again",
			valkey.FormatRanges(ranges), from.Name(), to.Name(), redact.Text(j.Message))
	}
	if err := src.MigrateSlots(ctx, ranges, to.ID()); err != nil {
		return false, err
	}
	log.FromContext(ctx).Info("atomic slot migration started", "from", from.Name(), "to", to.Name(), "slots", valkey.FormatRanges(ranges))
	return false, nil
}

// lastFailed returns the latest of jobs that exported ranges to targetID and failed,
// or nil when the latest such job did not fail (or there is none).
func lastFailed(jobs []valkey.SlotMigration, ranges []valkey.SlotRange, targetID string) *valkey.SlotMigration {
	want := valkey.NormalizeRanges(ranges)
	var last *valkey.SlotMigration
	for i, j := range jobs {
		if j.TargetNode != targetID || !slices.Equal(j.Slots, want) {
			continue
		}
		if last == nil || created(j) >= created(*last) {
			last = &jobs[i]
		}
	}
	if last == nil || last.State != valkey.SlotMigrationFailed {
		return nil
	}
	return last
}

// created is when a job was created, in seconds (0 when the server does not say).
func created(j valkey.SlotMigration) int64 {
	n, _ := strconv.ParseInt(j.Fields["create_time"], 10, 64)
	return n
}

// finishOpenSlots completes any slot left importing or migrating (by an interrupted pass,
// an operator restart or a spec change halfway): the slot goes to its importing side,
// which already holds part of its keys. Finishing is always safe; undoing is not.
func (r *Reconciler) finishOpenSlots(ctx context.Context, s *scope) (time.Duration, error) {
	for _, m := range s.Topo.Reachable() {
		if !m.LiveVersion().AtLeast(9, 0) {
			continue // no atomic slot migration before 9.0
		}
		c, err := r.client(ctx, s, m)
		if err != nil {
			return 0, err
		}
		jobs, err := c.SlotMigrations(ctx)
		if err != nil {
			return 0, err
		}
		for _, j := range jobs {
			if !j.Done() {
				s.progress(v1alpha1.ReasonMigratingSlots, "an atomic slot migration is running on %s", m.Name())
				return plan.RequeueWait, nil
			}
		}
	}
	// Valkey 8.0+ replicates the migrating and importing states to replicas, which refuse
	// SETSLOT: only primaries' states are acted on.
	for _, m := range s.Topo.Reachable() {
		if !m.IsPrimary() {
			continue
		}
		slots := make([]int, 0, len(m.Self.Migrating))
		for slot := range m.Self.Migrating {
			slots = append(slots, slot)
		}
		sort.Ints(slots)
		for _, slot := range slots {
			to := s.Topo.ByID(m.Self.Migrating[slot])
			if to == nil || !to.Reachable || !to.IsPrimary() {
				s.progress(v1alpha1.ReasonMigratingSlots, "slot %d is migrating to a member that does not answer as a primary", slot)
				return plan.RequeueWait, nil
			}
			src, err := r.client(ctx, s, m)
			if err != nil {
				return 0, err
			}
			dst, err := r.client(ctx, s, to)
			if err != nil {
				return 0, err
			}
			if to.Self.Importing[slot] != m.ID() {
				if err := dst.SetSlotImporting(ctx, slot, m.ID()); err != nil {
					return 0, err
				}
			}
			if err := r.drainAndAssign(ctx, s, src, dst, m, to, []int{slot}); err != nil {
				return 0, err
			}
			s.progress(v1alpha1.ReasonMigratingSlots, "finished the migration of slot %d", slot)
		}
	}
	// An importing side without a source migrating to it: the source already gave the
	// slot away, or never started (a pass stopped between the two SETSLOTs, or moved on
	// to CLUSTER MIGRATESLOTS, which refuses a slot imported by hand).
	for _, m := range s.Topo.Reachable() {
		if !m.IsPrimary() {
			continue
		}
		for _, slot := range slices.Sorted(maps.Keys(m.Self.Importing)) {
			if wait, err := r.closeImport(ctx, s, m, slot); err != nil || wait > 0 {
				return wait, err
			}
		}
	}
	if s.step.reason == v1alpha1.ReasonMigratingSlots {
		return plan.RequeueFast, nil
	}
	return 0, nil
}

// closeImport ends the import of slot on m when the slot's owner is not migrating it to
// m. An owner that is m itself (the source gave the slot away) clears the import by
// assigning the slot to m; otherwise m holds none of the slot's keys, as keys move only
// once the source migrates, and SETSLOT STABLE clears it (assigning the slot to its owner
// would not: a server keeps importing a slot it sees assigned to another). Keys there
// would be writes the owner does not have: they are reported, not dropped.
func (r *Reconciler) closeImport(ctx context.Context, s *scope, m *plan.Member, slot int) (time.Duration, error) {
	owner := s.Topo.OwnerOf(slot)
	if owner == nil || !owner.Reachable || owner.Self.Migrating[slot] == m.ID() {
		return 0, nil
	}
	c, err := r.client(ctx, s, m)
	if err != nil {
		return 0, err
	}
	if owner == m {
		if err := c.SetSlotNode(ctx, slot, m.ID()); err != nil {
			return 0, err
		}
		s.progress(v1alpha1.ReasonMigratingSlots, "closed the import of slot %d on %s, which serves it", slot, m.Name())
		return 0, nil
	}
	n, err := c.CountKeysInSlot(ctx, slot)
	if err != nil {
		return 0, err
	}
	if n > 0 {
		s.progress(v1alpha1.ReasonMigratingSlots, "slot %d is importing on %s, which holds %d of its keys, while %s serves it and migrates it nowhere: "+
			"the operator leaves it for a person to decide (CLUSTER SETSLOT %d NODE on the side whose keys to keep)", slot, m.Name(), n, owner.Name(), slot)
		return plan.RequeueWait, nil
	}
	if err := c.SetSlotStable(ctx, slot); err != nil {
		return 0, err
	}
	s.progress(v1alpha1.ReasonMigratingSlots, "closed the import of slot %d on %s, which %s serves", slot, m.Name(), owner.Name())
	return 0, nil
}

// awaitSlotMaps keeps the cluster Progressing until every member's slot map names the
// owners the owners themselves report: a finished scale or failover is not done while a
// client could still read the old owner from a member. Gossip spreads the change and no
// Kubernetes event says when it has, so the next look is soon.
func (r *Reconciler) awaitSlotMaps(_ context.Context, s *scope) (time.Duration, error) {
	u := s.Topo.SlotsUnsettled()
	if len(u) == 0 {
		return 0, nil
	}
	s.progress(v1alpha1.ReasonSlotsNotPropagated, "waiting for %s to learn which primary serves each slot", strings.Join(u, ", "))
	return plan.RequeueSync, nil
}
