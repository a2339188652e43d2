//go:build e2e

package acl

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// usersSecret is the Secret of the spec users' passwords, as in the reference.
const usersSecret = "my-users-secret"

// referenceUsers are the users of the reference example, and carol, a user with two
// passwords (the keys of the rotation of a user's password).
func referenceUsers() []v1alpha1.UserSpec {
	return []v1alpha1.UserSpec{
		{
			Name:           "alice",
			PasswordSecret: &v1alpha1.PasswordSecretRef{Name: usersSecret, Keys: []string{"alicepw"}},
			Commands:       &v1alpha1.CommandsSpec{Allow: []string{"@read", "@write", "@connection"}, Deny: []string{"@admin", "@dangerous"}},
			Keys:           &v1alpha1.KeysSpec{ReadWrite: []string{"app:*"}, ReadOnly: []string{"shared:*"}},
			Channels:       &v1alpha1.ChannelsSpec{Patterns: []string{"notifications:*"}},
		},
		{Name: "bob", NoPass: true, Permissions: "+@all ~* &*"},
		{
			Name:           "carol",
			PasswordSecret: &v1alpha1.PasswordSecretRef{Name: usersSecret, Keys: []string{"carol-a", "carol-b"}},
			Commands:       &v1alpha1.CommandsSpec{Allow: []string{"@connection"}},
		},
	}
}

// fixture is a 3x1 cluster with the reference users, shared by a feature's steps.
type fixture struct {
	k  *framework.Cluster
	vc *v1alpha1.ValkeyCluster
	// pw are the values of my-users-secret.
	pw map[string]string
}

// newFixture creates my-users-secret and a 3x1 cluster with the reference users (and
// the suites' test user), and waits until it is Ready with its users live everywhere.
func newFixture(ctx context.Context, t *testing.T) *fixture {
	t.Helper()
	k := framework.ClusterFrom(ctx, t)
	ns := framework.Namespace(ctx)
	fx := &fixture{k: k, pw: map[string]string{
		"alicepw": framework.RandomSuffix(32), "carol-a": framework.RandomSuffix(32), "carol-b": framework.RandomSuffix(32),
	}}
	for key, v := range fx.pw {
		secrets.add(ns+"/"+usersSecret+"/"+key, v)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: usersSecret}, StringData: fx.pw}
	if err := k.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	vc := framework.NewValkeyCluster(ns, "vk", 3, 1)
	vc.Spec.Users = append(vc.Spec.Users, referenceUsers()...)
	start := time.Now()
	if err := k.Client.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	k.WaitClusterReady(ctx, t, vc, 4*time.Minute)
	fx.vc = vc
	waitACLSettled(ctx, t, fx)
	t.Logf("cluster Ready with its users live on every member %s after apply", time.Since(start).Round(100*time.Millisecond))
	registerSystemPasswords(ctx, t, fx)
	return fx
}

// waitACLSettled waits for ACLReady=True and ACLApplied=True on every member.
func waitACLSettled(ctx context.Context, t *testing.T, fx *fixture) {
	t.Helper()
	if err := framework.WaitFor(ctx, fx.k.Client, fx.vc, 30*time.Second, "report ACLReady=True",
		framework.ConditionIs(v1alpha1.ConditionACLReady, metav1.ConditionTrue, "")); err != nil {
		t.Fatal(err)
	}
	fx.k.WaitMembersCondition(ctx, t, fx.vc, v1alpha1.ConditionACLApplied, 6, 30*time.Second)
}

// refresh reads the cluster again.
func (fx *fixture) refresh(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := fx.k.Client.Get(ctx, client.ObjectKeyFromObject(fx.vc), fx.vc); err != nil {
		t.Fatal(err)
	}
}

// updateSpec changes the cluster's spec as a user would.
func (fx *fixture) updateSpec(ctx context.Context, t *testing.T, mutate func(*v1alpha1.ValkeyClusterSpec)) {
	t.Helper()
	fx.k.UpdateSpec(ctx, t, fx.vc, mutate)
}

