// Package checker is the write-checker of the e2e suites and benchmarks: it writes
// sequenced keys into a Valkey cluster from one writer per shard while the operator rolls,
// scales or heals it, then reads every acknowledged key back. It reports acknowledged
// writes lost (the number a planned operation must keep at zero) and, per writer, the
// longest time without a successful write (what a client sees of a failover).
package checker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/valkey-operator/valkey-operator/valkey"
)

// Options configure a Checker.
type Options struct {
	// Addrs are seed addresses of the cluster ("ip:6379").
	Addrs []string
	// Username and Password authenticate (a user allowed SET, GET, MGET and CLUSTER SHARDS).
	Username, Password string
	// TLS, when set, is used for every connection.
	TLS *tls.Config
	// Interval between two writes of one writer (default 5 ms).
	Interval time.Duration
	// Prefix of the keys (default "chk").
	Prefix string
	// Timeout of each write (default 2 s).
	Timeout time.Duration
	// RecordGapsOver, when set, makes the report list every gap of a writer at least
	// this long, with when it started (to match gaps with injected faults).
	RecordGapsOver time.Duration
	// Allow, when set, is asked before every connection the client opens (the seeds,
	// and every member the slot map or a MOVED or ASK names): an address it refuses is
	// not dialled, and the report lists it (Refused).
	Allow func(addr string) error
	// Netns, when set, names the network namespace (under /run/netns) every connection
	// is opened in: the client then reaches only what that namespace routes to.
	Netns string
}

// Report is what a run observed.
type Report struct {
	// Writes attempted, and Acked (answered OK).
	Writes, Acked int
	// Errors are the writes that failed; a failed write is not expected to survive.
	Errors int
	// Lost counts acknowledged writes that cannot be read back.
	Lost int
	// LostKeys lists up to ten of them.
	LostKeys []string
	// LongestGap maps each writer (its hash tag and the slot it writes) to the longest
	// time between two successful writes.
	LongestGap map[string]time.Duration
	// LostWrites are all the lost writes, with when each was acknowledged.
	LostWrites []LostWrite
	// Gaps are the gaps of at least Options.RecordGapsOver, by writer then time.
	Gaps []Gap
	// Refused are the addresses Options.Allow refused, each with why, once.
	Refused []string
}

// LostWrite is one acknowledged write that could not be read back.
type LostWrite struct {
	Key  string
	Slot int
	// AckedAt is when the server acknowledged it.
	AckedAt time.Time
}

// Gap is a time without a successful write of one writer.
type Gap struct {
	Slot int
	// Start is the last successful write before the gap.
	Start  time.Time
	Length time.Duration
}

// MaxGap is the longest gap of any writer.
func (r Report) MaxGap() time.Duration {
	var m time.Duration
	for _, g := range r.LongestGap {
		m = max(m, g)
	}
	return m
}

// String prints the report on one line per writer.
func (r Report) String() string {
	s := fmt.Sprintf("writes %d, acknowledged %d, failed %d, acknowledged but lost %d", r.Writes, r.Acked, r.Errors, r.Lost)
	names := make([]string, 0, len(r.LongestGap))
	for n := range r.LongestGap {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s += fmt.Sprintf("\n  writer %s: longest gap %s", n, r.LongestGap[n].Round(time.Millisecond))
	}
	return s
}

// Checker writes until Stop.
type Checker struct {
	o       Options
	client  rueidis.Client
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	writers []*writer
	gate    *dialGate
	// startWait and startErr: how long Start retried its first command, and why.
	startWait time.Duration
	startErr  error
}

type writer struct {
	tag    string
	slot   int
	mu     sync.Mutex
	acked  []int64
	ackAt  []time.Time
	gaps   []Gap
	writes int
	errs   int
	last   time.Time
	gap    time.Duration
}

