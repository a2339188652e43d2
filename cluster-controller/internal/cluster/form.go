package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// reconcileMembers keeps 1+replicasPerShard members in every shard of the spec: it retires
// members whose pod is gone for good and creates the missing ones. Shards beyond the
// spec are left to scaling, surplus members to scaling and rolling.
func (r *Reconciler) reconcileMembers(ctx context.Context, s *scope) (time.Duration, error) {
	for _, m := range s.Topo.Members {
		if !m.Leaving() && plan.Gone(m) {
			c := conditions.Get(m.Node.Status.Conditions, v1alpha1.ConditionPodReady)
			if err := r.retire(ctx, s.VC, m, "its pod is gone: "+plan.MemberMessage(c)); err != nil {
				return 0, err
			}
			now := metav1.NewTime(s.Topo.Now)
			m.Node.DeletionTimestamp = &now // counted as leaving for the rest of the pass
		}
	}
	created, later := 0, 0 // members created in this pass, and left for the next ones
	var live map[int32]int // counted by the API server, only when the cache says members are missing
	for sh := int32(0); sh < s.Shards(); sh++ {
		want := int(1 + s.Replicas())
		n := len(s.Active(sh))
		if n >= want {
			continue
		}
		if live == nil {
			var err error
			if live, err = r.countMembers(ctx, s.VC); err != nil {
				return 0, err
			}
		}
		for n = max(n, live[sh]); n < want; n++ {
			if created == r.createBatch() {
				later++
				continue
			}
			if _, err := r.createMember(ctx, s.VC, sh, fmt.Sprintf("shard %d has %d of %d members", sh, n, want)); err != nil {
				return 0, err
			}
			created++
		}
	}
	if created > 0 && later > 0 {
		s.progress(v1alpha1.ReasonCreatingMembers, "created %d members, %d more in the next passes", created, later)
		return 0, nil
	}
	if created > 0 {
		s.progress(v1alpha1.ReasonCreatingMembers, "created %d members", created)
		// The new members have no pods yet: nothing else can use them this pass, and the
		// watch on their status brings the next pass.
		return 0, nil
	}
	var unreachable []*plan.Member
	for _, m := range s.Topo.Members {
		if !m.Leaving() && !m.Reachable {
			unreachable = append(unreachable, m)
		}
	}
	if msg := tooLargeCause(unreachable); msg != "" {
		s.progress(v1alpha1.ReasonReplyTooLarge, "%s", msg)
	} else if reason, msg, ok := plan.StuckCause(unreachable); ok {
		s.progress(reason, "%s", msg)
	} else if msg := s.Topo.Partitioned(unreachable); msg != "" {
		s.progress(v1alpha1.ReasonPartitioned, "%s", msg)
	} else if len(unreachable) > 0 {
		names := make([]string, len(unreachable))
		for i, m := range unreachable {
			names[i] = m.Name()
		}
		s.progress(v1alpha1.ReasonWaitingForPods, "waiting for the servers of %s", strings.Join(names, ", "))
	}
	return 0, nil
}

// reconcileMeet makes every member that does not know another (or knows it at an old
// address: a pod recreated with its volume keeps its node ID and changes its IP) meet it.
// Meeting from the side that lacks the other always converges, whatever each side's view:
// a member forgotten by the others while it still knows them is met again.
func (r *Reconciler) reconcileMeet(ctx context.Context, s *scope) (time.Duration, error) {
	var met []string
	var joinable []*plan.Member
	for _, m := range s.Topo.Reachable() {
		// With external access a member joins once it announces its external address:
		// clients never learn its pod address.
		if s.ExternalReady(m) {
			joinable = append(joinable, m)
		}
	}
	for _, pair := range plan.Meetings(joinable) {
		from, to := pair[0], pair[1]
		c, err := r.client(ctx, s, from)
		if err != nil {
			return 0, err
		}
		host, port, err := to.HostPort()
		if err != nil {
			return 0, err
		}
		if err := c.Meet(ctx, host, port, port+busPortOffset); err != nil {
			return 0, fmt.Errorf("meet %s from %s: %w", to.Name(), from.Name(), err)
		}
		met = append(met, from.Name()+"->"+to.Name())
	}
	if len(met) > 0 {
		log.FromContext(ctx).Info("met members", "meetings", met)
		s.progress(v1alpha1.ReasonMeetingMembers, "introducing members to each other: %s", strings.Join(met, ", "))
	} else if p := s.ExternalPending(); len(p) > 0 {
		s.progress(v1alpha1.ReasonWaitingForMember, "waiting for external addresses: %s", strings.Join(p, "; "))
	} else if !s.Topo.Formed() {
		s.progress(v1alpha1.ReasonMeetingMembers, "waiting for the members to learn of each other")
	} else if u := s.ExternalUnseen(); len(u) > 0 {
		// Gossip spreads an announced address; no event says when it has.
		return plan.RequeueSync, nil
	}
	return 0, nil
}

