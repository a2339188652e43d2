package framework

import (
	"context"
	"strings"
	"sync"
)

// fakeRunner records commands and answers them from canned replies matched by prefix.
type fakeRunner struct {
	mu      sync.Mutex
	calls   []string
	replies map[string]fakeReply
}

type fakeReply struct {
	out string
	err error
}

func newFakeRunner() *fakeRunner { return &fakeRunner{replies: map[string]fakeReply{}} }

// on makes every command line starting with prefix return out and err.
func (f *fakeRunner) on(prefix, out string, err error) *fakeRunner {
	f.replies[prefix] = fakeReply{out: out, err: err}
	return f
}

// Run implements Runner: the longest matching prefix wins; no match returns "", nil.
func (f *fakeRunner) Run(_ context.Context, c Command) (string, error) {
	line := c.String()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, line)
	best := ""
	for p := range f.replies {
		if strings.HasPrefix(line, p) && len(p) > len(best) {
			best = p
		}
	}
	if best == "" {
		return "", nil
	}
	r := f.replies[best]
	return r.out, r.err
}

func (f *fakeRunner) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func getenvFrom(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}
