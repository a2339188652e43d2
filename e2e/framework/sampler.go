package framework

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Sampler runs a check at a fixed interval until Stop, and counts the samples that
// failed: what a user watching the cluster during an operation would have seen.
type Sampler struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
	start  time.Time

	mu       sync.Mutex
	samples  int
	failures int
	first    []string
	last     string
}

// SampleReport is what a Sampler saw.
type SampleReport struct {
	Name              string
	Samples, Failures int
	// FirstFailures are the first few failures, with their time since the start.
	FirstFailures []string
	// LastFailure is the last failure seen ("" when none).
	LastFailure string
	Duration    time.Duration
}

func (r SampleReport) String() string {
	s := fmt.Sprintf("%s: %d samples over %s, %d failed", r.Name, r.Samples, r.Duration.Round(100*time.Millisecond), r.Failures)
	for _, f := range r.FirstFailures {
		s += "\n  " + f
	}
	if r.Failures > len(r.FirstFailures) && r.LastFailure != "" {
		s += "\n  ...\n  " + r.LastFailure
	}
	return s
}

// sampleFailuresKept is how many failures a report lists.
const sampleFailuresKept = 5

// StartSampler calls check every interval (and once at once) until Stop. A check that
// returns an error is a failed sample; each sample gets at most the interval's time,
// at least one second.
func StartSampler(name string, interval time.Duration, check func(ctx context.Context) error) *Sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sampler{name: name, cancel: cancel, done: make(chan struct{}), start: time.Now()}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			cctx, ccancel := context.WithTimeout(ctx, max(interval, time.Second))
			err := check(cctx)
			ccancel()
			if ctx.Err() != nil {
				return // a sample cut by Stop does not count
			}
			s.record(err)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *Sampler) record(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	if err == nil {
		return
	}
	s.failures++
	// One line per failure: joined errors (errors.Join) come one per line.
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	line := fmt.Sprintf("+%s %s", time.Since(s.start).Round(10*time.Millisecond), msg)
	if len(s.first) < sampleFailuresKept {
		s.first = append(s.first, line)
	}
	s.last = line
}

// Stop ends the sampling and returns the report.
func (s *Sampler) Stop() SampleReport {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return SampleReport{Name: s.name, Samples: s.samples, Failures: s.failures,
		FirstFailures: append([]string(nil), s.first...), LastFailure: s.last, Duration: time.Since(s.start)}
}
