package acl

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// Rotation of the system users' passwords, requested by a new value of the
// ValkeyCluster annotation valkey.io/rotate-system-passwords. Every step keeps every
// client's password accepted by every member, so it causes no outage:
//
//	Adding        new passwords are generated into "<user>.next" keys of the system users
//	              Secret; the aclfile accepts old and new passwords; it is applied live.
//	              Leaves when every member runs that revision.
//	Propagating   the new passwords become the Secret's current keys (the old ones move to
//	              "<user>.previous"), primaryauth.conf and the exporter's password file
//	              follow. Controllers re-read the Secret at once; mounted copies follow
//	              within the kubelet's sync period. After the propagation delay (default
//	              2 min, flag --secret-propagation-delay) the primary auth is set live
//	              (CONFIG SET primaryauth) on every member and each exporter reloads its
//	              password file. Leaves when every member took the new primary auth.
//	Retiring      the aclfile accepts only the new passwords; it is applied live. When
//	              every member runs it, the ".previous" keys are deleted and the request
//	              is recorded as completed.
//
// The phase, the request being served and timestamps are the cluster's
// status.acl.rotation, so a restarted controller resumes where it stopped and a user
// reads where the rotation stands. A step writes the Secret's keys first and the status
// after; a pass while a rotation may run reads both from the API server, and where the
// keys are a step ahead of the status (its write failed) the keys win (settle).
const (
	nextSuffix     = ".next"
	previousSuffix = ".previous"
)

// legacyRotationAnnotations held the rotation's state on the system users Secret in
// earlier versions. A cluster whose status holds no rotation yet is read from them (a
// rotation under way during an upgrade goes on from its phase); they are removed from
// the Secret once the status holds it, and never written.
var legacyRotationAnnotations = struct{ phase, token, started, since, completed, finished string }{
	"valkey.io/rotation-phase", "valkey.io/rotation-token", "valkey.io/rotation-started",
	"valkey.io/rotation-phase-since", "valkey.io/rotation-completed", "valkey.io/rotation-finished",
}

// legacyKeys lists the legacy annotations.
func legacyKeys() []string {
	a := legacyRotationAnnotations
	return []string{a.phase, a.token, a.started, a.since, a.completed, a.finished}
}

// Phase is a step of a rotation.
type Phase string

// Phases of a rotation (the values of status.acl.rotation.phase); PhaseIdle means none
// runs.
const (
	PhaseIdle        Phase = ""
	PhaseAdding      Phase = Phase(v1alpha1.RotationAdding)
	PhasePropagating Phase = Phase(v1alpha1.RotationPropagating)
	PhaseRetiring    Phase = Phase(v1alpha1.RotationRetiring)
)

// Rotation is the state of a rotation of the system passwords.
type Rotation struct {
	Phase Phase
	// Token is the request being served; Completed the last one finished.
	Token, Completed string
	// Started is when the rotation began, Since when its phase began, Finished when
	// the last one ended.
	Started, Since, Finished time.Time
}

// rotationOf reads the rotation state from the cluster's status or, when the status
// holds none yet, from the legacy annotations of the system users Secret.
func rotationOf(vc *v1alpha1.ValkeyCluster, system *corev1.Secret) Rotation {
	if vc.Status.ACL != nil && vc.Status.ACL.Rotation != nil {
		return rotationFromStatus(vc.Status.ACL.Rotation)
	}
	return legacyRotation(system)
}

// rotationFromStatus reads status.acl.rotation.
func rotationFromStatus(st *v1alpha1.PasswordRotationStatus) Rotation {
	rot := Rotation{Phase: Phase(st.Phase), Token: st.Request, Completed: st.CompletedRequest,
		Started: timeOf(st.StartedAt), Since: timeOf(st.PhaseSince), Finished: timeOf(st.FinishedAt)}
	if st.Phase == v1alpha1.RotationIdle {
		rot.Phase = PhaseIdle
	}
	return rot
}

