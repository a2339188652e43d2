package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/cluster-controller/internal/plan/plantest"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// condString is a condition as a user reads it: "True Reason: message".
func condString(c metav1.Condition) string {
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
}

func condOf(cs []metav1.Condition, typ string) string {
	for _, c := range cs {
		if c.Type == typ {
			return condString(c)
		}
	}
	return "(none)"
}

// noAnswers makes every member's server silent, as newScope does while the operator's
// credentials are not published: nobody is asked.
func noAnswers(s *scope) {
	for _, m := range s.Topo.Members {
		m.Reachable, m.Self, m.View, m.Err = false, valkey.ClusterNode{}, nil, s.credErr
	}
}

func TestComputeClusterStatus(t *testing.T) {
	const applied = "False Reconciled: the cluster is as the spec asks"
	const serving = "True ClusterReady: 3 shards with 1 replicas each serve all 16384 slots"
	cases := []struct {
		name  string
		fms   []plantest.FakeMember
		mod   func(*scope)
		err   error // of the pass
		state v1alpha1.ClusterState
		// observed is the observedGeneration written; the cluster is at generation 3 and
		// observed 2 before the pass.
		observed    int64
		readyShards int32
		ready       string
		progressing string
	}{
		{
			name: "a serving cluster with its spec applied is Ready and not Progressing",
			fms:  plantest.HealthyThreeByOne(), state: v1alpha1.StateReady, observed: 3, readyShards: 3,
			ready: serving, progressing: applied,
		},
		{
			name: "a replica not in sync yet: not Ready, waiting for sync with the count of ready shards",
			fms:  plantest.ThreeByOne(), state: v1alpha1.StateDegraded, observed: 3, readyShards: 2,
			ready:       "False WaitingForSync: 2 of 3 shards ready",
			progressing: "True WaitingForSync: 2 of 3 shards ready",
		},
		{
			name: "a roll in flight on a serving cluster keeps it Ready; Progressing says what the roll does",
			fms:  plantest.HealthyThreeByOne(),
			mod: func(s *scope) {
				s.progress(v1alpha1.ReasonRolling, "shard 1: retiring outdated replica b2")
			},
			state: v1alpha1.StateUpdating, observed: 3, readyShards: 3,
			ready: serving, progressing: "True Rolling: shard 1: retiring outdated replica b2",
		},
		{
			name:  "slots moving to a new shard: state Scaling",
			fms:   plantest.HealthyThreeByOne(),
			mod:   func(s *scope) { s.progress(v1alpha1.ReasonScalingOut, "moving 4096 slots in 3 moves") },
			state: v1alpha1.StateScaling, observed: 3, readyShards: 3,
			ready: serving, progressing: "True ScalingOut: moving 4096 slots in 3 moves",
		},
		{
			name:  "a blocked roll is what Progressing reports",
			fms:   plantest.HealthyThreeByOne(),
			mod:   func(s *scope) { s.block("b3", "shard 1: the roll is blocked: successor b3 cannot run") },
			state: v1alpha1.StateUpdating, observed: 3, readyShards: 3,
			ready: serving, progressing: "True RollBlocked: shard 1: the roll is blocked: successor b3 cannot run",
		},
		{
			name: "members that cannot run and a shard not ready: state Failed, Ready says why",
			fms:  plantest.ThreeByOne(),
			mod: func(s *scope) {
				s.progress(v1alpha1.ReasonPriorityClassNotFound, "1 member cannot run (b2: priority class \"gold\" not found)")
			},
			state: v1alpha1.StateFailed, observed: 3, readyShards: 2,
			ready:       "False PriorityClassNotFound: 1 member cannot run (b2: priority class \"gold\" not found)",
			progressing: "True PriorityClassNotFound: 1 member cannot run (b2: priority class \"gold\" not found)",
		},
		{
			name: "an invalid spec on a cluster with an applied spec: Progressing says it keeps healing",
			fms:  plantest.HealthyThreeByOne(),
			mod: func(s *scope) {
				s.guard.Errs = field.ErrorList{field.Forbidden(field.NewPath("spec", "config").Key("port"), "is managed by the operator")}
				s.healOnly = true
			},
			state: v1alpha1.StateInvalid, observed: 2, readyShards: 3,
			ready: serving,
			progressing: "False Invalid: the spec is invalid (see InvalidSpec): the operator applies none of it " +
				"and keeps healing the cluster as its last valid spec says",
		},
		{
			name: "a pass that failed: Progressing reports the error and the generation is not observed",
			fms:  plantest.HealthyThreeByOne(), err: errors.New("slots: connection refused"),
			state: v1alpha1.StateUpdating, observed: 2, readyShards: 3,
			ready: serving, progressing: "True ReconcileError: slots: connection refused",
		},
		{
			name: "an invalid spec: the operator does not act, Progressing is False and the state Invalid",
			fms:  plantest.HealthyThreeByOne(),
			mod: func(s *scope) {
				s.guard.Errs = field.ErrorList{field.Invalid(field.NewPath("spec", "shards"), -1, "must be positive")}
				_, _ = (&Reconciler{}).run(context.Background(), s)
			},
			state: v1alpha1.StateInvalid, observed: 2, readyShards: 3,
			ready: serving, progressing: "False Invalid: the spec is invalid (see InvalidSpec): the operator does not act on it",
		},
		{
			name: "a field that cannot change was changed: Progressing is False and says which",
			fms:  plantest.HealthyThreeByOne(),
			mod: func(s *scope) {
				s.immutable = field.ErrorList{field.Invalid(field.NewPath("spec", "workloadType"), "Deployment", "is immutable")}
				_, _ = (&Reconciler{}).run(context.Background(), s)
			},
			state: v1alpha1.StateInvalid, observed: 2, readyShards: 3,
			ready: serving,
			progressing: "False ImmutableFieldChanged: the spec changes fields that cannot change after creation " +
				"(spec.workloadType: Invalid value: \"Deployment\": is immutable): the operator does not act on it",
		},
		{
			name: "the operator's credentials are not published yet: waiting for the acl-controller",
			fms:  plantest.HealthyThreeByOne(),
			mod: func(s *scope) {
				s.credErr = valkeyconn.ErrNotReady
				noAnswers(s)
			},
			state: v1alpha1.StateCreating, observed: 3, readyShards: 0,
			ready:       "False WaitingForACL: waiting for the acl-controller to publish the operator's credentials",
			progressing: "True WaitingForACL: waiting for the acl-controller to publish the operator's credentials",
		},
		{
			name: "no accepted certificate is named in status.tls yet: not Ready, waiting for the tls-controller and saying what TLSReady says",
			fms:  plantest.HealthyThreeByOne(),
			mod: func(s *scope) {
				s.credErr = fmt.Errorf("%w: %w", valkeyconn.ErrNotReady, &v1alpha1.NotPublishedError{Field: "status.tls.acceptedSecretName",
					Producer: "tls-controller", Reason: v1alpha1.ReasonWaitingForTLS, Condition: "TLSReady=False SecretMissing: Secret certs not found"})
				noAnswers(s)
			},
			state: v1alpha1.StateCreating, observed: 3, readyShards: 0,
			ready:       "False WaitingForTLS: status.tls.acceptedSecretName is not set: waiting for the tls-controller (TLSReady=False SecretMissing: Secret certs not found)",
			progressing: "True WaitingForTLS: status.tls.acceptedSecretName is not set: waiting for the tls-controller (TLSReady=False SecretMissing: Secret certs not found)",
		},
		{
			name: "a new cluster whose slots are being assigned: state Creating",
			fms: []plantest.FakeMember{
				{Name: "a", Shard: 0, IP: "10.0.0.1", ID: "A", Joining: true},
				{Name: "b", Shard: 1, IP: "10.0.0.2", ID: "B", Joining: true},
				{Name: "c", Shard: 2, IP: "10.0.0.3", ID: "C", Joining: true},
			},
			mod: func(s *scope) {
				s.progress(v1alpha1.ReasonAssigningSlots, "assigned the slots; waiting for the cluster to agree")
			},
			state: v1alpha1.StateCreating, observed: 3, readyShards: 0,
			ready:       "False AssigningSlots: assigned the slots; waiting for the cluster to agree",
			progressing: "True AssigningSlots: assigned the slots; waiting for the cluster to agree",
		},
		{
			name: "a phase stopped by a member's reply too large: Progressing names the member and the command",
			fms:  plantest.HealthyThreeByOne(),
			mod: func(s *scope) {
				s.progress(v1alpha1.ReasonScalingIn, "moving 5461 slots off shard 2")
				for _, m := range s.Topo.Members {
					m.Addr = m.IP() + ":6379"
				}
				s.stopTooLarge("scale", errors.New("connection refused")) // not a reply too large: no change
				s.stopTooLarge("scale", fmt.Errorf("cluster getkeysinslot 12000: %w",
					&valkey.ReplyTooLargeError{Addr: "10.0.0.3:6379", Command: "CLUSTER GETKEYSINSLOT", Limit: 8 << 20}))
			},
			state: v1alpha1.StateUpdating, observed: 3, readyShards: 3,
			ready: serving,
			progressing: "True ReplyTooLarge: member c answered CLUSTER GETKEYSINSLOT with more than 8 MiB; " +
				"the scale step cannot go on until the reply fits",
		},
		{
			name:  "a primary that does not answer: state Degraded",
			fms:   plantest.With(plantest.HealthyThreeByOne(), "a", func(f *plantest.FakeMember) { f.Down = true }),
			state: v1alpha1.StateDegraded, observed: 3, readyShards: 2,
			ready:       "False WaitingForSync: 2 of 3 shards ready",
			progressing: "True WaitingForSync: 2 of 3 shards ready",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vc := plantest.Cluster(nil)
			vc.Generation, vc.Status.ObservedGeneration = 3, 2
			s := scopeFor(t, vc, c.fms)
			if c.mod != nil {
				c.mod(s)
			}
			st := computeClusterStatus(s, c.err)
			if st.State != c.state {
				t.Errorf("state = %s, want %s", st.State, c.state)
			}
			if st.ObservedGeneration != c.observed {
				t.Errorf("observedGeneration = %d, want %d", st.ObservedGeneration, c.observed)
			}
			if st.ReadyShards != c.readyShards {
				t.Errorf("readyShards = %d, want %d", st.ReadyShards, c.readyShards)
			}
			if got := condOf(st.Conditions, v1alpha1.ConditionReady); got != c.ready {
				t.Errorf("Ready = %s\nwant     %s", got, c.ready)
			}
			if got := condOf(st.Conditions, v1alpha1.ConditionProgressing); got != c.progressing {
				t.Errorf("Progressing = %s\nwant           %s", got, c.progressing)
			}
			if len(st.Conditions) != len(clusterConditionTypes) {
				t.Errorf("%d conditions, want one of each of the %d types owned", len(st.Conditions), len(clusterConditionTypes))
			}
		})
	}
}

