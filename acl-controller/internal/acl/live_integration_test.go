package acl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

// These tests run real valkey-server processes (valkey/valkeytest) with aclfiles
// rendered by this package.

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testPasswords are the system users' passwords of the tests.
var testPasswords = systemPasswords{
	v1alpha1.UserOperator:    {"operator-password-0123456789"},
	v1alpha1.UserReplication: {"replication-password-0123456789"},
	v1alpha1.UserExporter:    {"exporter-password-0123456789"},
}

// adminLine keeps valkeytest's admin user in a loaded file, so the test can look.
func adminLine(s *valkeytest.Server) string {
	return "user " + valkeytest.AdminUser + " on #" + valkey.ACLPasswordHash(s.AdminPassword) + " ~* &* +@all\n"
}

// loadFile writes f (and the test's admin user) as the server's aclfile and loads it
// with ACL LOAD, which parses the file as a starting server does.
func loadFile(t *testing.T, s *valkeytest.Server, f File) {
	t.Helper()
	must(t, os.WriteFile(s.ACLFile, []byte(f.Content()+adminLine(s)), 0o600))
	must(t, s.Dial(t).ACLLoad(ctxT(t)))
}

// serveAllSlots gives the single server every slot and waits until it serves them.
func serveAllSlots(t *testing.T, s *valkeytest.Server) {
	t.Helper()
	admin := s.Dial(t)
	must(t, admin.AddSlotsRange(ctxT(t), []valkey.SlotRange{{Start: 0, End: 16383}}))
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if info, err := admin.ClusterInfo(ctxT(t)); err == nil && info["cluster_state"] == "ok" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the cluster state did not become ok")
}

// dialAs logs in as user; the client is closed with the test.
func dialAs(t *testing.T, s *valkeytest.Server, user, password string) (*valkey.Client, error) {
	t.Helper()
	c, err := valkey.Dial(ctxT(t), valkey.Options{Addr: s.Addr(), Username: user, Password: password, DialTimeout: time.Second})
	if err == nil {
		t.Cleanup(c.Close)
	}
	return c, err
}

func operatorClient(t *testing.T, s *valkeytest.Server) *valkey.Client {
	t.Helper()
	c, err := dialAs(t, s, v1alpha1.UserOperator, testPasswords[v1alpha1.UserOperator][0])
	must(t, err)
	return c
}

// do runs a command and returns its error's text ("" on success).
func do(t *testing.T, c *valkey.Client, args ...string) string {
	t.Helper()
	if _, err := c.DoValue(ctxT(t), args...); err != nil {
		return err.Error()
	}
	return ""
}

func wantNoPerm(t *testing.T, who string, c *valkey.Client, args ...string) {
	t.Helper()
	if msg := do(t, c, args...); !strings.Contains(msg, "NOPERM") {
		t.Errorf("%s: %v: got %q, want NOPERM", who, args, msg)
	}
}

func wantAllowed(t *testing.T, who string, c *valkey.Client, args ...string) {
	t.Helper()
	if msg := do(t, c, args...); msg != "" {
		t.Errorf("%s: %v: %s", who, args, msg)
	}
}

func seedFile(alicePW string) File {
	users := seedUsers()
	return NewFile(SystemUsers(testPasswords, valkey.Version{}), []User{
		RenderSpecUser(users[0], []string{alicePW}), RenderSpecUser(users[1], nil),
	})
}

func TestSeedExampleOnServer(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	const alicePW = "alice-password-42"
	loadFile(t, s, seedFile(alicePW))
	serveAllSlots(t, s)

	if _, err := dialAs(t, s, "alice", "wrong"); err == nil {
		t.Fatal("alice logged in with a wrong password")
	}
	alice, err := dialAs(t, s, "alice", alicePW)
	must(t, err)
	// Keys: app:* read/write, shared:* read only, nothing else. All keys of one slot
	// ({t}) so the single-node cluster serves them.
	for _, k := range []string{"app:{t}1", "app:{t}2"} {
		wantAllowed(t, "alice", alice, "SET", k, "v")
		wantAllowed(t, "alice", alice, "GET", k)
	}
	admin := s.Dial(t)
	if _, err := admin.Do(ctxT(t), "SET", "shared:{t}", "x"); err != nil {
		t.Fatal(err)
	}
	wantAllowed(t, "alice", alice, "GET", "shared:{t}")
	wantNoPerm(t, "alice", alice, "SET", "shared:{t}", "y")
	wantNoPerm(t, "alice", alice, "GET", "other:{t}")
	// Commands: @admin and @dangerous are denied.
	wantNoPerm(t, "alice", alice, "FLUSHALL")
	wantNoPerm(t, "alice", alice, "CONFIG", "GET", "maxmemory")
	wantNoPerm(t, "alice", alice, "KEYS", "*")
	// Channels: the patterns come with the pub/sub commands, and the patterns limit her.
	if _, err := valkeytest.RawReply(s.Addr(), "alice", alicePW, 2, "SUBSCRIBE", "notifications:orders"); err != nil {
		t.Errorf("alice SUBSCRIBE notifications:orders: %v", err)
	}
	if _, err := valkeytest.RawReply(s.Addr(), "alice", alicePW, 2, "SUBSCRIBE", "private"); err == nil || !strings.Contains(err.Error(), "channel") {
		t.Errorf("alice SUBSCRIBE private: %v, want NOPERM for the channel", err)
	}
	wantAllowed(t, "alice", alice, "PUBLISH", "notifications:x", "hi")
	wantNoPerm(t, "alice", alice, "PUBLISH", "private", "hi")
	loadFile(t, s, seedFile(alicePW))

	// bob: everything, any password.
	bob, err := dialAs(t, s, "bob", "anything-at-all")
	must(t, err)
	wantAllowed(t, "bob", bob, "SET", "private:{t}", "1")
	wantAllowed(t, "bob", bob, "CONFIG", "GET", "maxmemory")
	wantAllowed(t, "bob", bob, "FLUSHALL")
	if _, err := valkeytest.RawReply(s.Addr(), "bob", "x", 2, "SUBSCRIBE", "private"); err != nil {
		t.Errorf("bob SUBSCRIBE private: %v", err)
	}
	// default is off.
	if _, err := valkeytest.RawReply(s.Addr(), "default", "", 2, "PING"); err == nil {
		t.Error("the default user can log in")
	}
}

