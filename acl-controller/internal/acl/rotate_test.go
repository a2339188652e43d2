package acl

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func systemData(op, repl, exp string) map[string][]byte {
	d := map[string][]byte{v1alpha1.UserOperator: []byte(op), v1alpha1.UserReplication: []byte(repl), v1alpha1.UserExporter: []byte(exp),
		v1alpha1.UserLifecycle: []byte("lc0")}
	setDerivedKeys(d)
	return d
}

// counter generates predictable passwords.
func counter() func() (string, error) {
	n := 0
	return func() (string, error) { n++; return fmt.Sprintf("new%d", n), nil }
}

func TestRotationStateMachine(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	delay := 2 * time.Minute
	gen := counter()
	data := systemData("op0", "repl0", "exp0")
	rot := Rotation{Completed: "t0"}

	type step struct {
		name string
		in   RotationInput
		// want
		phase   Phase
		changed bool
		check   func(t *testing.T, d map[string][]byte, r Rotation)
	}
	steps := []step{
		{name: "no request", in: RotationInput{Requested: "", Now: t0}, phase: PhaseIdle},
		{name: "request already served", in: RotationInput{Requested: "t0", Now: t0}, phase: PhaseIdle},
		{name: "new request adds next passwords", in: RotationInput{Requested: "t1", Now: t0}, phase: PhaseAdding, changed: true,
			check: func(t *testing.T, d map[string][]byte, r Rotation) {
				if string(d["_operator.next"]) != "new1" || string(d["_replication.next"]) != "new2" || string(d["_exporter.next"]) != "new3" {
					t.Fatalf("next passwords: %q %q %q", d["_operator.next"], d["_replication.next"], d["_exporter.next"])
				}
				if string(d[v1alpha1.UserOperator]) != "op0" || string(d[v1alpha1.PrimaryAuthKey]) != "primaryauth repl0\n" {
					t.Fatal("current passwords changed while adding")
				}
				if r.Token != "t1" || !r.Started.Equal(t0) {
					t.Fatalf("state %+v", r)
				}
				pw := acceptedPasswords(d, PhaseAdding)
				if len(pw[v1alpha1.UserOperator]) != 2 {
					t.Fatalf("adding accepts %v", pw)
				}
			}},
		{name: "adding waits for every member", in: RotationInput{Requested: "t1", Now: t0.Add(time.Second)}, phase: PhaseAdding},
		{name: "all applied: switch to new passwords", in: RotationInput{Requested: "t1", AllApplied: true, Now: t0.Add(10 * time.Second)}, phase: PhasePropagating, changed: true,
			check: func(t *testing.T, d map[string][]byte, r Rotation) {
				if string(d[v1alpha1.UserOperator]) != "new1" || string(d["_operator.previous"]) != "op0" || d["_operator.next"] != nil {
					t.Fatalf("after switch: %q prev %q next %q", d[v1alpha1.UserOperator], d["_operator.previous"], d["_operator.next"])
				}
				if string(d[v1alpha1.PrimaryAuthKey]) != "primaryauth new2\n" {
					t.Fatalf("primaryauth.conf %q", d[v1alpha1.PrimaryAuthKey])
				}
				if !r.Since.Equal(t0.Add(10 * time.Second)) {
					t.Fatalf("since %v", r.Since)
				}
				// Adding and Propagating accept the same passwords: the same aclfile.
				if fmt.Sprint(acceptedPasswords(d, PhasePropagating)) != fmt.Sprint(systemPasswords{
					v1alpha1.UserOperator: {"new1", "op0"}, v1alpha1.UserReplication: {"new2", "repl0"}, v1alpha1.UserExporter: {"exp0", "new3"},
					v1alpha1.UserLifecycle: {"lc0", "new4"}, v1alpha1.UserBackup: {"new5"}, v1alpha1.UserRestore: {"new6"}}) {
					t.Fatalf("propagating accepts %v", acceptedPasswords(d, PhasePropagating))
				}
			}},
		{name: "propagation delay not over", in: RotationInput{AllApplied: true, ClientsMoved: true, Now: t0.Add(10*time.Second + delay - time.Second), Delay: delay}, phase: PhasePropagating},
		{name: "delay over but a member did not take the primary auth", in: RotationInput{AllApplied: true, Now: t0.Add(10*time.Second + delay), Delay: delay}, phase: PhasePropagating},
		{name: "clients moved: retire", in: RotationInput{AllApplied: true, ClientsMoved: true, Now: t0.Add(10*time.Second + delay), Delay: delay}, phase: PhaseRetiring, changed: true,
			check: func(t *testing.T, d map[string][]byte, r Rotation) {
				if pw := acceptedPasswords(d, PhaseRetiring); len(pw[v1alpha1.UserOperator]) != 1 || pw[v1alpha1.UserOperator][0] != "new1" {
					t.Fatalf("retiring accepts %v", pw)
				}
				if d["_operator.previous"] == nil {
					t.Fatal("previous password deleted before the members dropped it")
				}
			}},
		{name: "retiring waits for every member", in: RotationInput{Now: t0.Add(3 * time.Minute)}, phase: PhaseRetiring},
		{name: "done", in: RotationInput{AllApplied: true, Now: t0.Add(4 * time.Minute)}, phase: PhaseIdle, changed: true,
			check: func(t *testing.T, d map[string][]byte, r Rotation) {
				if d["_operator.previous"] != nil || r.Completed != "t1" || r.Token != "" || !r.Finished.Equal(t0.Add(4*time.Minute)) {
					t.Fatalf("after completion: %+v, previous %q", r, d["_operator.previous"])
				}
				if len(d) != len(systemUserNames)+2 {
					t.Fatalf("keys left: %d", len(d))
				}
			}},
		{name: "the same request again does nothing", in: RotationInput{Requested: "t1", AllApplied: true, Now: t0.Add(5 * time.Minute)}, phase: PhaseIdle},
	}
	for _, s := range steps {
		next, changed, err := Step(rot, data, s.in, gen)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if next.Phase != s.phase || changed != s.changed {
			t.Fatalf("%s: phase %q changed %v, want %q %v", s.name, next.Phase, changed, s.phase, s.changed)
		}
		if s.check != nil {
			s.check(t, data, next)
		}
		rot = next
	}
}

