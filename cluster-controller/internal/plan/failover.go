package plan

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// LegacyFailoverAt and LegacyFailoverKind are the annotations in which earlier versions of
// the controller recorded a failover. A member that still carries them (a failover in
// flight while the operator was upgraded) is read as if its status held them, and they
// are removed when that failover is closed; they are never written.
const (
	LegacyFailoverAt   = "valkey.io/failover-requested-at"
	LegacyFailoverKind = "valkey.io/failover-kind"
	// legacyForced is the value of LegacyFailoverKind for a forced failover.
	legacyForced = "forced"
)

// FailoverRecord returns the failover asked of m, if any.
func FailoverRecord(m *Member) (v1alpha1.MemberFailover, bool) {
	if f := m.Node.Status.Failover; f != nil {
		return *f, true
	}
	at, err := time.Parse(time.RFC3339Nano, m.Node.Annotations[LegacyFailoverAt])
	if err != nil {
		return v1alpha1.MemberFailover{}, false
	}
	kind := v1alpha1.FailoverPlanned
	if m.Node.Annotations[LegacyFailoverKind] == legacyForced {
		kind = v1alpha1.FailoverForced
	}
	return v1alpha1.MemberFailover{Kind: kind, RequestedAt: metav1.NewMicroTime(at)}, true
}

// FailoverPending returns the member of shard sh asked to take over less than its
// failover window ago, if any.
func (c *Cluster) FailoverPending(sh int32) *Member {
	for _, m := range c.Topo.Shards[sh] {
		if at, ok := FailoverRequestedAt(m); ok && c.Topo.Now.Sub(at) < c.FailoverWindow(m) && !m.IsPrimary() {
			return m // still a replica: the failover has not completed
		}
	}
	return nil
}

// FailoverWindow is how long a failover asked of m is awaited before it is reported as
// timed out and may be asked again: the manual failover timeout plus a margin; for a
// forced one at least Valkey's election retry time (twice the election timeout of twice
// the node timeout, at least 2 s), because a replica whose election failed starts no
// new one sooner, whatever it is asked: asking again would only repeat the request (and
// its Takeover event) on a node slow to gather the votes.
func (c *Cluster) FailoverWindow(m *Member) time.Duration {
	if f, _ := FailoverRecord(m); f.Kind == v1alpha1.FailoverForced {
		return c.ForcedWindow()
	}
	return c.PlannedWindow()
}

// FailoverRequestedAt is when the failover recorded on m was asked for, if one is.
func FailoverRequestedAt(m *Member) (time.Time, bool) {
	f, ok := FailoverRecord(m)
	return f.RequestedAt.Time, ok
}

// PlannedWindow is how long a planned failover is awaited: the manual failover timeout
// plus a margin.
func (c *Cluster) PlannedWindow() time.Duration {
	return valkeyconf.ManualFailoverTimeout(c.VC.Spec.Config) + 2*time.Second
}

// ForcedWindow is how long a forced failover is awaited (see FailoverWindow).
func (c *Cluster) ForcedWindow() time.Duration {
	return max(c.PlannedWindow(), 2*max(2*NodeTimeout(c.VC), 2*time.Second))
}