// applyTo applies f to the server through a Reconciler, as _operator.
func applyTo(t *testing.T, r *Reconciler, s *valkeytest.Server, f File, removed ...string) MemberResult {
	t.Helper()
	vn := &v1alpha1.ValkeyNode{}
	vn.Name = "member"
	vn.Status.PodIP = "127.0.0.1"
	r.Addr = func(*v1alpha1.ValkeyNode) string { return s.Addr() }
	cred := valkeyconn.Credentials{Username: v1alpha1.UserOperator}.WithPassword(testPasswords[v1alpha1.UserOperator][0])
	conns := r.reach(ctxT(t), []v1alpha1.ValkeyNode{*vn}, []valkeyconn.Credentials{cred})
	return r.applyMember(ctxT(t), conns[0], f, removed)
}

func newTestReconciler(t *testing.T) *Reconciler {
	r := &Reconciler{Pool: &valkeyconn.Pool{}}
	t.Cleanup(r.Pool.Close)
	return r
}

func TestPasswordsLive(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	r := newTestReconciler(t)
	sys := SystemUsers(testPasswords, valkey.Version{})
	loadFile(t, s, NewFile(sys, nil))
	spec := v1alpha1.UserSpec{Name: "carol", PasswordSecret: &v1alpha1.PasswordSecretRef{Name: "s", Keys: []string{"old", "new"}},
		Commands: &v1alpha1.CommandsSpec{Allow: []string{"ping"}}}

	f1 := NewFile(sys, []User{RenderSpecUser(spec, []string{"carol-old-pw", "carol-new-pw"})})
	if res := applyTo(t, r, s, f1); !res.Applied {
		t.Fatalf("apply: %s", res.Message)
	}
	for _, pw := range []string{"carol-old-pw", "carol-new-pw"} {
		if _, err := dialAs(t, s, "carol", pw); err != nil {
			t.Errorf("carol with %s: %v", pw, err)
		}
	}
	// Remove the first key: its password is refused at once, the other still works,
	// and an open session of carol stays open.
	session, err := dialAs(t, s, "carol", "carol-old-pw")
	must(t, err)
	spec.PasswordSecret.Keys = []string{"new"}
	f2 := NewFile(sys, []User{RenderSpecUser(spec, []string{"carol-new-pw"})})
	if res := applyTo(t, r, s, f2); !res.Applied {
		t.Fatalf("apply: %s", res.Message)
	}
	if _, err := dialAs(t, s, "carol", "carol-old-pw"); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("removed password still accepted: %v", err)
	}
	if _, err := dialAs(t, s, "carol", "carol-new-pw"); err != nil {
		t.Errorf("remaining password refused: %v", err)
	}
	must(t, session.Ping(ctxT(t)))
	// The marker says which revision runs, and only the current marker is left.
	users, err := s.Dial(t).ACLUsers(ctxT(t))
	must(t, err)
	var markers []string
	for _, u := range users {
		if IsMarker(u) {
			markers = append(markers, u)
		}
	}
	if len(markers) != 1 || markers[0] != MarkerName(f2.Revision) {
		t.Fatalf("markers %v, want only %s", markers, MarkerName(f2.Revision))
	}
	// A second pass finds the marker and sends nothing.
	if res := applyTo(t, r, s, f2); !res.Applied || !strings.Contains(res.Message, "is live") {
		t.Fatalf("steady state: %+v", res)
	}
}