// TestRotationStateInStatus: the state goes to status.acl.rotation and is read back
// from it, a restarted controller resuming where it stopped; a cluster that never asked
// for a rotation has none.
func TestRotationStateInStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, rot := range []Rotation{
		{Phase: PhasePropagating, Token: "t9", Completed: "t8", Started: now.Add(-time.Minute), Since: now},
		{Completed: "t9", Finished: now},
	} {
		st := rot.status()
		vc := &v1alpha1.ValkeyCluster{Status: v1alpha1.ValkeyClusterStatus{ACL: &v1alpha1.ACLStatus{Rotation: st}}}
		if got := rotationOf(vc, &corev1.Secret{}); got != rot {
			t.Errorf("read back %+v, want %+v", got, rot)
		}
	}
	if st := (Rotation{Completed: "t9", Finished: now}).status(); st.Phase != v1alpha1.RotationIdle || st.CompletedRequest != "t9" {
		t.Errorf("idle state: %+v", st)
	}
	if st := (Rotation{}).status(); st != nil {
		t.Errorf("no rotation ever: %+v", st)
	}
}

// TestRotationReadFromLegacyAnnotations: a cluster upgraded from a version that kept the
// state in annotations of the system users Secret goes on from there, until its status
// holds a rotation.
func TestRotationReadFromLegacyAnnotations(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		"valkey.io/rotation-phase": "Propagating", "valkey.io/rotation-token": "t9", "valkey.io/rotation-completed": "t8",
		"valkey.io/rotation-started": "2026-01-01T11:59:00Z", "valkey.io/rotation-phase-since": "2026-01-01T12:00:00Z", "other": "kept",
	}}}
	want := Rotation{Phase: PhasePropagating, Token: "t9", Completed: "t8",
		Started: time.Date(2026, 1, 1, 11, 59, 0, 0, time.UTC), Since: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	vc := &v1alpha1.ValkeyCluster{}
	if got := rotationOf(vc, s); got != want || !hasLegacyAnnotations(s) {
		t.Fatalf("legacy state %+v, want %+v", got, want)
	}
	vc.Status.ACL = &v1alpha1.ACLStatus{Rotation: &v1alpha1.PasswordRotationStatus{Phase: v1alpha1.RotationIdle, CompletedRequest: "t9"}}
	if got := rotationOf(vc, s); got != (Rotation{Completed: "t9"}) {
		t.Fatalf("the status does not win over the annotations: %+v", got)
	}
	if hasLegacyAnnotations(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"other": "kept"}}}) {
		t.Error("another annotation read as a legacy one")
	}
}