// status is status.acl.rotation of the state; nil while no rotation was ever asked.
func (rot Rotation) status() *v1alpha1.PasswordRotationStatus {
	if rot == (Rotation{}) {
		return nil
	}
	phase := v1alpha1.RotationPhase(rot.Phase)
	if rot.Phase == PhaseIdle {
		phase = v1alpha1.RotationIdle
	}
	return &v1alpha1.PasswordRotationStatus{Phase: phase, Request: rot.Token, CompletedRequest: rot.Completed,
		StartedAt: metaTime(rot.Started), PhaseSince: metaTime(rot.Since), FinishedAt: metaTime(rot.Finished)}
}

// legacyRotation reads the rotation state from the Secret's legacy annotations.
func legacyRotation(s *corev1.Secret) Rotation {
	a, k := s.Annotations, legacyRotationAnnotations
	return Rotation{
		Phase: Phase(a[k.phase]), Token: a[k.token], Completed: a[k.completed],
		Started: parseTime(a[k.started]), Since: parseTime(a[k.since]), Finished: parseTime(a[k.finished]),
	}
}

// hasLegacyAnnotations reports whether the Secret still carries a legacy annotation.
func hasLegacyAnnotations(s *corev1.Secret) bool {
	for _, k := range legacyKeys() {
		if _, ok := s.Annotations[k]; ok {
			return true
		}
	}
	return false
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func metaTime(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &mt
}

// hasKeys reports whether data holds a key of a system user with suffix.
func hasKeys(data map[string][]byte, suffix string) bool {
	for _, u := range systemUserNames {
		if len(data[u+suffix]) > 0 {
			return true
		}
	}
	return false
}

// mayRun reports whether a rotation may be under way or about to start: the state
// says so, the token asks for one, or the Secret holds the keys of one.
func (rot Rotation) mayRun(token string, data map[string][]byte) bool {
	return rot.Phase != PhaseIdle || rot.Requested(token) || hasKeys(data, nextSuffix) || hasKeys(data, previousSuffix)
}

// settle brings the state level with the Secret's keys, which a step writes before the
// status: a step whose status write failed left the keys one step ahead, and the keys
// win. ".next" keys are written only in Adding, ".previous" keys from Propagating until
// the rotation completes.
func settle(rot Rotation, data map[string][]byte, token string, now time.Time) Rotation {
	next, prev := hasKeys(data, nextSuffix), hasKeys(data, previousSuffix)
	switch {
	case rot.Phase == PhaseIdle && next && !prev && rot.Requested(token):
		return rot.enter(PhaseAdding, now, token)
	case (rot.Phase == PhaseIdle || rot.Phase == PhaseAdding) && !next && prev:
		if rot.Token == "" {
			rot.Token = token
		}
		return rot.enter(PhasePropagating, now, rot.Token)
	case (rot.Phase == PhasePropagating || rot.Phase == PhaseRetiring) && !prev:
		return Rotation{Completed: rot.Token, Finished: now}
	case rot.Phase == PhaseAdding && !next && !prev:
		// No key of the rotation is left (the Secret was replaced): it starts over.
		return Rotation{Completed: rot.Completed, Finished: rot.Finished}
	}
	return rot
}

// Requested reports whether token asks for a rotation that has not been served.
func (rot Rotation) Requested(token string) bool {
	return rot.Phase == PhaseIdle && token != "" && token != rot.Completed
}

// acceptedPasswords returns the passwords the servers must accept for each system user
// in a phase, sorted so that Adding (current + next) and Propagating (current +
// previous) render the same aclfile.
func acceptedPasswords(data map[string][]byte, phase Phase) systemPasswords {
	out := systemPasswords{}
	for _, u := range systemUserNames {
		pws := []string{string(data[u])}
		switch phase {
		case PhaseAdding:
			pws = appendIfSet(pws, data[u+nextSuffix])
		case PhasePropagating:
			pws = appendIfSet(pws, data[u+previousSuffix])
		}
		sort.Strings(pws)
		out[u] = pws
	}
	return out
}

func appendIfSet(list []string, v []byte) []string {
	if len(v) > 0 {
		return append(list, string(v))
	}
	return list
}

// operatorPasswords returns the _operator passwords to try, current first.
func operatorPasswords(data map[string][]byte) []string {
	out := []string{string(data[v1alpha1.UserOperator])}
	for _, suffix := range []string{previousSuffix, nextSuffix} {
		out = appendIfSet(out, data[v1alpha1.UserOperator+suffix])
	}
	return out
}

// RotationInput is what a pass observed, for Step.
type RotationInput struct {
	// Requested is the value of the cluster's rotation annotation.
	Requested string
	// AllApplied: every member runs the aclfile revision rendered for the current phase.
	AllApplied bool
	// ClientsMoved: every member took the new primary auth (set by the caller once
	// PropagationDue).
	ClientsMoved bool
	Now          time.Time
	// Delay is the time mounted Secrets need to follow a change.
	Delay time.Duration
}

// PropagationDue reports whether the propagation delay of the Propagating phase is over,
// so the caller may move the clients that read mounted files.
func (rot Rotation) PropagationDue(now time.Time, delay time.Duration) bool {
	return rot.Phase == PhasePropagating && !now.Before(rot.Since.Add(delay))
}

// Step advances the rotation: it returns the new state and changes data (the system
// users Secret's data) in place; changed reports whether anything changed. gen
// generates a password.
func Step(rot Rotation, data map[string][]byte, in RotationInput, gen func() (string, error)) (Rotation, bool, error) {
	switch rot.Phase {
	case PhaseIdle:
		if !rot.Requested(in.Requested) {
			return rot, false, nil
		}
		for _, u := range systemUserNames {
			pw, err := gen()
			if err != nil {
				return rot, false, fmt.Errorf("start rotation: %w", err)
			}
			data[u+nextSuffix] = []byte(pw)
		}
		return rot.enter(PhaseAdding, in.Now, in.Requested), true, nil
	case PhaseAdding:
		if !in.AllApplied {
			return rot, false, nil
		}
		for _, u := range systemUserNames {
			if next := data[u+nextSuffix]; len(next) > 0 {
				data[u+previousSuffix] = data[u]
				data[u] = next
			}
			delete(data, u+nextSuffix)
		}
		setDerivedKeys(data)
		return rot.enter(PhasePropagating, in.Now, rot.Token), true, nil
	case PhasePropagating:
		if !rot.PropagationDue(in.Now, in.Delay) || !in.ClientsMoved {
			return rot, false, nil
		}
		return rot.enter(PhaseRetiring, in.Now, rot.Token), true, nil
	case PhaseRetiring:
		if !in.AllApplied {
			return rot, false, nil
		}
		for _, u := range systemUserNames {
			delete(data, u+previousSuffix)
		}
		done := Rotation{Completed: rot.Token, Finished: in.Now}
		return done, true, nil
	default:
		// An unknown phase (written by hand): start over from a clean state, keeping
		// the current passwords.
		for _, u := range systemUserNames {
			delete(data, u+nextSuffix)
			delete(data, u+previousSuffix)
		}
		setDerivedKeys(data)
		return Rotation{Completed: rot.Completed, Finished: rot.Finished}, true, nil
	}
}

// enter returns the state at the start of phase p.
func (rot Rotation) enter(p Phase, now time.Time, token string) Rotation {
	if rot.Phase == PhaseIdle {
		rot.Started = now
	}
	rot.Phase, rot.Since, rot.Token = p, now, token
	return rot
}

// Describe tells a user where the rotation stands.
func (rot Rotation) Describe(now time.Time, delay time.Duration) string {
	switch rot.Phase {
	case PhaseAdding:
		return "rotating the system users' passwords: adding the new passwords on every member"
	case PhasePropagating:
		left := rot.Since.Add(delay).Sub(now).Round(time.Second)
		if left > 0 {
			return fmt.Sprintf("rotating the system users' passwords: waiting %s for mounted Secrets to follow", left)
		}
		return "rotating the system users' passwords: moving replication and exporters to the new passwords"
	case PhaseRetiring:
		return "rotating the system users' passwords: removing the old passwords from every member"
	}
	return ""
}