// wasReady marks the scope's cluster as one that has been Ready.
func wasReady(s *scope) { plantest.WasReady(&s.Cluster) }

func TestDegradedCondition(t *testing.T) {
	const fine = "False ClusterReady: every shard has its primary and all its replicas in sync"
	empty := func(joining bool) []plantest.FakeMember {
		return []plantest.FakeMember{
			{Name: "a", Shard: 0, IP: "10.0.0.1", ID: "A", Joining: joining},
			{Name: "b", Shard: 1, IP: "10.0.0.2", ID: "B", Joining: joining},
			{Name: "c", Shard: 2, IP: "10.0.0.3", ID: "C", Joining: joining},
		}
	}
	cases := []struct {
		name string
		fms  []plantest.FakeMember
		vc   func(*v1alpha1.ValkeyClusterSpec)
		mod  func(*scope)
		want string
	}{
		{name: "every shard with its primary and its replicas in sync: not degraded", fms: plantest.HealthyThreeByOne(), want: fine},
		{
			name: "a cluster being created is not degraded",
			fms:  empty(true),
			want: "False Waiting: the cluster is being created",
		},
		{
			name: "without the operator's credentials nothing is known: not degraded",
			fms:  plantest.HealthyThreeByOne(),
			mod: func(s *scope) {
				s.credErr = valkeyconn.ErrNotReady
				noAnswers(s)
			},
			want: "False Waiting: the cluster is being created",
		},
		{
			name: "every server restarted without its data after the cluster was Ready: no slot is served",
			fms:  empty(false),
			mod:  wasReady,
			want: "True SlotsUncovered: no server serves any slot (0-16383): no member that answers serves one",
		},
		{
			name: "a cluster never Ready whose servers serve no slot is being created, whatever its members' lifecycle says",
			fms:  empty(false),
			want: "False Waiting: the cluster is being created",
		},
		{
			name: "no member answers after the cluster served: no slot is served",
			fms: func() []plantest.FakeMember {
				var out []plantest.FakeMember
				for _, f := range plantest.HealthyThreeByOne() {
					f.Down = true
					out = append(out, f)
				}
				return out
			}(),
			mod:  wasReady,
			want: "True SlotsUncovered: no server serves any slot (0-16383): no member answers",
		},
		{
			name: "a primary that does not answer is named with its slots",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "a", func(f *plantest.FakeMember) { f.Down = true }),
			want: "True PrimaryLost: primaries not answering: A (slots 0-5461)",
		},
		{
			name: "slots no primary serves: requests to them fail",
			fms:  plantest.Without(plantest.With(plantest.HealthyThreeByOne(), "c", func(f *plantest.FakeMember) { f.Slots = "" }), "c2"),
			want: "True SlotsUncovered: 5461 of 16384 slots have no primary: requests to them fail",
		},
		{
			name: "a replica whose link is down is named as not in sync",
			fms:  plantest.ThreeByOne(),
			want: "True MissingReplicas: shard 2 has 0 of 1 replicas in sync (not in sync: c2: link to the primary down)",
		},
		{
			name: "a replica more than 1 MiB behind is not in sync",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "b", func(f *plantest.FakeMember) { f.Offset = 3 << 20 }),
			want: "True MissingReplicas: shard 1 has 0 of 1 replicas in sync (not in sync: b2: 3145638 bytes behind)",
		},
		{
			name: "a shard missing its replica",
			fms:  plantest.Without(plantest.HealthyThreeByOne(), "c2"),
			want: "True MissingReplicas: shard 2 has 0 of 1 replicas in sync",
		},
		{
			name: "a leaving replica does not count towards its shard's redundancy",
			fms:  plantest.With(plantest.HealthyThreeByOne(), "c2", func(f *plantest.FakeMember) { f.Leaving = true }),
			want: "True MissingReplicas: shard 2 has 0 of 1 replicas in sync",
		},
		{
			name: "a new shard of the spec without a member yet has no primary",
			fms:  plantest.HealthyThreeByOne(),
			vc:   func(s *v1alpha1.ValkeyClusterSpec) { s.Shards = 4 },
			want: "True MissingReplicas: shard 3 has no primary",
		},
		{
			name: "every shard short of a replica is listed",
			fms:  plantest.HealthyThreeByOne(),
			vc:   func(s *v1alpha1.ValkeyClusterSpec) { s.ReplicasPerShard = ptr.To[int32](2) },
			want: "True MissingReplicas: shard 0 has 1 of 2 replicas in sync; shard 1 has 1 of 2 replicas in sync; " +
				"shard 2 has 1 of 2 replicas in sync",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := scopeFor(t, plantest.Cluster(c.vc), c.fms)
			if c.mod != nil {
				c.mod(s)
			}
			if got := condString(degradedCondition(s, 1)); got != c.want {
				t.Errorf("Degraded = %s\nwant        %s", got, c.want)
			}
		})
	}
}

