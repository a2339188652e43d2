package acl

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
)

// User is one ACL user as it is written into the aclfile (one line, "user <name>
// <rules...>") and sent live (ACL SETUSER <name> reset <rules...>).
type User struct {
	Name  string
	Rules []string
}

// Line returns the aclfile line of the user.
func (u User) Line() string {
	if len(u.Rules) == 0 {
		return "user " + u.Name
	}
	return "user " + u.Name + " " + strings.Join(u.Rules, " ")
}

// LiveRules returns the arguments of ACL SETUSER that make a live user equal to the
// one a server builds from the aclfile line: the same rules applied to a reset user.
func (u User) LiveRules() []string {
	return append([]string{"reset"}, u.Rules...)
}

// markerPrefix starts the name of the revision marker: a disabled user, without
// password or permissions, whose name carries the aclfile revision. A server that has
// the marker of a revision runs that revision (it was applied in the same transaction
// as the users, or loaded from the same file).
const markerPrefix = "_acl-rev-"

// MarkerName returns the marker user of a revision.
func MarkerName(revision string) string { return markerPrefix + revision }

// IsMarker reports whether name is a revision marker.
func IsMarker(name string) bool { return strings.HasPrefix(name, markerPrefix) }

// marker returns the marker user of a revision.
func marker(revision string) User { return User{Name: MarkerName(revision), Rules: []string{"off"}} }

// RenderSpecUser renders a user of spec.users with the given passwords (the values of
// passwordSecret.keys, in that order). Rules come in a fixed order: on, passwords (as
// SHA-256 hashes) or nopass, key patterns (readWrite, readOnly, writeOnly),
// resetchannels and channel patterns, allowed then denied commands, and the raw
// permissions, in which clear-text password rules are turned into hash rules.
func RenderSpecUser(spec v1alpha1.UserSpec, passwords []string) User {
	rules := []string{"on"}
	rules = append(rules, passwordRules(spec.NoPass, passwords)...)
	rules = append(rules, keyRules(spec.Keys)...)
	rules = append(rules, channelRules(spec.Channels)...)
	rules = append(rules, commandRules(spec.Commands)...)
	rules = append(rules, rawRules(spec.Permissions)...)
	return User{Name: spec.Name, Rules: rules}
}

// passwordRules returns nopass, or one #hash per distinct password in order.
func passwordRules(nopass bool, passwords []string) []string {
	if nopass {
		return []string{"nopass"}
	}
	var out []string
	seen := map[string]bool{}
	for _, pw := range passwords {
		r := "#" + valkey.ACLPasswordHash(pw)
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// keyRules returns ~p for readWrite, %R~p for readOnly and %W~p for writeOnly.
func keyRules(k *v1alpha1.KeysSpec) []string {
	if k == nil {
		return nil
	}
	var out []string
	for _, p := range k.ReadWrite {
		out = append(out, "~"+p)
	}
	for _, p := range k.ReadOnly {
		out = append(out, "%R~"+p)
	}
	for _, p := range k.WriteOnly {
		out = append(out, "%W~"+p)
	}
	return out
}

// channelRules returns resetchannels followed by &p per pattern. resetchannels makes the
// result independent of the server's acl-pubsub-default. Channel patterns are what a user
// may publish and subscribe to, so they come with the pub/sub commands (+@pubsub): the
// patterns, not the commands, limit the user. It comes before the user's own command rules,
// so a `deny: ["@pubsub"]` still wins.
func channelRules(c *v1alpha1.ChannelsSpec) []string {
	out := []string{"resetchannels"}
	if c != nil && len(c.Patterns) > 0 {
		for _, p := range c.Patterns {
			out = append(out, "&"+p)
		}
		out = append(out, "+@pubsub")
	}
	return out
}

// commandRules returns +x per allowed and -x per denied entry (categories keep their @).
func commandRules(c *v1alpha1.CommandsSpec) []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, x := range c.Allow {
		out = append(out, "+"+x)
	}
	for _, x := range c.Deny {
		out = append(out, "-"+x)
	}
	return out
}

// rawRules splits the raw permissions on white space and replaces clear-text password
// rules (>pw, <pw) by their hash rules (#hash, !hash), so no clear password is ever
// written into the aclfile.
func rawRules(permissions string) []string {
	fields := strings.Fields(permissions)
	out := make([]string, 0, len(fields))
	for _, f := range fields {
		switch {
		case strings.HasPrefix(f, ">"):
			out = append(out, "#"+valkey.ACLPasswordHash(f[1:]))
		case strings.HasPrefix(f, "<"):
			out = append(out, "!"+valkey.ACLPasswordHash(f[1:]))
		default:
			out = append(out, f)
		}
	}
	return out
}

// File is a rendered aclfile.
type File struct {
	// Users in file order, without the revision marker.
	Users []User
	// Revision identifies the content: the first 16 hex digits of the SHA-256 of the
	// users' lines.
	Revision string
}

// NewFile orders users (system users first in their fixed order, then the others by
// name) and computes the revision.
func NewFile(system, users []User) File {
	sorted := append([]User(nil), users...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	all := append(append([]User(nil), system...), sorted...)
	sum := sha256.Sum256([]byte(lines(all)))
	return File{Users: all, Revision: hex.EncodeToString(sum[:8])}
}

// Content returns the aclfile: one line per user, the revision marker last.
func (f File) Content() string {
	return lines(append(append([]User(nil), f.Users...), marker(f.Revision)))
}

// Names returns the names of the file's users (without the marker).
func (f File) Names() []string {
	out := make([]string, 0, len(f.Users))
	for _, u := range f.Users {
		out = append(out, u.Name)
	}
	return out
}

func lines(users []User) string {
	var b strings.Builder
	for _, u := range users {
		b.WriteString(u.Line())
		b.WriteByte('\n')
	}
	return b.String()
}

// ParseFile reads the users of an aclfile this package rendered (markers excluded).
// Lines that are not "user <name> ..." are skipped.
func ParseFile(content string) []User {
	var out []User
	for _, line := range strings.Split(content, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "user" || IsMarker(f[1]) {
			continue
		}
		out = append(out, User{Name: f[1], Rules: f[2:]})
	}
	return out
}
