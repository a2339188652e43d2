package publish

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// recorder is a controller whose steps record their names, fail where told and hold
// when told.
type recorder struct {
	calls  []string
	failAt string
	hold   bool
	// waits are the waits each step asks for.
	waits map[string]time.Duration
}

type fakeScope struct{ *Pass }

func (r *recorder) step(s fakeScope, name string) error {
	r.calls = append(r.calls, name)
	s.Requeue(r.waits[name])
	if name == r.failAt {
		return errors.New("it broke")
	}
	return nil
}

func (r *recorder) Read(_ context.Context, p *Pass) (fakeScope, error) {
	s := fakeScope{p}
	return s, r.step(s, PhaseRead)
}
func (r *recorder) Render(_ context.Context, s fakeScope) error  { return r.step(s, PhaseRender) }
func (r *recorder) Publish(_ context.Context, s fakeScope) error { return r.step(s, PhasePublish) }
func (r *recorder) Apply(_ context.Context, s fakeScope) error   { return r.step(s, PhaseApply) }
func (r *recorder) Settle(_ context.Context, s fakeScope) error  { return r.step(s, PhaseSettle) }
func (r *recorder) Report(_ context.Context, s fakeScope) error  { return r.step(s, PhaseReport) }
func (r *recorder) Field(fakeScope) any                          { return nil }
func (r *recorder) Hold(_ context.Context, s fakeScope) bool {
	_ = r.step(s, PhaseHold)
	return r.hold
}

// The phases of a pass after read, by what the cluster and the controller say.
func TestRunSequence(t *testing.T) {
	all := []string{PhaseRender, PhasePublish, PhaseApply, PhaseSettle, PhaseReport}
	for _, tc := range []struct {
		name   string
		paused bool
		hold   bool
		failAt string
		want   []string
		err    string
		held   bool
	}{
		{name: "not paused: no hold, everything runs", want: all},
		{name: "not paused: Hold is not asked even if it would hold", hold: true, want: all},
		{name: "paused, nothing held: publish runs", paused: true,
			want: []string{PhaseRender, PhaseHold, PhasePublish, PhaseApply, PhaseSettle, PhaseReport}},
		{name: "paused and held: no publish, members still applied and reported", paused: true, hold: true, held: true,
			want: []string{PhaseRender, PhaseHold, PhaseApply, PhaseSettle, PhaseReport}},
		{name: "render fails: nothing after it", failAt: PhaseRender, want: []string{PhaseRender}, err: "render: it broke"},
		{name: "publish fails: no apply, no report", failAt: PhasePublish, want: []string{PhaseRender, PhasePublish}, err: "publish: it broke"},
		{name: "apply fails", failAt: PhaseApply, want: []string{PhaseRender, PhasePublish, PhaseApply}, err: "apply: it broke"},
		{name: "report fails", failAt: PhaseReport, want: all, err: "report: it broke"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{failAt: tc.failAt, hold: tc.hold}
			p := &Pass{Paused: tc.paused}
			err := run[fakeScope](context.Background(), r, p, fakeScope{p})
			if !slices.Equal(r.calls, tc.want) {
				t.Errorf("phases %v, want %v", r.calls, tc.want)
			}
			if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
			if p.Held != tc.held {
				t.Errorf("held %v, want %v", p.Held, tc.held)
			}
		})
	}
}

// The shortest positive wait any phase asks for wins; none asked: no wait.
func TestPassRequeue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		waits map[string]time.Duration
		want  time.Duration
	}{
		{"none", nil, 0},
		{"one", map[string]time.Duration{PhaseApply: 5 * time.Second}, 5 * time.Second},
		{"the shortest", map[string]time.Duration{PhaseRender: time.Hour, PhaseApply: 5 * time.Second, PhaseReport: time.Minute}, 5 * time.Second},
		{"zero and negative ask nothing", map[string]time.Duration{PhaseRender: -time.Second, PhaseApply: 0, PhaseReport: time.Minute}, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{waits: tc.waits}
			p := &Pass{}
			if err := run[fakeScope](context.Background(), r, p, fakeScope{p}); err != nil {
				t.Fatal(err)
			}
			if p.after != tc.want {
				t.Errorf("wait %s, want %s", p.after, tc.want)
			}
		})
	}
}

// A NameConflictError keeps its type through the phase's prefix, so the frame reports it.
func TestNameConflictThroughPhase(t *testing.T) {
	r := &conflicting{}
	p := &Pass{}
	err := run[fakeScope](context.Background(), r, p, fakeScope{p})
	var nc *NameConflictError
	if !errors.As(err, &nc) || nc.Name != "vk-acl" || !strings.HasPrefix(err.Error(), "publish: Secret vk-acl exists") {
		t.Fatalf("error %v", err)
	}
}

type conflicting struct{ recorder }

func (c *conflicting) Publish(context.Context, fakeScope) error {
	return &NameConflictError{Name: "vk-acl"}
}