func TestComputeMemberStatus(t *testing.T) {
	const (
		joined    = "True Joined: part of the cluster in shard %d"
		notJoined = "False NotJoined: not yet part of the cluster in its shard"
		inSync    = "True InSync: linked to its primary and caught up"
		primary   = "True Primary: the member is the shard's primary"
		notRepl   = "False NotJoined: not replicating the shard's primary"
	)
	cases := []struct {
		name      string
		fms       []plantest.FakeMember
		member    string
		mod       func(*scope)
		nodeID    string
		lifecycle v1alpha1.Lifecycle
		joined    string
		synced    string
	}{
		{
			name: "the shard's primary", fms: plantest.HealthyThreeByOne(), member: "a",
			nodeID: "A", lifecycle: v1alpha1.LifecycleActive, joined: fmt.Sprintf(joined, 0), synced: primary,
		},
		{
			name: "a replica in sync", fms: plantest.HealthyThreeByOne(), member: "a2",
			nodeID: "A2", lifecycle: v1alpha1.LifecycleActive, joined: fmt.Sprintf(joined, 0), synced: inSync,
		},
		{
			name: "a new replica whose link is not up yet is joining",
			fms:  plantest.With(plantest.ThreeByOne(), "c2", func(f *plantest.FakeMember) { f.Joining = true }), member: "c2",
			nodeID: "C2", lifecycle: v1alpha1.LifecycleJoining, joined: fmt.Sprintf(joined, 2),
			synced: "False LinkDown: the replication link to the primary is down",
		},
		{
			name: "an active replica whose link went down stays active", fms: plantest.ThreeByOne(), member: "c2",
			nodeID: "C2", lifecycle: v1alpha1.LifecycleActive, joined: fmt.Sprintf(joined, 2),
			synced: "False LinkDown: the replication link to the primary is down",
		},
		{
			name: "a new replica linked but far behind is still syncing",
			fms: plantest.With(plantest.With(plantest.HealthyThreeByOne(), "b", func(f *plantest.FakeMember) { f.Offset = 3 << 20 }),
				"b2", func(f *plantest.FakeMember) { f.Joining = true }),
			member: "b2",
			nodeID: "B2", lifecycle: v1alpha1.LifecycleJoining, joined: fmt.Sprintf(joined, 1),
			synced: "False Syncing: replication has not caught up",
		},
		{
			name:   "a server that does not answer says why",
			fms:    plantest.With(plantest.HealthyThreeByOne(), "c2", func(f *plantest.FakeMember) { f.Down = true }),
			member: "c2",
			mod: func(s *scope) {
				plantest.MemberNamed(t, s.Topo, "c2").Err = errors.New("dial tcp 10.0.0.6:6379: connect: connection refused")
			},
			nodeID: "C2", lifecycle: v1alpha1.LifecycleActive,
			joined: "False NotJoined: the server is not reachable: dial tcp 10.0.0.6:6379: connect: connection refused",
			synced: notRepl,
		},
		{
			name: "a new member that is a primary without slots in a shard that has one is not part of it yet",
			fms: append(plantest.HealthyThreeByOne(),
				plantest.FakeMember{Name: "a3", Shard: 0, IP: "10.0.0.7", ID: "A3", Joining: true}),
			member: "a3",
			nodeID: "A3", lifecycle: v1alpha1.LifecycleJoining, joined: notJoined, synced: notRepl,
		},
		{
			name: "a replica in sync that the other members do not know yet is not joined",
			fms: append(plantest.HealthyThreeByOne(),
				plantest.FakeMember{Name: "a3", Shard: 0, IP: "10.0.0.7", ID: "A3", Primary: "A", Offset: 100, LinkUp: true, Joining: true}),
			member: "a3",
			mod:    func(s *scope) { plantest.Unknown(s.Topo, "A3") },
			nodeID: "A3", lifecycle: v1alpha1.LifecycleJoining, joined: notJoined, synced: inSync,
		},
		{
			name:   "a member being deleted is leaving",
			fms:    plantest.With(plantest.HealthyThreeByOne(), "c2", func(f *plantest.FakeMember) { f.Leaving = true }),
			member: "c2",
			nodeID: "C2", lifecycle: v1alpha1.LifecycleLeaving, joined: fmt.Sprintf(joined, 2), synced: inSync,
		},
		{
			name:   "a pod that came back with a new identity reports the server's node ID",
			fms:    plantest.HealthyThreeByOne(),
			member: "a2",
			mod:    func(s *scope) { plantest.MemberNamed(t, s.Topo, "a2").Node.Status.NodeID = "A2-BEFORE" },
			nodeID: "A2", lifecycle: v1alpha1.LifecycleActive, joined: fmt.Sprintf(joined, 0), synced: inSync,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := scopeFor(t, plantest.Cluster(nil), c.fms)
			if c.mod != nil {
				c.mod(s)
			}
			st := computeMemberStatus(s, plantest.MemberNamed(t, s.Topo, c.member))
			if st.NodeID != c.nodeID {
				t.Errorf("nodeID = %s, want %s", st.NodeID, c.nodeID)
			}
			if st.Lifecycle != c.lifecycle {
				t.Errorf("lifecycle = %s, want %s", st.Lifecycle, c.lifecycle)
			}
			if got := condOf(st.Conditions, v1alpha1.ConditionJoined); got != c.joined {
				t.Errorf("Joined = %s\nwant      %s", got, c.joined)
			}
			if got := condOf(st.Conditions, v1alpha1.ConditionSynced); got != c.synced {
				t.Errorf("Synced = %s\nwant      %s", got, c.synced)
			}
		})
	}
}