// TestSettle: a step writes the Secret's keys, then the status; when the status write
// failed, the keys are one step ahead and win. Otherwise the state stands.
func TestSettle(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	before := now.Add(-time.Minute)
	plain := systemData("op", "repl", "exp")
	withNext := systemData("op", "repl", "exp")
	withNext["_operator.next"] = []byte("n")
	withPrev := systemData("n", "repl", "exp")
	withPrev["_operator.previous"] = []byte("op")
	cases := []struct {
		name  string
		rot   Rotation
		data  map[string][]byte
		token string
		want  Rotation
	}{
		{name: "idle, nothing asked", rot: Rotation{Completed: "t1"}, data: plain, token: "t1", want: Rotation{Completed: "t1"}},
		{name: "idle with next keys: Adding started", rot: Rotation{Completed: "t1"}, data: withNext, token: "t2",
			want: Rotation{Phase: PhaseAdding, Token: "t2", Completed: "t1", Started: now, Since: now}},
		{name: "adding with previous keys: Propagating started", rot: Rotation{Phase: PhaseAdding, Token: "t2", Started: before, Since: before}, data: withPrev, token: "t2",
			want: Rotation{Phase: PhasePropagating, Token: "t2", Started: before, Since: now}},
		{name: "idle with previous keys: two steps ahead", rot: Rotation{Completed: "t1"}, data: withPrev, token: "t2",
			want: Rotation{Phase: PhasePropagating, Token: "t2", Completed: "t1", Started: now, Since: now}},
		{name: "retiring without previous keys: completed", rot: Rotation{Phase: PhaseRetiring, Token: "t2", Started: before, Since: before}, data: plain, token: "t2",
			want: Rotation{Completed: "t2", Finished: now}},
		{name: "adding without any key of the rotation: starts over", rot: Rotation{Phase: PhaseAdding, Token: "t2", Completed: "t1"}, data: plain, token: "t2",
			want: Rotation{Completed: "t1"}},
		{name: "in step: adding", rot: Rotation{Phase: PhaseAdding, Token: "t2", Since: before}, data: withNext, token: "t2",
			want: Rotation{Phase: PhaseAdding, Token: "t2", Since: before}},
		{name: "in step: retiring", rot: Rotation{Phase: PhaseRetiring, Token: "t2", Since: before}, data: withPrev, token: "t2",
			want: Rotation{Phase: PhaseRetiring, Token: "t2", Since: before}},
	}
	for _, c := range cases {
		if got := settle(c.rot, c.data, c.token, now); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestUnknownPhaseResets(t *testing.T) {
	data := systemData("op", "repl", "exp")
	data["_operator.next"] = []byte("x")
	next, changed, err := Step(Rotation{Phase: "Bogus", Completed: "c"}, data, RotationInput{}, counter())
	if err != nil || !changed || next.Phase != PhaseIdle || next.Completed != "c" || data["_operator.next"] != nil {
		t.Fatalf("got %+v %v %v %v", next, changed, err, data)
	}
}

func TestOperatorPasswordsOrder(t *testing.T) {
	d := systemData("cur", "r", "e")
	d["_operator.previous"] = []byte("prev")
	if got := fmt.Sprint(operatorPasswords(d)); got != "[cur prev]" {
		t.Fatalf("got %s", got)
	}
}
