package plan

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// Cluster is the planners' input: the spec one pass applies and the cluster as its
// servers reported it. The reconciler's scope embeds it; nothing here is remembered
// between passes.
type Cluster struct {
	// VC is the cluster with the spec the pass applies: its own, or the last applied one
	// while the spec is invalid or the cluster is paused.
	VC *v1alpha1.ValkeyCluster
	// Topo is the members and what their servers reported this pass.
	Topo *Topology
	// Unpublished is set while a Secret the members mount is not named in the cluster's
	// status by its producer: no member is created or changed.
	Unpublished *v1alpha1.NotPublishedError
	// Place is where the members run and the primaries' plan; nil with
	// spec.primaryPlacement.policy None.
	Place *Placement
}

// Outdated reports whether a member needs a new pod to match the spec, and why. While a
// Secret the members mount is not published, no member is outdated: the spec's names are
// not known.
func (c *Cluster) Outdated(m *Member) (bool, string) {
	if c.Unpublished != nil {
		return false, ""
	}
	d := DiffSpec(m.Node.Spec, DesiredSpec(c.VC, m.Shard()), m.LiveVersion())
	return d.Roll, strings.Join(d.Fields, ", ")
}

// Shards is the number of shards the spec asks for.
func (c *Cluster) Shards() int32 { return c.VC.Spec.ShardCount() }

// Replicas is the number of replicas per shard the spec asks for.
func (c *Cluster) Replicas() int32 { return c.VC.Spec.ReplicaCount() }

// Active lists the members of shard sh that are not leaving.
func (c *Cluster) Active(sh int32) []*Member {
	var out []*Member
	for _, m := range c.Topo.Shards[sh] {
		if !m.Leaving() {
			out = append(out, m)
		}
	}
	return out
}

// Ready reports whether the cluster serves every slot with the redundancy the spec asks:
// every shard of the spec has its primary and replicasPerShard replicas in sync, every
// member agrees the cluster is ok. A roll or a live change in flight does not make a
// serving cluster unready; Progressing says the spec is not fully applied yet.
func (c *Cluster) Ready() bool {
	return c.ShardsReady() == c.Shards() && c.Topo.CoveredSlots() == SlotCount && c.Topo.Formed() && c.AllStateOK() &&
		len(c.ExternalPending()) == 0 && len(c.ExternalUnseen()) == 0
}

// MembersUpToDate reports whether every member belongs to a shard of the spec, runs the
// spec's pod (built for its current revision) and has the spec's live settings applied.
func (c *Cluster) MembersUpToDate() bool {
	if c.Unpublished != nil {
		return false
	}
	for _, m := range c.Topo.Members {
		if m.Leaving() {
			return false
		}
		if m.Shard() >= c.Shards() {
			return false
		}
		if !m.PodCurrent() {
			// Its pod has not been rebuilt for the revision it was given yet: a roll
			// authorised on it is still ahead.
			return false
		}
		if out, _ := c.Outdated(m); out || DiffSpec(m.Node.Spec, DesiredSpec(c.VC, m.Shard()), m.LiveVersion()).Live {
			return false
		}
		if cond := conditions.Get(m.Node.Status.Conditions, v1alpha1.ConditionConfigApplied); cond != nil &&
			(cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != m.Node.Generation) {
			return false
		}
	}
	return true
}

// AllStateOK reports whether every member that answers says the cluster is ok. A member
// that does not answer (a successor still pending, a pod restarting) is not part of the
// serving cluster; the redundancy it would add is checked per shard.
func (c *Cluster) AllStateOK() bool {
	for _, m := range c.Topo.Reachable() {
		if !m.Leaving() && m.State != "ok" {
			return false
		}
	}
	return true
}

// ShardReady reports whether shard sh has its primary with slots and all its replicas in sync.
func (c *Cluster) ShardReady(sh int32) bool {
	p := c.Topo.PrimaryOf(sh)
	if p == nil || p.Leaving() || len(p.Slots()) == 0 {
		return false
	}
	var syncedReplicas int32
	for _, m := range c.Active(sh) {
		if m != p && Synced(m, p) {
			syncedReplicas++
		}
	}
	return syncedReplicas >= c.Replicas()
}

func (c *Cluster) ShardsReady() int32 {
	var n int32
	for sh := int32(0); sh < c.Shards(); sh++ {
		if c.ShardReady(sh) {
			n++
		}
	}
	return n
}
