package acl

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

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
// The phase, the request being served and timestamps are annotations of the system
// users Secret, so a restarted controller resumes where it stopped.
const (
	annotationRotationPhase     = "valkey.io/rotation-phase"
	annotationRotationToken     = "valkey.io/rotation-token"
	annotationRotationStarted   = "valkey.io/rotation-started"
	annotationRotationSince     = "valkey.io/rotation-phase-since"
	annotationRotationCompleted = "valkey.io/rotation-completed"
	annotationRotationFinished  = "valkey.io/rotation-finished"

	nextSuffix     = ".next"
	previousSuffix = ".previous"
)

// Phase is a step of a rotation.
type Phase string

// Phases of a rotation; PhaseIdle means none runs.
const (
	PhaseIdle        Phase = ""
	PhaseAdding      Phase = "AddingPasswords"
	PhasePropagating Phase = "Propagating"
	PhaseRetiring    Phase = "RetiringPasswords"
)

// Rotation is the rotation state kept on the system users Secret.
type Rotation struct {
	Phase Phase
	// Token is the request being served; Completed the last one finished.
	Token, Completed string
	// Started is when the rotation began, Since when its phase began, Finished when
	// the last one ended.
	Started, Since, Finished time.Time
}

// readRotation reads the rotation state from the Secret's annotations.
func readRotation(s *corev1.Secret) Rotation {
	a := s.Annotations
	return Rotation{
		Phase: Phase(a[annotationRotationPhase]), Token: a[annotationRotationToken],
		Completed: a[annotationRotationCompleted],
		Started:   parseTime(a[annotationRotationStarted]), Since: parseTime(a[annotationRotationSince]),
		Finished: parseTime(a[annotationRotationFinished]),
	}
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// write stores the rotation state in the Secret's annotations.
func (rot Rotation) write(s *corev1.Secret) {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	set := func(k, v string) {
		if v == "" {
			delete(s.Annotations, k)
		} else {
			s.Annotations[k] = v
		}
	}
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	set(annotationRotationPhase, string(rot.Phase))
	set(annotationRotationToken, rot.Token)
	set(annotationRotationCompleted, rot.Completed)
	set(annotationRotationStarted, ts(rot.Started))
	set(annotationRotationSince, ts(rot.Since))
	set(annotationRotationFinished, ts(rot.Finished))
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
