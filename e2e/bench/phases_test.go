//go:build bench

package bench

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// memberSeen is when the sampler first saw a member in each state during a roll.
type memberSeen struct {
	shard                           int32
	old                             bool // there before the roll
	wasPrimary                      bool // the shard's primary before the roll
	created, podReady, synced, gone time.Time
	primary, replica                time.Time // first seen in that role
}

// phaseSampler lists the cluster's members every 100 ms during a roll and records when
// each reached each state, to break the roll's time down by phase.
type phaseSampler struct {
	stop, done chan struct{}
	start      time.Time
	mu         sync.Mutex
	members    map[string]*memberSeen
}

func startPhaseSampler(ctx context.Context, k *framework.Cluster, vc *v1alpha1.ValkeyCluster) *phaseSampler {
	ps := &phaseSampler{stop: make(chan struct{}), done: make(chan struct{}), start: time.Now(), members: map[string]*memberSeen{}}
	first := true
	sample := func() {
		var list v1alpha1.ValkeyNodeList
		if err := k.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name}); err != nil {
			return
		}
		now := time.Now()
		ps.mu.Lock()
		defer ps.mu.Unlock()
		present := map[string]bool{}
		for _, vn := range list.Items {
			present[vn.Name] = true
			m := ps.members[vn.Name]
			if m == nil {
				m = &memberSeen{shard: vn.Spec.ShardIndex, old: first, created: now,
					wasPrimary: first && vn.Status.Role == v1alpha1.RolePrimary}
				ps.members[vn.Name] = m
			}
			if !vn.DeletionTimestamp.IsZero() && m.gone.IsZero() {
				m.gone = now
			}
			set := func(at *time.Time, ok bool) {
				if ok && at.IsZero() {
					*at = now
				}
			}
			set(&m.podReady, isTrue(vn.Status.Conditions, v1alpha1.ConditionPodReady))
			set(&m.synced, isTrue(vn.Status.Conditions, v1alpha1.ConditionSynced))
			set(&m.primary, vn.Status.Role == v1alpha1.RolePrimary)
			set(&m.replica, vn.Status.Role == v1alpha1.RoleReplica)
		}
		for name, m := range ps.members {
			if !present[name] && m.gone.IsZero() {
				m.gone = now
			}
		}
		first = false
	}
	sample()
	go func() {
		defer close(ps.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ps.stop:
				sample()
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return ps
}

func isTrue(cs []metav1.Condition, typ string) bool {
	return meta.IsStatusConditionTrue(cs, typ)
}

// rollPhases is the breakdown of one shard's roll by replacement, in seconds: the
// successors' pods starting (created to PodReady), their sync (PodReady to Synced), the
// failover (successors synced to the old primary seen as a replica), the retirement
// (old primary demoted to gone); and the shard's span (first successor created to old
// primary gone).
type rollPhases struct {
	Shard      int32   `json:"shard"`
	PodStart   float64 `json:"pod_start_seconds"`
	Sync       float64 `json:"sync_seconds"`
	Failover   float64 `json:"failover_seconds"`
	Retirement float64 `json:"retirement_seconds"`
	Span       float64 `json:"span_seconds"`
}

// Stop ends the sampling and returns each shard's phases.
func (ps *phaseSampler) Stop() []rollPhases {
	close(ps.stop)
	<-ps.done
	ps.mu.Lock()
	defer ps.mu.Unlock()
	byShard := map[int32][]*memberSeen{}
	for _, m := range ps.members {
		byShard[m.shard] = append(byShard[m.shard], m)
	}
	var out []rollPhases
	for sh, ms := range byShard {
		var succ []*memberSeen
		var oldPrimary *memberSeen
		for _, m := range ms {
			switch {
			case !m.old:
				succ = append(succ, m)
			case m.wasPrimary:
				oldPrimary = m
			}
		}
		if len(succ) == 0 || oldPrimary == nil {
			continue
		}
		var created, ready, synced time.Time
		for _, m := range succ {
			created = earliest(created, m.created)
			ready = latest(ready, m.podReady)
			synced = latest(synced, m.synced)
		}
		p := rollPhases{Shard: sh, PodStart: secs(ready.Sub(created)), Sync: secs(synced.Sub(ready))}
		if !oldPrimary.replica.IsZero() {
			p.Failover = secs(oldPrimary.replica.Sub(synced))
			if !oldPrimary.gone.IsZero() {
				p.Retirement = secs(oldPrimary.gone.Sub(oldPrimary.replica))
			}
		}
		if !oldPrimary.gone.IsZero() {
			p.Span = secs(oldPrimary.gone.Sub(created))
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Shard < out[j].Shard })
	return out
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// describePhases is the phases of a run for the log.
func describePhases(ps []rollPhases) string {
	s := ""
	for _, p := range ps {
		s += fmt.Sprintf(" shard %d: pods %.1fs, sync %.1fs, failover %.1fs, retirement %.1fs (span %.1fs);",
			p.Shard, p.PodStart, p.Sync, p.Failover, p.Retirement, p.Span)
	}
	return s
}
