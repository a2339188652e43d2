package valkey_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// allocatedBy returns the bytes the process allocated while f ran.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// dialLimited connects as the admin user with a reply budget (the default when 0).
func dialLimited(t *testing.T, s *valkeytest.Server, limit int64) *valkey.Client {
	t.Helper()
	o := s.Options()
	o.MaxReplyBytes = limit
	c, err := valkey.Dial(ctxT(t), o)
	if err != nil {
		t.Fatalf("dial %s: %v", s.Addr(), err)
	}
	t.Cleanup(c.Close)
	return c
}

// patterns returns n key patterns of 100 bytes (few long ones: the server compares each
// new pattern with the user's others).
func patterns(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("~%s%07d", strings.Repeat("p", 92), i)
	}
	return out
}

// A user granted ACL rights makes ACL LIST larger than the client's budget: the read
// fails with ErrReplyTooLarge naming the command and the server, the client allocates
// about the budget, not the reply, and its next command runs on a new connection.
func TestACLListOverTheLimit(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	ctx := ctxT(t)
	admin := s.Dial(t)
	const limit = 256 << 10
	c := dialLimited(t, s, limit)
	connID := func() string {
		t.Helper()
		id, err := c.Do(ctx, "CLIENT", "ID")
		must(t, err)
		return id
	}
	wantTooLarge := func(err error) {
		t.Helper()
		e := valkey.AsReplyTooLarge(err)
		if !errors.Is(err, valkey.ErrReplyTooLarge) || e == nil {
			t.Fatalf("ACL LIST: error %v, want ErrReplyTooLarge", err)
		}
		if e.Command != "ACL LIST" || e.Addr != s.Addr() || e.Limit != limit {
			t.Fatalf("ACL LIST: %+v", e)
		}
	}

	// One user's rules, 330 KB in one line: refused at its length line.
	must(t, admin.ACLSetUser(ctx, "bulky", append([]string{"on", "nopass"}, patterns(3300)...)...))
	before := connID()
	var err error
	n := allocatedBy(func() { _, err = c.ACLList(ctx) })
	t.Logf("a refused ACL LIST of 330 KB in one line: %d bytes allocated", n)
	if n > 1<<20 {
		t.Errorf("reading a 330 KB ACL LIST allocated %d bytes", n)
	}
	wantTooLarge(err)
	if after := connID(); after == before {
		t.Fatalf("the next command ran on connection %s, the one that was refused", after)
	}
	must(t, admin.ACLDelUser(ctx, "bulky"))

	// 60 users of 33 KB each: every line fits, together they do not.
	for i := range 60 {
		must(t, admin.ACLSetUser(ctx, fmt.Sprintf("user%02d", i), append([]string{"on", "nopass"}, patterns(330)...)...))
	}
	n = allocatedBy(func() { _, err = c.ACLList(ctx) })
	t.Logf("a refused ACL LIST of 2 MB in 63 lines: %d bytes allocated", n)
	if n > 1<<20 {
		t.Errorf("reading a 2 MB ACL LIST line by line allocated %d bytes", n)
	}
	wantTooLarge(err)
	must(t, c.Ping(ctx))

	// The measure sees a reply read whole: a client with a larger budget reads it.
	big := dialLimited(t, s, 64<<20)
	var lines []string
	n = allocatedBy(func() { lines, err = big.ACLList(ctx) })
	t.Logf("the same ACL LIST with a 64 MiB budget: %d bytes allocated", n)
	if err != nil || len(lines) < 60 || n < 3<<19 {
		t.Fatalf("with a 64 MiB budget: %d lines, %d bytes allocated, error %v", len(lines), n, err)
	}
}

// KeysInSlots asks for fewer slots, then fewer keys, while the replies do not fit
// together; a single key name over the budget fails.
func TestKeysInSlotsOverTheLimit(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	ctx := ctxT(t)
	admin := s.Dial(t)
	must(t, admin.AddSlotsRange(ctx, []valkey.SlotRange{{Start: 0, End: valkey.SlotCount - 1}}))
	waitFor(t, 10*time.Second, "cluster_state ok", func() (bool, error) {
		ci, err := admin.ClusterInfo(ctx)
		return ci["cluster_state"] == "ok", err
	})
	const limit = 256 << 10
	name := func(tag string, i int) string { return fmt.Sprintf("{%s}%s%04d", tag, strings.Repeat("n", 20<<10), i) }
	set := func(key string) {
		t.Helper()
		_, err := admin.Do(ctx, "SET", key, "v")
		must(t, err)
	}
	// Four slots of 10 keys of 20 KB names: 800 KB together, 200 KB each.
	var slots []int
	for _, tag := range []string{"a", "b", "c", "d"} {
		slots = append(slots, valkey.KeySlot(tag))
		for i := range 10 {
			set(name(tag, i))
		}
	}
	c := dialLimited(t, s, limit)
	got, err := c.KeysInSlots(ctx, slots, 200)
	must(t, err)
	for i, slot := range slots {
		if len(got[slot]) != 10 {
			t.Errorf("slot %d: %d keys, want 10", slot, len(got[slot]))
		}
		if len(got[slot]) > 0 && !strings.HasPrefix(got[slot][0], "{"+[]string{"a", "b", "c", "d"}[i]+"}") {
			t.Errorf("slot %d: key %.10s...", slot, got[slot][0])
		}
	}

	// One slot of 20 such keys: fewer keys at a time.
	for i := range 20 {
		set(name("e", i))
	}
	got, err = c.KeysInSlots(ctx, []int{valkey.KeySlot("e")}, 200)
	must(t, err)
	if n := len(got[valkey.KeySlot("e")]); n == 0 || n >= 20 {
		t.Errorf("slot of 20 keys of 20 KB: %d keys in one go, want some and fewer than 20", n)
	}

	// One key name over the budget.
	set("{f}" + strings.Repeat("n", limit))
	_, err = c.KeysInSlots(ctx, []int{valkey.KeySlot("f")}, 200)
	if e := valkey.AsReplyTooLarge(err); e == nil || e.Command != "CLUSTER GETKEYSINSLOT" {
		t.Fatalf("a key name of 256 KiB: error %v, want ErrReplyTooLarge of CLUSTER GETKEYSINSLOT", err)
	}
	ctx2, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	must(t, c.Ping(ctx2))
}