func TestAddAndDeleteUserLive(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	r := newTestReconciler(t)
	sys := SystemUsers(testPasswords, valkey.Version{})
	loadFile(t, s, NewFile(sys, nil))
	admin := s.Dial(t)
	must(t, admin.ACLSetUser(ctxT(t), "manual", "on", "nopass", "+ping"))

	dave := User{Name: "dave", Rules: []string{"on", "nopass", "+ping"}}
	f1 := NewFile(sys, []User{dave})
	if res := applyTo(t, r, s, f1); !res.Applied {
		t.Fatalf("add: %s", res.Message)
	}
	if _, err := dialAs(t, s, "dave", "x"); err != nil {
		t.Fatalf("dave after add: %v", err)
	}
	f2 := NewFile(sys, nil)
	if res := applyTo(t, r, s, f2, "dave"); !res.Applied {
		t.Fatalf("delete: %s", res.Message)
	}
	if _, err := admin.ACLGetUser(ctxT(t), "dave"); !errors.Is(err, valkey.ErrNoSuchUser) {
		t.Fatalf("dave after delete: %v", err)
	}
	if _, err := admin.ACLGetUser(ctxT(t), "manual"); err != nil {
		t.Fatalf("a user the file never defined was touched: %v", err)
	}
}

// TestApplyIsAllOrNothing: a revision with a user the server refuses changes nothing on
// the member, and a reader never sees a member between two revisions.
func TestApplyIsAllOrNothing(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	r := newTestReconciler(t)
	sys := SystemUsers(testPasswords, valkey.Version{})
	good := NewFile(sys, []User{{Name: "a", Rules: []string{"on", "nopass", "+get"}}})
	loadFile(t, s, good)
	admin := s.Dial(t)
	before, err := admin.ACLList(ctxT(t))
	must(t, err)

	bad := NewFile(sys, []User{{Name: "a", Rules: []string{"on", "nopass", "+set"}}, {Name: "b", Rules: []string{"on", "+bogus"}}})
	res := applyTo(t, r, s, bad)
	if res.Applied || res.Refused["b"] == "" || res.Refused["a"] != "" {
		t.Fatalf("a refused user was applied: %+v", res)
	}
	after, err := admin.ACLList(ctxT(t))
	must(t, err)
	if strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Fatalf("the member changed:\nbefore %v\nafter  %v", before, after)
	}

	// Isolation: flip 40 users between two rule sets while a reader lists them.
	set := func(cmd string) File {
		var us []User
		for i := range 40 {
			us = append(us, User{Name: fmt.Sprintf("u%02d", i), Rules: []string{"on", "nopass", "+" + cmd}})
		}
		return NewFile(sys, us)
	}
	files := []File{set("get"), set("set")}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var mixed atomic.Int32
	wg.Add(1)
	go func() {
		defer wg.Done()
		reader, err := valkey.Dial(context.Background(), s.Options())
		if err != nil {
			return
		}
		defer reader.Close()
		for !stop.Load() {
			lines, err := reader.ACLList(context.Background())
			if err != nil {
				continue
			}
			gets, sets := 0, 0
			for _, l := range lines {
				if strings.HasPrefix(l, "user u") {
					if strings.HasSuffix(l, "+get") {
						gets++
					} else {
						sets++
					}
				}
			}
			if gets > 0 && sets > 0 {
				mixed.Add(1)
			}
		}
	}()
	for i := range 20 {
		if res := applyTo(t, r, s, files[i%2]); !res.Applied {
			t.Errorf("apply %d: %s", i, res.Message)
		}
	}
	stop.Store(true)
	wg.Wait()
	if mixed.Load() > 0 {
		t.Fatalf("a reader saw %d half-applied states", mixed.Load())
	}
}

func TestCheckLiveAgreesWithLocal(t *testing.T) {
	s := valkeytest.Start(t, 1, valkeytest.Options{})[0]
	loadFile(t, s, NewFile(SystemUsers(testPasswords, valkey.Version{}), nil))
	c := operatorClient(t, s)
	for _, tc := range ruleCases {
		u := User{Name: "u", Rules: tc.rules}
		if fileSafe(u) != "" {
			continue // the server would take it, the file could not
		}
		ref, err := CheckLive(ctxT(t), c, []User{u})
		must(t, err)
		if got := ref["u"] == ""; got != tc.ok {
			t.Errorf("%v: server accepted = %v, table says %v (%q)", tc.rules, got, tc.ok, ref["u"])
		}
		if local := CheckLocal([]User{u})["u"]; s.Version == (valkey.Version{Major: 8, Minor: 0, Patch: 1}) && !tc.ok && local != ref["u"] {
			t.Errorf("%v: local message %q, server %q", tc.rules, local, ref["u"])
		}
	}
	users, err := c.ACLUsers(ctxT(t))
	must(t, err)
	for _, u := range users {
		if u == scratchUser {
			t.Fatal("the scratch user was left on the server")
		}
	}
}