func TestKstatusConditions(t *testing.T) {
	prog := func(status bool, reason string) metav1.Condition {
		return conditions.New(v1alpha1.ConditionProgressing, status, reason, "msg "+reason, 4)
	}
	ready := conditions.New(v1alpha1.ConditionReady, false, v1alpha1.ReasonImagePullBackOff, "2 members cannot pull", 4)
	for _, c := range []struct {
		name                 string
		progressing          metav1.Condition
		state                v1alpha1.ClusterState
		reconciling, stalled metav1.ConditionStatus
		reason               string
	}{
		{"rolling", prog(true, v1alpha1.ReasonRolling), v1alpha1.StateUpdating, metav1.ConditionTrue, metav1.ConditionFalse, v1alpha1.ReasonRolling},
		{"applied", prog(false, v1alpha1.ReasonReconciled), v1alpha1.StateReady, metav1.ConditionFalse, metav1.ConditionFalse, v1alpha1.ReasonReconciled},
		{"roll blocked", prog(true, v1alpha1.ReasonRollBlocked), v1alpha1.StateUpdating, metav1.ConditionFalse, metav1.ConditionTrue, v1alpha1.ReasonRollBlocked},
		{"invalid", prog(false, v1alpha1.ReasonInvalid), v1alpha1.StateInvalid, metav1.ConditionFalse, metav1.ConditionTrue, v1alpha1.ReasonInvalid},
		{"members cannot run", prog(true, v1alpha1.ReasonImagePullBackOff), v1alpha1.StateFailed, metav1.ConditionFalse, metav1.ConditionTrue, v1alpha1.ReasonImagePullBackOff},
	} {
		got := kstatusConditions(c.progressing, ready, c.state, 4)
		if got[0].Type != v1alpha1.ConditionReconciling || got[1].Type != v1alpha1.ConditionStalled {
			t.Fatalf("%s: types %s, %s", c.name, got[0].Type, got[1].Type)
		}
		if got[0].Status != c.reconciling || got[1].Status != c.stalled || got[0].Reason != c.reason || got[0].ObservedGeneration != 4 {
			t.Errorf("%s: Reconciling %s %s, Stalled %s %s; want Reconciling %s %s, Stalled %s",
				c.name, got[0].Status, got[0].Reason, got[1].Status, got[1].Reason, c.reconciling, c.reason, c.stalled)
		}
	}
}