// updateUsersSecret changes my-users-secret.
func (fx *fixture) updateUsersSecret(ctx context.Context, t *testing.T, mutate func(map[string][]byte)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s corev1.Secret
		if err := fx.k.Client.Get(ctx, client.ObjectKey{Namespace: fx.vc.Namespace, Name: usersSecret}, &s); err != nil {
			return err
		}
		mutate(s.Data)
		return fx.k.Client.Update(ctx, &s)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// addr is the client address of a member.
func addr(m v1alpha1.ValkeyNode) string {
	return net.JoinHostPort(m.Status.PodIP, strconv.Itoa(framework.ValkeyPort))
}

// dial connects to one server as user.
func dial(ctx context.Context, address, user, password string) (*valkey.Client, error) {
	return valkey.Dial(ctx, valkey.Options{Addr: address, Username: user, Password: password, DialTimeout: 2 * time.Second})
}

// canLogin reports whether the server accepts the user's password (AUTH on a raw
// connection: nothing else runs, so a user without any command right is asked too):
// false when it answers WRONGPASS, an error when it cannot be asked.
func canLogin(ctx context.Context, address, user, password string) (bool, error) {
	rc, err := rawDial(ctx, address)
	if err != nil {
		return false, err
	}
	defer rc.close()
	line, err := rc.do("AUTH", user, password)
	switch {
	case err != nil:
		return false, fmt.Errorf("AUTH as %s: %w", user, err)
	case line == "+OK":
		return true, nil
	case strings.HasPrefix(line, "-WRONGPASS"):
		return false, nil
	}
	return false, fmt.Errorf("AUTH as %s: unexpected reply %q", user, line)
}

// inspect connects as the suites' test user (nopass, every right), which no change of
// this suite touches, to look at a server.
func inspect(ctx context.Context, address string) (*valkey.Client, error) {
	return dial(ctx, address, framework.TestUser, "any")
}

// everyMember polls check on every member until it holds on all of them in the same
// round, and returns how long that took; it fails the test after timeout.
func everyMember(ctx context.Context, t *testing.T, fx *fixture, timeout time.Duration, what string,
	check func(ctx context.Context, m v1alpha1.ValkeyNode) (bool, string, error)) time.Duration {
	t.Helper()
	start := time.Now()
	members := fx.k.Members(ctx, t, fx.vc)
	err := framework.Until(ctx, timeout, what+" on every member", func(ctx context.Context) (bool, string, error) {
		var bad []string
		for _, m := range members {
			ok, detail, err := check(ctx, m)
			switch {
			case err != nil:
				bad = append(bad, m.Name+": "+err.Error())
			case !ok:
				bad = append(bad, m.Name+": "+detail)
			}
		}
		return len(bad) == 0, strings.Join(bad, "; "), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// primaries returns, per shard, the address of its primary and its slot ranges.
func primaries(ctx context.Context, t *testing.T, fx *fixture) map[string][]valkey.SlotRange {
	t.Helper()
	fx.refresh(ctx, t)
	ips := map[string]string{}
	for _, m := range fx.k.Members(ctx, t, fx.vc) {
		ips[m.Name] = addr(m)
	}
	out := map[string][]valkey.SlotRange{}
	for _, s := range fx.vc.Status.Shards {
		var ranges []valkey.SlotRange
		for _, sr := range s.Slots {
			r, err := valkey.ParseSlotRange(sr)
			if err != nil {
				t.Fatal(err)
			}
			ranges = append(ranges, r)
		}
		out[ips[s.Primary]] = ranges
	}
	if len(out) != 3 {
		t.Fatalf("status lists %d primaries, want 3: %+v", len(out), fx.vc.Status.Shards)
	}
	return out
}

// tagIn returns a hash tag whose keys hash to one of ranges.
func tagIn(ranges []valkey.SlotRange) string {
	for i := 0; ; i++ {
		tag := "t" + strconv.Itoa(i)
		if valkey.ContainsSlot(ranges, valkey.KeySlot(tag)) {
			return tag
		}
	}
}

// isNoPerm reports whether err is the server's refusal of a right.
func isNoPerm(err error) bool { return err != nil && strings.Contains(err.Error(), "NOPERM") }

// rawConn is a plain RESP connection, for what the clients hide: AUTH alone, and
// SUBSCRIBE's first reply.
type rawConn struct {
	conn net.Conn
	r    *bufio.Reader
}

// rawDial connects to address; every command on the connection must end within 3 s.
func rawDial(ctx context.Context, address string) (*rawConn, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	return &rawConn{conn: conn, r: bufio.NewReader(conn)}, nil
}

func (c *rawConn) close() { _ = c.conn.Close() }

// do sends one command and returns the first line of the reply ("+OK", "-ERR ...",
// "*3" ...).
func (c *rawConn) do(args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// subscribe logs in as user on a raw connection and subscribes to channel: nil when
// the server confirms the subscription, the server's error reply otherwise.
func subscribe(ctx context.Context, address, user, password, channel string) error {
	rc, err := rawDial(ctx, address)
	if err != nil {
		return err
	}
	defer rc.close()
	if line, err := rc.do("AUTH", user, password); err != nil || line != "+OK" {
		return fmt.Errorf("AUTH as %s: %q %v", user, line, err)
	}
	line, err := rc.do("SUBSCRIBE", channel)
	switch {
	case err != nil:
		return fmt.Errorf("SUBSCRIBE %s: %w", channel, err)
	case strings.HasPrefix(line, "-"):
		return errors.New(line[1:])
	case line != "*3":
		return fmt.Errorf("SUBSCRIBE %s: unexpected reply %q", channel, line)
	}
	return nil
}

// systemPasswords reads the passwords of the operator's own users.
func systemPasswords(ctx context.Context, t *testing.T, fx *fixture) map[string]string {
	t.Helper()
	var s corev1.Secret
	if err := fx.k.Client.Get(ctx, client.ObjectKey{Namespace: fx.vc.Namespace, Name: v1alpha1.SystemUsersSecretName(fx.vc.Name)}, &s); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, u := range []string{v1alpha1.UserOperator, v1alpha1.UserReplication, v1alpha1.UserExporter, v1alpha1.UserLifecycle} {
		out[u] = string(s.Data[u])
		if out[u] == "" {
			t.Fatalf("Secret %s has no %s password", s.Name, u)
		}
	}
	return out
}

// registerSystemPasswords adds every password of the system users Secret (the current
// ones and those of a running rotation) to the secrets the logs are searched for.
func registerSystemPasswords(ctx context.Context, t *testing.T, fx *fixture) {
	t.Helper()
	var s corev1.Secret
	if err := fx.k.Client.Get(ctx, client.ObjectKey{Namespace: fx.vc.Namespace, Name: v1alpha1.SystemUsersSecretName(fx.vc.Name)}, &s); err != nil {
		t.Fatal(err)
	}
	for key, v := range s.Data {
		if strings.HasPrefix(key, "_") {
			secrets.add(fx.vc.Namespace+"/"+s.Name+"/"+key, string(v))
		}
	}
}

// secretSet collects the passwords this run used, by a name that never holds the
// value, with their SHA-256 hex (the form the aclfile holds).
type secretSet struct {
	mu sync.Mutex
	m  map[string]string
}

var secrets = &secretSet{m: map[string]string{}}

func (s *secretSet) add(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := sha256.Sum256([]byte(value))
	s.m[name] = value
	s.m["sha256("+name+")"] = hex.EncodeToString(sum[:])
}

func (s *secretSet) all() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.m))
	for k, v := range s.m {
		out[k] = v
	}
	return out
}

// noPasswordAnywhere searches the logs of every operator pod, the events of the
// feature's and the operator's namespaces, and the statuses of the cluster and its
// members for every password of the run and its SHA-256.
func noPasswordAnywhere(ctx context.Context, t *testing.T, fx *fixture) {
	t.Helper()
	all := secrets.all()
	logs, err := fx.k.OperatorLogs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for name, text := range logs {
		size += len(text)
		if found := framework.FindSecrets(text, all); len(found) > 0 {
			t.Errorf("the log of operator container %s holds %v", name, found)
		}
	}
	events := 0
	for _, ns := range []string{fx.vc.Namespace, framework.OperatorNamespace} {
		var list corev1.EventList
		if err := fx.k.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		events += len(list.Items)
		b, _ := json.Marshal(list.Items)
		if found := framework.FindSecrets(string(b), all); len(found) > 0 {
			t.Errorf("the events of namespace %s hold %v", ns, found)
		}
	}
	fx.refresh(ctx, t)
	statuses := []any{fx.vc.Status}
	for _, m := range fx.k.Members(ctx, t, fx.vc) {
		statuses = append(statuses, m.Status)
	}
	b, _ := json.Marshal(statuses)
	if found := framework.FindSecrets(string(b), all); len(found) > 0 {
		t.Errorf("the statuses of the cluster and its members hold %v", found)
	}
	t.Logf("searched %d operator logs (%d bytes), %d events and %d statuses for %d passwords and their SHA-256",
		len(logs), size, events, len(statuses), len(all)/2)
}
