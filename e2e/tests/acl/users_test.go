//go:build e2e

package acl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// liveWithin is how soon a change of users or passwords must be live on every member.
const liveWithin = 30 * time.Second

// TestUsersAsCode runs the reference's users on a 3x1 cluster and changes them.
func TestUsersAsCode(t *testing.T) {
	var fx *fixture
	need := func(t *testing.T) {
		if fx == nil {
			t.Fatal("the cluster of the feature was not created")
		}
	}
	f := framework.NewFeature(suite, "users as code").
		Assess("the reference's users have exactly their rights on every member", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			fx = newFixture(ctx, t)
			checkStatus(ctx, t, fx)
			checkAlice(ctx, t, fx)
			checkBob(ctx, t, fx)
			everyMember(ctx, t, fx, 5*time.Second, "carol logs in with either password, not with another, nor alice with a wrong one",
				func(ctx context.Context, m v1alpha1.ValkeyNode) (bool, string, error) {
					return logins(ctx, addr(m), []login{
						{"carol", fx.pw["carol-a"], true}, {"carol", fx.pw["carol-b"], true},
						{"carol", "wrong-password", false}, {"alice", fx.pw["carol-a"], false},
					})
				})
			return ctx
		}).
		Assess("a password removed from the user's Secret is refused everywhere within 30 s, the other works, no restart", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			need(t)
			before := fx.k.PodsState(ctx, t, fx.vc)
			start := time.Now()
			// A user retires a password in two edits: the spec stops listing its key,
			// then the key leaves the Secret.
			fx.updateSpec(ctx, t, func(s *v1alpha1.ValkeyClusterSpec) { userOf(s, "carol").PasswordSecret.Keys = []string{"carol-b"} })
			fx.updateUsersSecret(ctx, t, func(d map[string][]byte) { delete(d, "carol-a") })
			everyMember(ctx, t, fx, liveWithin, "carol-a refused and carol-b accepted",
				func(ctx context.Context, m v1alpha1.ValkeyNode) (bool, string, error) {
					return logins(ctx, addr(m), []login{{"carol", fx.pw["carol-a"], false}, {"carol", fx.pw["carol-b"], true}})
				})
			t.Logf("carol's removed password refused on every member %s after the first edit", time.Since(start).Round(10*time.Millisecond))
			waitACLSettled(ctx, t, fx)
			for _, c := range fx.k.PodsState(ctx, t, fx.vc).Changes(before) {
				t.Error(c)
			}
			return ctx
		}).
		Assess("a user added and a user deleted in the spec are live everywhere within 30 s, no restart", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			need(t)
			before := fx.k.PodsState(ctx, t, fx.vc)
			start := time.Now()
			fx.updateSpec(ctx, t, func(s *v1alpha1.ValkeyClusterSpec) {
				s.Users = slices.DeleteFunc(s.Users, func(u v1alpha1.UserSpec) bool { return u.Name == "bob" })
				s.Users = append(s.Users, v1alpha1.UserSpec{Name: "dave", NoPass: true,
					Commands: &v1alpha1.CommandsSpec{Allow: []string{"@read", "@connection"}}, Keys: &v1alpha1.KeysSpec{ReadOnly: []string{"dave:*"}}})
			})
			everyMember(ctx, t, fx, liveWithin, "dave accepted, bob refused, ACL USERS without bob",
				func(ctx context.Context, m v1alpha1.ValkeyNode) (bool, string, error) {
					ok, detail, err := logins(ctx, addr(m), []login{{"dave", "", true}, {"bob", "", false}})
					if !ok || err != nil {
						return ok, detail, err
					}
					c, err := inspect(ctx, addr(m))
					if err != nil {
						return false, "", err
					}
					defer c.Close()
					users, err := c.ACLUsers(ctx)
					if err != nil {
						return false, "", err
					}
					return slices.Contains(users, "dave") && !slices.Contains(users, "bob"), fmt.Sprintf("users %v", users), nil
				})
			t.Logf("dave added and bob deleted on every member %s after the edit", time.Since(start).Round(10*time.Millisecond))
			waitACLSettled(ctx, t, fx)
			for _, c := range fx.k.PodsState(ctx, t, fx.vc).Changes(before) {
				t.Error(c)
			}
			return ctx
		}).
		Assess("a missing password key is reported, warned about, and the user's password keeps working", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			need(t)
			fx.updateUsersSecret(ctx, t, func(d map[string][]byte) { delete(d, "alicepw") })
			if err := framework.WaitFor(ctx, fx.k.Client, fx.vc, liveWithin, "report ACLReady=False PasswordMissing",
				framework.ConditionIs(v1alpha1.ConditionACLReady, metav1.ConditionFalse, v1alpha1.ReasonPasswordMissing)); err != nil {
				t.Fatal(err)
			}
			c := meta.FindStatusCondition(fx.vc.Status.Conditions, v1alpha1.ConditionACLReady)
			t.Logf("ACLReady=%s %s: %s", c.Status, c.Reason, c.Message)
			for _, word := range []string{"alice", usersSecret, "alicepw"} {
				if !strings.Contains(c.Message, word) {
					t.Errorf("the ACLReady message does not name %q: %s", word, c.Message)
				}
			}
			err := framework.Until(ctx, 15*time.Second, "a Warning event PasswordMissing naming alice, the Secret and the key", func(ctx context.Context) (bool, string, error) {
				evs := fx.k.Events(ctx, t, fx.vc.Namespace, v1alpha1.ReasonPasswordMissing)
				for _, e := range evs {
					if e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, "alice") && strings.Contains(e.Note, usersSecret) && strings.Contains(e.Note, "alicepw") {
						t.Logf("event %s %s: %s", e.Type, e.Reason, e.Note)
						return true, "", nil
					}
				}
				return false, framework.DescribeEvents(evs), nil
			})
			if err != nil {
				t.Error(err)
			}
			everyMember(ctx, t, fx, 5*time.Second, "alice's previous password still accepted",
				func(ctx context.Context, m v1alpha1.ValkeyNode) (bool, string, error) {
					return logins(ctx, addr(m), []login{{"alice", fx.pw["alicepw"], true}})
				})
			// Put the key back: the condition clears.
			fx.updateUsersSecret(ctx, t, func(d map[string][]byte) { d["alicepw"] = []byte(fx.pw["alicepw"]) })
			if err := framework.WaitFor(ctx, fx.k.Client, fx.vc, liveWithin, "report ACLReady=True again",
				framework.ConditionIs(v1alpha1.ConditionACLReady, metav1.ConditionTrue, "")); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Assess("no password in the operator's logs, the events or the statuses", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			need(t)
			noPasswordAnywhere(ctx, t, fx)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// userOf returns the user of the spec with that name (the test fails on nil).
func userOf(s *v1alpha1.ValkeyClusterSpec, name string) *v1alpha1.UserSpec {
	for i := range s.Users {
		if s.Users[i].Name == name {
			return &s.Users[i]
		}
	}
	return nil
}

// login is one login attempt and whether the server must accept it.
type login struct {
	user, password string
	accepted       bool
}

// logins tries each login on one server and reports the first that is not as expected.
func logins(ctx context.Context, address string, want []login) (bool, string, error) {
	for _, l := range want {
		ok, err := canLogin(ctx, address, l.user, l.password)
		if err != nil {
			return false, "", err
		}
		if ok != l.accepted {
			return false, fmt.Sprintf("login as %s accepted=%v, want %v", l.user, ok, l.accepted), nil
		}
	}
	return true, "", nil
}

// checkStatus checks what the acl-controller reports once the users are live.
func checkStatus(ctx context.Context, t *testing.T, fx *fixture) {
	t.Helper()
	fx.refresh(ctx, t)
	c := meta.FindStatusCondition(fx.vc.Status.Conditions, v1alpha1.ConditionACLReady)
	t.Logf("ACLReady=%s %s: %s", c.Status, c.Reason, c.Message)
	a := fx.vc.Status.ACL
	switch {
	case a == nil:
		t.Error("no status.acl")
	case a.SecretName != v1alpha1.ACLSecretName(fx.vc.Name) || a.SystemUsersSecretName != v1alpha1.SystemUsersSecretName(fx.vc.Name) || a.Revision == "":
		t.Errorf("status.acl = %+v, want secretName %s, systemUsersSecretName %s and a revision",
			*a, v1alpha1.ACLSecretName(fx.vc.Name), v1alpha1.SystemUsersSecretName(fx.vc.Name))
	default:
		t.Logf("status.acl: secretName %s, systemUsersSecretName %s, revision %s", a.SecretName, a.SystemUsersSecretName, a.Revision)
	}
}

// checkAlice checks alice's rights on every primary, with keys of its own slots.
func checkAlice(ctx context.Context, t *testing.T, fx *fixture) {
	t.Helper()
	for address, ranges := range primaries(ctx, t, fx) {
		tag := tagIn(ranges)
		app, shared, other := "app:{"+tag+"}", "shared:{"+tag+"}", "other:{"+tag+"}"
		a, err := dial(ctx, address, "alice", fx.pw["alicepw"])
		if err != nil {
			t.Fatalf("alice cannot log in to %s: %v", address, err)
		}
		b, err := dial(ctx, address, "bob", "")
		if err != nil {
			a.Close()
			t.Fatalf("bob cannot log in to %s without a password: %v", address, err)
		}
		if _, err := a.Do(ctx, "SET", app, "from-alice"); err != nil {
			t.Errorf("%s: alice SET %s: %v", address, app, err)
		}
		if v, err := a.Do(ctx, "GET", app); err != nil || v != "from-alice" {
			t.Errorf("%s: alice GET %s = %q, %v", address, app, v, err)
		}
		if _, err := b.Do(ctx, "SET", shared, "from-bob"); err != nil {
			t.Errorf("%s: bob SET %s: %v", address, shared, err)
		}
		if v, err := a.Do(ctx, "GET", shared); err != nil || v != "from-bob" {
			t.Errorf("%s: alice GET %s = %q, %v (read-only keys must be readable)", address, shared, v, err)
		}
		for _, cmd := range [][]string{{"SET", shared, "x"}, {"DEL", shared}, {"GET", other}, {"SET", other, "x"}, {"FLUSHALL"}, {"CONFIG", "GET", "maxmemory"}, {"CONFIG", "SET", "maxmemory", "0"}} {
			if _, err := a.Do(ctx, cmd...); !isNoPerm(err) {
				t.Errorf("%s: alice %s: %v, want NOPERM", address, strings.Join(cmd, " "), err)
			}
		}
		if v, err := b.Do(ctx, "GET", shared); err != nil || v != "from-bob" {
			t.Errorf("%s: %s = %q, %v after alice's refused writes", address, shared, v, err)
		}
		if err := subscribe(ctx, address, "alice", fx.pw["alicepw"], "notifications:orders"); err != nil {
			t.Errorf("%s: alice SUBSCRIBE notifications:orders: %v", address, err)
		}
		for _, ch := range []string{"alerts", "notification"} {
			if err := subscribe(ctx, address, "alice", fx.pw["alicepw"], ch); !isNoPerm(err) {
				t.Errorf("%s: alice SUBSCRIBE %s: %v, want NOPERM", address, ch, err)
			}
		}
		a.Close()
		b.Close()
	}
}

// checkBob checks bob's full access, without a password, on every member.
func checkBob(ctx context.Context, t *testing.T, fx *fixture) {
	t.Helper()
	for address, ranges := range primaries(ctx, t, fx) {
		tag := tagIn(ranges)
		b, err := dial(ctx, address, "bob", "")
		if err != nil {
			t.Fatalf("bob cannot log in to %s without a password: %v", address, err)
		}
		if who, err := b.ACLWhoAmI(ctx); err != nil || who != "bob" {
			t.Errorf("%s: bob ACL WHOAMI = %q, %v", address, who, err)
		}
		for _, cmd := range [][]string{{"SET", "other:{" + tag + "}", "x"}, {"GET", "app:{" + tag + "}"}, {"DEL", "other:{" + tag + "}"}} {
			if _, err := b.Do(ctx, cmd...); err != nil {
				t.Errorf("%s: bob %s: %v", address, strings.Join(cmd, " "), err)
			}
		}
		if _, err := b.ConfigGet(ctx, "maxmemory"); err != nil {
			t.Errorf("%s: bob CONFIG GET: %v", address, err)
		}
		if err := subscribe(ctx, address, "bob", "", "alerts"); err != nil {
			t.Errorf("%s: bob SUBSCRIBE alerts: %v", address, err)
		}
		b.Close()
	}
	everyMember(ctx, t, fx, 5*time.Second, "bob logs in with any password",
		func(ctx context.Context, m v1alpha1.ValkeyNode) (bool, string, error) {
			return logins(ctx, addr(m), []login{{"bob", "", true}, {"bob", "anything", true}})
		})
}
