package acl

import (
	"strings"
	"testing"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// seedUsers are the users of the reference's example.
func seedUsers() []v1alpha1.UserSpec {
	return []v1alpha1.UserSpec{
		{
			Name:           "alice",
			PasswordSecret: &v1alpha1.PasswordSecretRef{Name: "my-users-secret", Keys: []string{"alicepw"}},
			Commands:       &v1alpha1.CommandsSpec{Allow: []string{"@read", "@write", "@connection"}, Deny: []string{"@admin", "@dangerous"}},
			Keys:           &v1alpha1.KeysSpec{ReadWrite: []string{"app:*"}, ReadOnly: []string{"shared:*"}},
			Channels:       &v1alpha1.ChannelsSpec{Patterns: []string{"notifications:*"}},
		},
		{Name: "bob", NoPass: true, Permissions: "+@all ~* &*"},
	}
}

func TestRenderSeedExample(t *testing.T) {
	const alicePW = "s3cret-alice"
	h := valkey.ACLPasswordHash(alicePW)
	users := seedUsers()
	got := []string{RenderSpecUser(users[0], []string{alicePW}).Line(), RenderSpecUser(users[1], nil).Line()}
	want := []string{
		"user alice on #" + h + " ~app:* %R~shared:* resetchannels &notifications:* +@pubsub +@read +@write +@connection -@admin -@dangerous",
		"user bob on nopass resetchannels +@all ~* &*",
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

func TestRenderFields(t *testing.T) {
	pw1, pw2 := "first-password", "second-password"
	h1, h2 := valkey.ACLPasswordHash(pw1), valkey.ACLPasswordHash(pw2)
	tests := []struct {
		name string
		spec v1alpha1.UserSpec
		pws  []string
		want string
	}{
		{"bare user", v1alpha1.UserSpec{Name: "u"}, nil, "user u on resetchannels"},
		{"nopass", v1alpha1.UserSpec{Name: "u", NoPass: true}, nil, "user u on nopass resetchannels"},
		{"one password", v1alpha1.UserSpec{Name: "u"}, []string{pw1}, "user u on #" + h1 + " resetchannels"},
		{"two passwords keep key order", v1alpha1.UserSpec{Name: "u"}, []string{pw2, pw1}, "user u on #" + h2 + " #" + h1 + " resetchannels"},
		{"duplicate passwords once", v1alpha1.UserSpec{Name: "u"}, []string{pw1, pw1}, "user u on #" + h1 + " resetchannels"},
		{"readWrite", v1alpha1.UserSpec{Name: "u", Keys: &v1alpha1.KeysSpec{ReadWrite: []string{"a:*", "b"}}}, nil, "user u on ~a:* ~b resetchannels"},
		{"readOnly", v1alpha1.UserSpec{Name: "u", Keys: &v1alpha1.KeysSpec{ReadOnly: []string{"r:*"}}}, nil, "user u on %R~r:* resetchannels"},
		{"writeOnly", v1alpha1.UserSpec{Name: "u", Keys: &v1alpha1.KeysSpec{WriteOnly: []string{"w:*"}}}, nil, "user u on %W~w:* resetchannels"},
		{"key kinds in fixed order", v1alpha1.UserSpec{Name: "u", Keys: &v1alpha1.KeysSpec{WriteOnly: []string{"w"}, ReadOnly: []string{"r"}, ReadWrite: []string{"rw"}}}, nil, "user u on ~rw %R~r %W~w resetchannels"},
		{"channels", v1alpha1.UserSpec{Name: "u", Channels: &v1alpha1.ChannelsSpec{Patterns: []string{"c1", "c2:*"}}}, nil, "user u on resetchannels &c1 &c2:* +@pubsub"},
		{"channels without the pub/sub commands: the deny comes after the grant, so it wins", v1alpha1.UserSpec{Name: "u",
			Channels: &v1alpha1.ChannelsSpec{Patterns: []string{"c1"}}, Commands: &v1alpha1.CommandsSpec{Deny: []string{"@pubsub"}}}, nil,
			"user u on resetchannels &c1 +@pubsub -@pubsub"},
		{"commands", v1alpha1.UserSpec{Name: "u", Commands: &v1alpha1.CommandsSpec{Allow: []string{"@read", "get", "config|get"}, Deny: []string{"@dangerous", "client|kill"}}}, nil,
			"user u on resetchannels +@read +get +config|get -@dangerous -client|kill"},
		{"permissions appended raw", v1alpha1.UserSpec{Name: "u", Commands: &v1alpha1.CommandsSpec{Allow: []string{"get"}}, Permissions: "  -get   ~x  "}, nil,
			"user u on resetchannels +get -get ~x"},
		{"clear passwords in permissions become hashes", v1alpha1.UserSpec{Name: "u", Permissions: ">" + pw1 + " <" + pw2}, nil,
			"user u on resetchannels #" + h1 + " !" + h2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RenderSpecUser(tt.spec, tt.pws).Line(); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestPasswordHashIsSHA256Hex(t *testing.T) {
	// echo -n password | sha256sum
	const want = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"
	u := RenderSpecUser(v1alpha1.UserSpec{Name: "u"}, []string{"password"})
	if u.Rules[1] != "#"+want {
		t.Fatalf("password rule %q, want #%s", u.Rules[1], want)
	}
	if strings.Contains(u.Line(), "password") {
		t.Fatalf("the clear password is in the line: %s", u.Line())
	}
}

func TestFileOrderAndRevision(t *testing.T) {
	sys := SystemUsers(systemPasswords{
		v1alpha1.UserOperator: {"op"}, v1alpha1.UserReplication: {"repl"}, v1alpha1.UserExporter: {"exp"}, v1alpha1.UserLifecycle: {"lc"},
	}, valkey.Version{})
	a := User{Name: "alice", Rules: []string{"on", "nopass"}}
	b := User{Name: "bob", Rules: []string{"on", "nopass"}}
	c := User{Name: "carol", Rules: []string{"on", "nopass"}}
	f1 := NewFile(sys, []User{c, a, b})
	f2 := NewFile(sys, []User{b, c, a})
	if f1.Content() != f2.Content() || f1.Revision != f2.Revision {
		t.Fatalf("the order of spec users changes the file:\n%s\n%s", f1.Content(), f2.Content())
	}
	wantNames := []string{"default", "_operator", "_replication", "_exporter", "_lifecycle", "alice", "bob", "carol"}
	if got := strings.Join(f1.Names(), ","); got != strings.Join(wantNames, ",") {
		t.Fatalf("names %s, want %s", got, strings.Join(wantNames, ","))
	}
	lines := strings.Split(strings.TrimSuffix(f1.Content(), "\n"), "\n")
	if last := lines[len(lines)-1]; last != "user "+MarkerName(f1.Revision)+" off" {
		t.Fatalf("last line %q, want the marker", last)
	}
	if len(f1.Revision) != 16 {
		t.Fatalf("revision %q, want 16 hex digits", f1.Revision)
	}
	f3 := NewFile(sys, []User{a, b})
	if f3.Revision == f1.Revision {
		t.Fatal("a different user set has the same revision")
	}
	// The parser reads back what was rendered, without the marker.
	back := ParseFile(f1.Content())
	if len(back) != len(f1.Users) || back[len(sys)].Line() != a.Line() {
		t.Fatalf("ParseFile: %v", back)
	}
}

func TestSystemUsersByVersion(t *testing.T) {
	pw := systemPasswords{v1alpha1.UserOperator: {"op"}, v1alpha1.UserReplication: {"repl"}, v1alpha1.UserExporter: {"exp"}}
	v8 := SystemUsers(pw, valkey.Version{Major: 8, Minor: 1})
	v9 := SystemUsers(pw, valkey.Version{Major: 9, Minor: 0})
	find := func(us []User, name string) string {
		for _, u := range us {
			if u.Name == name {
				return u.Line()
			}
		}
		return ""
	}
	if got := find(v8, "default"); got != "user default off resetchannels -@all" {
		t.Errorf("default: %s", got)
	}
	if got := find(v8, v1alpha1.UserReplication); got != "user _replication on #"+valkey.ACLPasswordHash("repl")+" resetchannels -@all +psync +replconf +ping +sync +cluster|nodes" {
		t.Errorf("replication on 8.x: %s", got)
	}
	if got := find(v9, v1alpha1.UserReplication); !strings.Contains(got, "+cluster|syncslots") {
		t.Errorf("replication on 9.0 lacks the slot migration rules: %s", got)
	}
	if got := find(v8, v1alpha1.UserOperator); strings.Contains(got, "migrateslots") || !strings.HasSuffix(got, " ~*") {
		t.Errorf("operator on 8.x: %s", got)
	}
	if got := find(v9, v1alpha1.UserOperator); !strings.Contains(got, "+cluster|migrateslots") {
		t.Errorf("operator on 9.0: %s", got)
	}
}

// The validation package bounds the aclfile by its own count of each user's line
// (validation.ACLLineBytes, spec.users' limit): it must be the length of the line
// rendered here, with its newline, when the keys hold different passwords, and never
// less otherwise.
func TestACLLineBytesIsTheRenderedLine(t *testing.T) {
	withKeys := func(u v1alpha1.UserSpec, keys ...string) v1alpha1.UserSpec {
		u.PasswordSecret = &v1alpha1.PasswordSecretRef{Name: "pw", Keys: keys}
		return u
	}
	cases := []struct {
		name string
		spec v1alpha1.UserSpec
		pws  []string
	}{
		{name: "bare", spec: v1alpha1.UserSpec{Name: "u"}},
		{name: "nopass", spec: v1alpha1.UserSpec{Name: "u", NoPass: true}},
		{name: "the reference's alice", spec: seedUsers()[0], pws: []string{"s3cret-alice"}},
		{name: "the reference's bob", spec: seedUsers()[1]},
		{name: "two keys", spec: withKeys(v1alpha1.UserSpec{Name: "u"}, "a", "b"), pws: []string{"one", "two"}},
		{name: "every list", spec: v1alpha1.UserSpec{Name: "app", NoPass: true,
			Keys:     &v1alpha1.KeysSpec{ReadWrite: []string{"a:*", "b"}, ReadOnly: []string{"r:*"}, WriteOnly: []string{"w"}},
			Channels: &v1alpha1.ChannelsSpec{Patterns: []string{"c1", "c2:*"}},
			Commands: &v1alpha1.CommandsSpec{Allow: []string{"@read", "cluster|shards"}, Deny: []string{"@dangerous"}}}},
		{name: "clear-text passwords in permissions become hashes", spec: v1alpha1.UserSpec{Name: "u",
			Permissions: "  +@all >a <b   ~*  "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			line := RenderSpecUser(tc.spec, tc.pws).Line() + "\n"
			if got := validation.ACLLineBytes(&tc.spec); got != len(line) {
				t.Fatalf("ACLLineBytes = %d, the rendered line has %d bytes: %q", got, len(line), line)
			}
		})
	}
	same := withKeys(v1alpha1.UserSpec{Name: "u"}, "a", "b")
	if got, line := validation.ACLLineBytes(&same), RenderSpecUser(same, []string{"pw", "pw"}).Line()+"\n"; got < len(line) {
		t.Fatalf("ACLLineBytes = %d, less than the %d bytes of a line with one password twice", got, len(line))
	}
}
