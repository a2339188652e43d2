package backup

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// MaxAttempts bounds the transfers of one shard: a source lost mid-transfer (a roll
// retiring the replica, a pod deleted) moves the backup to another member this many
// times before it fails.
const MaxAttempts = 3

// chooseSource picks the member a shard's snapshot is taken from: a replica in sync
// (its pod running, Joined and Synced, not leaving, not excluded by an earlier attempt),
// by name for a stable choice. Only when the spec gives the shard no replica is the
// primary used (fromPrimary, which the caller warns about). ok is false when nothing
// fits yet.
func chooseSource(nodes []v1alpha1.ValkeyNode, shard, replicasPerShard int32, exclude map[string]bool) (src source, fromPrimary, ok bool) {
	var replicas, primaries []source
	for i := range nodes {
		vn := &nodes[i]
		if vn.Spec.ShardIndex != shard || !vn.DeletionTimestamp.IsZero() || vn.Status.PodIP == "" ||
			vn.Status.Lifecycle == v1alpha1.LifecycleLeaving || exclude[vn.Name] ||
			!conditions.IsTrue(vn.Status.Conditions, v1alpha1.ConditionPodReady) ||
			!conditions.IsTrue(vn.Status.Conditions, v1alpha1.ConditionJoined) {
			continue
		}
		s := source{node: vn.Name, ip: vn.Status.PodIP, role: vn.Status.Role}
		switch {
		case vn.Status.Role == v1alpha1.RoleReplica && conditions.IsTrue(vn.Status.Conditions, v1alpha1.ConditionSynced):
			replicas = append(replicas, s)
		case vn.Status.Role == v1alpha1.RolePrimary:
			primaries = append(primaries, s)
		}
	}
	byName := func(l []source) { sort.Slice(l, func(i, j int) bool { return l[i].node < l[j].node }) }
	byName(replicas)
	byName(primaries)
	switch {
	case len(replicas) > 0:
		return replicas[0], false, true
	case replicasPerShard == 0 && len(primaries) == 1:
		return primaries[0], true, true
	}
	return source{}, false, false
}

// attempt is one transfer of a shard as its Job shows it.
type attempt struct {
	n      int
	node   string
	role   string
	state  jobState
	result jobapi.Result
	// hasResult: the pod left a Result.
	hasResult bool
	// failReason, failMessage: why the Job failed when it left no Result.
	failReason, failMessage string
}

// shardAction is what a pass does for one shard.
type shardAction int

const (
	// actStart starts attempt next (with a source other than the failed ones).
	actStart shardAction = iota
	// actWait waits for the running attempt.
	actWait
	// actDone: the shard's snapshot is in the store (result).
	actDone
	// actFail: the shard failed for good (reason, message).
	actFail
)

// shardDecision is the outcome of decideShard.
type shardDecision struct {
	action  shardAction
	next    int
	exclude map[string]bool
	result  jobapi.Result
	last    *attempt
	reason  string
	message string
}

// retriable are the Result reasons a new attempt (on another member) may fix.
var retriable = map[string]bool{
	jobapi.ReasonSourceLost: true, jobapi.ReasonSourceNotInSync: true, jobapi.ReasonAuthFailed: true,
	jobapi.ReasonStoreUnreachable: true, v1alpha1.ReasonTransferFailed: true,
}

// decideShard decides from a shard's attempts (any order).
func decideShard(attempts []attempt) shardDecision {
	if len(attempts) == 0 {
		return shardDecision{action: actStart, next: 1, exclude: map[string]bool{}}
	}
	sort.Slice(attempts, func(i, j int) bool { return attempts[i].n < attempts[j].n })
	last := &attempts[len(attempts)-1]
	d := shardDecision{last: last, exclude: map[string]bool{}}
	for _, a := range attempts {
		if a.state == jobFailed && a.node != "" {
			d.exclude[a.node] = true
		}
	}
	switch last.state {
	case jobRunning:
		d.action = actWait
		return d
	case jobSucceeded:
		if last.hasResult && last.result.Reason == "" && last.result.SHA256 != "" {
			d.action, d.result = actDone, last.result
			return d
		}
		last.failReason, last.failMessage = v1alpha1.ReasonTransferFailed, "the Job succeeded without a result"
	}
	reason, msg := last.failReason, last.failMessage
	if last.hasResult && last.result.Reason != "" {
		reason, msg = last.result.Reason, last.result.Message
	}
	d.reason, d.message = failedReason(reason), msg
	if retriable[reason] && last.n < MaxAttempts {
		d.action, d.next = actStart, last.n+1
		return d
	}
	d.action = actFail
	return d
}

// failedReason maps a Job's reason onto the Failed condition's.
func failedReason(r string) string {
	switch r {
	case jobapi.ReasonSourceLost, jobapi.ReasonSourceNotInSync:
		return v1alpha1.ReasonSourceLost
	case jobapi.ReasonAccessDenied:
		return v1alpha1.ReasonAccessDenied
	case jobapi.ReasonEndpointRefused:
		return v1alpha1.ReasonEndpointRefused
	case jobapi.ReasonStoreUnreachable, jobapi.ReasonNotFound:
		return v1alpha1.ReasonStoreUnreachable
	case v1alpha1.ReasonDeadlineExceeded:
		return r
	}
	return v1alpha1.ReasonTransferFailed
}

// backupConditions are the Completed and Failed conditions of a backup in phase.
func backupConditions(phase v1alpha1.BackupPhase, reason, message string, gen int64) []metav1.Condition {
	switch phase {
	case v1alpha1.BackupCompleted:
		return []metav1.Condition{
			conditions.New(v1alpha1.ConditionCompleted, true, v1alpha1.ReasonBackupCompleted, message, gen),
			conditions.New(v1alpha1.ConditionFailed, false, v1alpha1.ReasonBackupNotFailed, "the backup completed", gen),
		}
	case v1alpha1.BackupFailed:
		return []metav1.Condition{
			conditions.New(v1alpha1.ConditionCompleted, false, reason, "the backup failed: no manifest was written", gen),
			conditions.New(v1alpha1.ConditionFailed, true, reason, message, gen),
		}
	}
	if reason == "" {
		reason = v1alpha1.ReasonBackupInProgress
	}
	return []metav1.Condition{
		conditions.New(v1alpha1.ConditionCompleted, false, reason, message, gen),
		conditions.New(v1alpha1.ConditionFailed, false, v1alpha1.ReasonBackupNotFailed, "no failure", gen),
	}
}