// Start connects and starts one writer per shard the cluster has now.
func Start(ctx context.Context, o Options) (*Checker, error) {
	if o.Interval == 0 {
		o.Interval = 5 * time.Millisecond
	}
	if o.Prefix == "" {
		o.Prefix = "chk"
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second
	}
	gate := &dialGate{allow: o.Allow, netns: o.Netns}
	opt := rueidis.ClientOption{
		InitAddress: o.Addrs, Username: o.Username, Password: o.Password, TLSConfig: o.TLS,
		DisableCache: true, ConnWriteTimeout: o.Timeout, Dialer: dialer(),
		ShuffleInit: true,
	}
	if o.Allow != nil || o.Netns != "" {
		opt.DialCtxFn = gate.dial
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("connect the write-checker: %w", err)
	}
	began := time.Now()
	var firstErr error
	slots, err := shardSlotsRetrying(ctx, c, &firstErr)
	if err != nil {
		c.Close()
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	ch := &Checker{o: o, client: c, cancel: cancel, gate: gate}
	if firstErr != nil {
		ch.startWait, ch.startErr = time.Since(began), firstErr
	}
	for i, slot := range slots {
		w := &writer{tag: tagFor(slot, i), slot: slot}
		ch.writers = append(ch.writers, w)
		ch.wg.Add(1)
		go func() {
			defer ch.wg.Done()
			ch.run(wctx, w)
		}()
	}
	return ch, nil
}

// StartWait says how long Start retried its first command, and the error that made it
// retry (0 and nil when the first try answered).
func (ch *Checker) StartWait() (time.Duration, error) { return ch.startWait, ch.startErr }

// startRetry bounds how long Start retries a network error of its first command. Seen
// on the local Kubernetes once in a CI run: a member's pod started 6 s before, its first
// connection from the host got no answer within the 5 s dial timeout, right after the
// cluster turned Ready. The retry is reported (StartWait), not hidden.
const startRetry = 20 * time.Second

// shardSlotsRetrying is shardSlots, retried on network errors for up to startRetry; the
// first error it retried is left in *first.
func shardSlotsRetrying(ctx context.Context, c rueidis.Client, first *error) ([]int, error) {
	deadline := time.Now().Add(startRetry)
	for {
		slots, err := shardSlots(ctx, c)
		var ne net.Error
		if err == nil || !errors.As(err, &ne) || time.Now().After(deadline) {
			return slots, err
		}
		if *first == nil {
			*first = err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// shardSlots returns the first slot of each shard's first range.
func shardSlots(ctx context.Context, c rueidis.Client) ([]int, error) {
	v, err := c.Do(ctx, c.B().Arbitrary("CLUSTER", "SHARDS").Build()).ToAny()
	if err != nil {
		return nil, fmt.Errorf("cluster shards: %w", err)
	}
	shards, err := valkey.ParseClusterShards(v)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, s := range shards {
		if len(s.Slots) > 0 {
			out = append(out, s.Slots[0].Start)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the cluster serves no slots")
	}
	sort.Ints(out)
	return out, nil
}

// tagFor finds a hash tag whose keys hash to slot.
func tagFor(slot, seed int) string {
	for i := seed * 100000; ; i++ {
		tag := "w" + strconv.Itoa(i)
		if valkey.KeySlot("{"+tag+"}") == slot {
			return tag
		}
	}
}

func (c *Checker) key(w *writer, seq int64) string {
	return fmt.Sprintf("%s:{%s}:%d", c.o.Prefix, w.tag, seq)
}

func (c *Checker) run(ctx context.Context, w *writer) {
	w.last = time.Now()
	tick := time.NewTicker(c.o.Interval)
	defer tick.Stop()
	for seq := int64(1); ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		wctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
		err := c.client.Do(wctx, c.client.B().Set().Key(c.key(w, seq)).Value(strconv.FormatInt(seq, 10)).Build()).Error()
		cancel()
		now := time.Now()
		w.mu.Lock()
		w.writes++
		if err != nil {
			if ctx.Err() == nil {
				w.errs++
			}
		} else {
			w.acked = append(w.acked, seq)
			w.ackAt = append(w.ackAt, now)
			gap := now.Sub(w.last)
			if c.o.RecordGapsOver > 0 && gap >= c.o.RecordGapsOver {
				w.gaps = append(w.gaps, Gap{Slot: w.slot, Start: w.last, Length: gap})
			}
			w.gap = max(w.gap, gap)
			w.last = now
		}
		w.mu.Unlock()
	}
}

// Stop stops the writers and reads every acknowledged key back.
func (c *Checker) Stop(ctx context.Context) (Report, error) {
	c.cancel()
	c.wg.Wait()
	defer c.client.Close()
	r := Report{LongestGap: map[string]time.Duration{}}
	for _, w := range c.writers {
		r.Writes += w.writes
		r.Errors += w.errs
		r.Acked += len(w.acked)
		r.LongestGap[fmt.Sprintf("%s (slot %d)", w.tag, w.slot)] = w.gap
		r.Gaps = append(r.Gaps, w.gaps...)
		lost, err := c.verify(ctx, w)
		if err != nil {
			return r, err
		}
		r.Lost += len(lost)
		for _, i := range lost {
			key := c.key(w, w.acked[i])
			if len(r.LostKeys) < 10 {
				r.LostKeys = append(r.LostKeys, key)
			}
			r.LostWrites = append(r.LostWrites, LostWrite{Key: key, Slot: w.slot, AckedAt: w.ackAt[i]})
		}
	}
	r.Refused = c.gate.list()
	return r, nil
}

// verify reads a writer's acknowledged keys in batches (one slot, so MGET is allowed)
// and returns the indexes in w.acked of those it cannot read back.
func (c *Checker) verify(ctx context.Context, w *writer) ([]int, error) {
	var lost []int
	for i := 0; i < len(w.acked); i += 500 {
		batch := w.acked[i:min(i+500, len(w.acked))]
		keys := make([]string, len(batch))
		for j, seq := range batch {
			keys[j] = c.key(w, seq)
		}
		var vals []rueidis.RedisMessage
		err := retry(ctx, func(ctx context.Context) error {
			var err error
			vals, err = c.client.Do(ctx, c.client.B().Mget().Key(keys...).Build()).ToArray()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("read back %d keys of writer %s: %w", len(keys), w.tag, err)
		}
		for j, v := range vals {
			s, err := v.ToString()
			if err != nil || s != strconv.FormatInt(batch[j], 10) {
				lost = append(lost, i+j)
			}
		}
	}
	return lost, nil
}

// retry runs f until it succeeds or 30 s pass: the read-back may start while the cluster
// still settles after the operation under test.
func retry(ctx context.Context, f func(context.Context) error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(cctx)
		cancel()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// GapOf is the longest gap of the writer of slot (0 when no writer writes it).
func (r Report) GapOf(slot int) time.Duration {
	suffix := fmt.Sprintf("(slot %d)", slot)
	for name, g := range r.LongestGap {
		if strings.HasSuffix(name, suffix) {
			return g
		}
	}
	return 0
}