// reconcileSlots gives a cluster whose servers serve no slot at all its slots: each
// shard's primary gets its contiguous even share, all in one pass, when plan.Cluster.PlanEmpty says
// so (a new cluster, or one whose every server came back empty).
func (r *Reconciler) reconcileSlots(ctx context.Context, s *scope) (time.Duration, error) {
	if !plan.Empty(s.Topo) {
		return 0, nil
	}
	empty := s.PlanEmpty()
	if empty.Wait != "" {
		s.progress(empty.Reason, "%s", empty.Wait)
		return 0, nil
	}
	var given []string
	for sh, p := range empty.Primaries {
		c, err := r.client(ctx, s, p)
		if err != nil {
			return 0, err
		}
		ranges := plan.EvenSlotsFor(s.Shards(), int32(sh))
		if err := c.AddSlotsRange(ctx, ranges); err != nil {
			return 0, fmt.Errorf("assign slots %s to %s: %w", valkey.FormatRanges(ranges), p.Name(), err)
		}
		p.Self.Slots = ranges // the rest of the pass sees the primary it just made
		p.Self.Primary = true
		given = append(given, fmt.Sprintf("slots %s to %s (shard %d)", valkey.FormatRanges(ranges), p.Name(), sh))
	}
	if empty.Lost {
		r.event(s.VC, nil, eventWarning, "SlotsReassigned", "AssignSlots",
			"every server of the cluster restarted without its data, so the data of all 16384 slots is lost; given, empty: %s", strings.Join(given, "; "))
		s.progress(v1alpha1.ReasonDataLost, "every server restarted without its data; the slots were assigned again, empty")
		return 0, nil
	}
	r.event(s.VC, nil, eventNormal, "SlotsAssigned", "AssignSlots", "assigned the 16384 slots to %d shards", s.Shards())
	s.progress(v1alpha1.ReasonAssigningSlots, "assigned the slots; waiting for the cluster to agree")
	return 0, nil
}

// reconcileReplicas makes every other member of a shard replicate the shard's primary.
func (r *Reconciler) reconcileReplicas(ctx context.Context, s *scope) (time.Duration, error) {
	var pending []string
	var after time.Duration
	for sh := int32(0); sh < s.Shards(); sh++ {
		p := s.Candidate(sh)
		if p == nil {
			continue
		}
		for _, m := range s.Active(sh) {
			if m == p || !m.Reachable || (m.Self.Replica && m.Self.PrimaryID == p.ID()) {
				continue
			}
			if len(m.Slots()) > 0 {
				continue // a second primary with slots in one shard: never turn it into a replica here
			}
			if !m.Knows(p.ID()) {
				pending = append(pending, m.Name())
				continue
			}
			if !s.ExternalKnown(m) {
				// A replica is in every slot map: it is made one only once every member
				// names it by its external address (gossip spreads it, no event says when).
				pending = append(pending, m.Name()+" (its external address not known to every member yet)")
				after = plan.RequeueSync
				continue
			}
			c, err := r.client(ctx, s, m)
			if err != nil {
				return 0, err
			}
			if err := c.Replicate(ctx, p.ID()); err != nil {
				if valkey.IsServerError(err) {
					pending = append(pending, m.Name())
					log.FromContext(ctx).Info("replicate refused for now", "member", m.Name(), "error", err.Error())
					continue
				}
				return 0, fmt.Errorf("replicate %s to %s: %w", m.Name(), p.Name(), err)
			}
			log.FromContext(ctx).Info("replica follows its primary", "member", m.Name(), "primary", p.Name())
			pending = append(pending, m.Name())
		}
	}
	if len(pending) > 0 {
		s.progress(v1alpha1.ReasonReplicating, "setting up replication of %s", strings.Join(pending, ", "))
	}
	return after, nil
}
