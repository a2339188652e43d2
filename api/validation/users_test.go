package validation

import (
	"testing"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func TestValidateUserNames(t *testing.T) {
	name := func(n string) func(c *v1alpha1.ValkeyCluster) {
		return withUser(func(u *v1alpha1.UserSpec) { u.Name = n })
	}
	runClusterCases(t, []clusterCase{
		{name: "plain", mutate: name("app")},
		{name: "with punctuation", mutate: name("app.reader-1@team")},
		{name: "underscore inside", mutate: name("app_reader")},
		{name: "empty", mutate: name(""), want: []string{"spec.users[0].name: Required value"}},
		{name: "reserved prefix", mutate: name("_operator"),
			want: []string{`spec.users[0].name: Invalid value: "_operator": must not start with "_"`}},
		{name: "default user", mutate: name("default"),
			want: []string{`spec.users[0].name: Invalid value: "default"`}},
		{name: "space", mutate: name("app reader"),
			want: []string{`spec.users[0].name: Invalid value: "app reader": must not contain spaces`}},
		{name: "quote", mutate: name(`app"x`), want: []string{"spec.users[0].name: Invalid value"}},
		{name: "control character", mutate: name("app\x00"), want: []string{"spec.users[0].name: Invalid value"}},
		{name: "duplicate", mutate: func(c *v1alpha1.ValkeyCluster) {
			withUser(func(*v1alpha1.UserSpec) {})(c)
			withUser(func(*v1alpha1.UserSpec) {})(c)
		}, want: []string{`spec.users[1].name: Duplicate value: "carol"`}},
	})
}

func TestValidateUserCredentials(t *testing.T) {
	runClusterCases(t, []clusterCase{
		{name: "password secret", mutate: withUser(func(*v1alpha1.UserSpec) {})},
		{name: "several keys for rotation", mutate: withUser(func(u *v1alpha1.UserSpec) {
			u.PasswordSecret.Keys = []string{"old", "new"}
		})},
		{name: "nopass", mutate: withUser(func(u *v1alpha1.UserSpec) { u.PasswordSecret, u.NoPass = nil, true })},
		{name: "both", mutate: withUser(func(u *v1alpha1.UserSpec) { u.NoPass = true }),
			want: []string{"spec.users[0].nopass: Forbidden: nopass and passwordSecret are mutually exclusive"}},
		{name: "neither", mutate: withUser(func(u *v1alpha1.UserSpec) { u.PasswordSecret = nil }),
			want: []string{"spec.users[0].passwordSecret: Required value: set passwordSecret, or nopass: true"}},
		{name: "secret unnamed", mutate: withUser(func(u *v1alpha1.UserSpec) { u.PasswordSecret.Name = "" }),
			want: []string{"spec.users[0].passwordSecret.name: Required value"}},
		{name: "secret name invalid", mutate: withUser(func(u *v1alpha1.UserSpec) { u.PasswordSecret.Name = "My Secret" }),
			want: []string{"spec.users[0].passwordSecret.name: Invalid value"}},
		{name: "no keys", mutate: withUser(func(u *v1alpha1.UserSpec) { u.PasswordSecret.Keys = nil }),
			want: []string{"spec.users[0].passwordSecret.keys: Required value"}},
		{name: "empty key", mutate: withUser(func(u *v1alpha1.UserSpec) { u.PasswordSecret.Keys = []string{"a", ""} }),
			want: []string{"spec.users[0].passwordSecret.keys[1]: Required value"}},
		{name: "duplicate key", mutate: withUser(func(u *v1alpha1.UserSpec) { u.PasswordSecret.Keys = []string{"a", "a"} }),
			want: []string{`spec.users[0].passwordSecret.keys[1]: Duplicate value: "a"`}},
		{name: "invalid key", mutate: withUser(func(u *v1alpha1.UserSpec) { u.PasswordSecret.Keys = []string{"pass/word"} }),
			want: []string{`spec.users[0].passwordSecret.keys[0]: Invalid value: "pass/word"`}},
	})
}

func TestValidateUserCommands(t *testing.T) {
	allow := func(entries ...string) func(c *v1alpha1.ValkeyCluster) {
		return withUser(func(u *v1alpha1.UserSpec) { u.Commands = &v1alpha1.CommandsSpec{Allow: entries} })
	}
	deny := func(entries ...string) func(c *v1alpha1.ValkeyCluster) {
		return withUser(func(u *v1alpha1.UserSpec) { u.Commands = &v1alpha1.CommandsSpec{Deny: entries} })
	}
	runClusterCases(t, []clusterCase{
		{name: "categories, commands and subcommands",
			mutate: allow("@read", "@all", "get", "config|get", "CLIENT|SETNAME", "json.get", "select|0")},
		{name: "deny categories", mutate: deny("@admin", "@dangerous", "flushall")},
		{name: "leading plus", mutate: allow("+get"),
			want: []string{`spec.users[0].commands.allow[0]: Invalid value: "+get": write the entry without a leading + or -`}},
		{name: "leading minus", mutate: deny("-@admin"), want: []string{"spec.users[0].commands.deny[0]: Invalid value"}},
		{name: "space", mutate: allow("@read", "get set"),
			want: []string{`spec.users[0].commands.allow[1]: Invalid value: "get set": must be a category`}},
		{name: "empty", mutate: allow(""), want: []string{"spec.users[0].commands.allow[0]: Invalid value"}},
		{name: "category with subcommand", mutate: allow("@read|x"), want: []string{"spec.users[0].commands.allow[0]"}},
		{name: "two pipes", mutate: deny("config|get|x"), want: []string{"spec.users[0].commands.deny[0]"}},
		{name: "key pattern in commands", mutate: allow("~*"), want: []string{"spec.users[0].commands.allow[0]"}},
	})
}

func TestValidateUserPatterns(t *testing.T) {
	keys := func(k v1alpha1.KeysSpec) func(c *v1alpha1.ValkeyCluster) {
		return withUser(func(u *v1alpha1.UserSpec) { u.Keys = &k })
	}
	channels := func(p ...string) func(c *v1alpha1.ValkeyCluster) {
		return withUser(func(u *v1alpha1.UserSpec) { u.Channels = &v1alpha1.ChannelsSpec{Patterns: p} })
	}
	runClusterCases(t, []clusterCase{
		{name: "key patterns", mutate: keys(v1alpha1.KeysSpec{ReadWrite: []string{"app:*", `a\*b`},
			ReadOnly: []string{"shared:*"}, WriteOnly: []string{"log:[ab]?"}})},
		{name: "channel patterns", mutate: channels("notifications:*", "*")},
		{name: "space in a key pattern", mutate: keys(v1alpha1.KeysSpec{ReadWrite: []string{"app *"}}),
			want: []string{`spec.users[0].keys.readWrite[0]: Invalid value: "app *": must not contain spaces`}},
		{name: "empty key pattern", mutate: keys(v1alpha1.KeysSpec{ReadOnly: []string{""}}),
			want: []string{"spec.users[0].keys.readOnly[0]: Required value"}},
		{name: "prefixed key pattern", mutate: keys(v1alpha1.KeysSpec{WriteOnly: []string{"~log:*"}}),
			want: []string{`spec.users[0].keys.writeOnly[0]: Invalid value: "~log:*": write the pattern without the leading "~" or "%"`}},
		{name: "selector syntax in a key pattern", mutate: keys(v1alpha1.KeysSpec{ReadOnly: []string{"%R~x"}}),
			want: []string{"spec.users[0].keys.readOnly[0]"}},
		{name: "space in a channel pattern", mutate: channels("a b"),
			want: []string{"spec.users[0].channels.patterns[0]: Invalid value"}},
		{name: "prefixed channel pattern", mutate: channels("&news"),
			want: []string{`spec.users[0].channels.patterns[0]: Invalid value: "&news": write the pattern without the leading "&"`}},
	})
}

func TestValidateUserPermissions(t *testing.T) {
	perm := func(p string) func(c *v1alpha1.ValkeyCluster) {
		return withUser(func(u *v1alpha1.UserSpec) { u.Permissions = p })
	}
	runClusterCases(t, []clusterCase{
		{name: "seed rule", mutate: perm("+@all ~* &*")},
		{name: "selectors", mutate: perm("+@read (~app:* +set)")},
		{name: "newline", mutate: perm("+@all\nuser evil on nopass +@all"),
			want: []string{"spec.users[0].permissions: Invalid value", "must be one line"}},
		{name: "carriage return", mutate: perm("+@all\r"), want: []string{"spec.users[0].permissions"}},
		{name: "NUL", mutate: perm("+@all\x00"), want: []string{"spec.users[0].permissions"}},
	})
}
