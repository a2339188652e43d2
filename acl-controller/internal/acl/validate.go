package acl

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/valkey-operator/valkey-operator/valkey"
)

// What Valkey refuses is decided in two ways, because a server refuses a whole aclfile
// with one bad line (ACL LOAD keeps the old users, a starting server exits), so no rule
// may reach the file unchecked:
//
//   - live: when a member is reachable, each user's rules are applied to a scratch user
//     inside MULTI/EXEC (ACL SETUSER <scratch> reset <rules> off, then ACL DELUSER
//     <scratch>): the server's own parser gives the verdict and its message, and the
//     scratch user never exists outside the transaction. This knows the commands of the
//     version that actually runs (9.x commands on a 9.x cluster).
//   - local: before any member runs (a new cluster needs its aclfile to start), the rules
//     are checked against the ACL grammar and the command table of the oldest supported
//     server (8.0.1, generated from a real one): a rule that passes loads on every
//     supported version.
//
// Both also refuse what the aclfile format cannot carry: a rule or name with white
// space or control characters (the file is split on spaces).

// scratchUser is the user the live check applies rules to.
const scratchUser = "_acl-check"

// Refusals maps a user name to the reason its rules are refused.
type Refusals map[string]string

// fileSafe refuses names and rules the aclfile cannot hold.
func fileSafe(u User) string {
	if u.Name == "" {
		return "the user name is empty"
	}
	if bad := unsafeToken(u.Name); bad {
		return "the user name contains white space or control characters"
	}
	for _, r := range u.Rules {
		if unsafeToken(r) {
			return fmt.Sprintf("rule %q contains white space or control characters", redactRule(r))
		}
	}
	return ""
}

func unsafeToken(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0
}

// redactRule hides a password rule in a message, as the valkey library does with the
// server's messages.
func redactRule(r string) string {
	if r != "" && strings.ContainsRune("><#!", rune(r[0])) {
		return "<redacted>"
	}
	return r
}

// CheckLocal checks users against the ACL grammar and the baseline command table.
func CheckLocal(users []User) Refusals {
	out := Refusals{}
	for _, u := range users {
		if msg := fileSafe(u); msg != "" {
			out[u.Name] = msg
			continue
		}
		if msg := baseline.checkRules(u.Rules); msg != "" {
			out[u.Name] = msg
		}
	}
	return out
}

// CheckLive checks users on a live server with scratch users in one transaction.
func CheckLive(ctx context.Context, c *valkey.Client, users []User) (Refusals, error) {
	out := Refusals{}
	var ops []valkey.ACLOp
	var checked []User
	for _, u := range users {
		if msg := fileSafe(u); msg != "" {
			out[u.Name] = msg
			continue
		}
		rules := append(u.LiveRules(), "off")
		ops = append(ops, valkey.ACLOp{Name: scratchUser, Rules: rules}, valkey.ACLOp{Name: scratchUser, Delete: true})
		checked = append(checked, u)
	}
	if len(ops) == 0 {
		return out, nil
	}
	errs, err := c.ACLTransaction(ctx, ops)
	if err != nil {
		return nil, fmt.Errorf("check users on %s: %w", c.Addr(), err)
	}
	for i, u := range checked {
		if e := errs[2*i]; e != nil {
			msg, ok := valkey.ServerMessage(e)
			if !ok {
				return nil, fmt.Errorf("check user %s on %s: %w", u.Name, c.Addr(), e)
			}
			out[u.Name] = strings.ReplaceAll(msg, scratchUser, u.Name)
		}
	}
	return out, nil
}

// commandTable is what a server version knows.
type commandTable struct {
	categories map[string]bool
	commands   map[string]bool
	// containers are commands that have subcommands.
	containers map[string]bool
}

var baseline = newCommandTable(baselineCategories, baselineCommands)

func newCommandTable(categories, commands []string) commandTable {
	t := commandTable{categories: map[string]bool{}, commands: map[string]bool{}, containers: map[string]bool{}}
	for _, c := range categories {
		t.categories[c] = true
	}
	for _, c := range commands {
		t.commands[c] = true
		if parent, _, ok := strings.Cut(c, "|"); ok {
			t.containers[parent] = true
		}
	}
	return t
}

// ruleState follows what earlier rules of the same user did, for the checks that
// depend on order.
type ruleState struct {
	allKeys, allChannels bool
	passwords            map[string]bool
}

var hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// keywords are the rules that are a single word (case-insensitive).
var keywords = map[string]bool{
	"on": true, "off": true, "nopass": true, "resetpass": true, "reset": true,
	"allkeys": true, "resetkeys": true, "allchannels": true, "resetchannels": true,
	"allcommands": true, "nocommands": true, "skip-sanitize-payload": true,
	"sanitize-payload": true, "clearselectors": true,
}

// checkRules returns the first refusal of a user's rules, in the server's words where
// possible, or "".
func (t commandTable) checkRules(rules []string) string {
	st := ruleState{passwords: map[string]bool{}}
	for i := 0; i < len(rules); i++ {
		r := rules[i]
		if strings.HasPrefix(r, "(") {
			end, msg := t.checkSelector(rules, i)
			if msg != "" {
				return msg
			}
			i = end
			continue
		}
		if msg := t.checkRule(r, &st); msg != "" {
			return fmt.Sprintf("Error in ACL SETUSER modifier '%s': %s", redactRule(r), msg)
		}
	}
	return ""
}

// checkSelector checks a selector "(rules...)" that may span several arguments from
// rules[i]; it returns the index of its last argument.
func (t commandTable) checkSelector(rules []string, i int) (int, string) {
	var parts []string
	for j := i; j < len(rules); j++ {
		parts = append(parts, rules[j])
		if strings.HasSuffix(rules[j], ")") {
			body := strings.TrimSuffix(strings.TrimPrefix(strings.Join(parts, " "), "("), ")")
			st := ruleState{passwords: map[string]bool{}}
			for _, r := range strings.Fields(body) {
				if msg := t.checkSelectorRule(r, &st); msg != "" {
					return j, fmt.Sprintf("Error in ACL SETUSER modifier '%s': %s", r, msg)
				}
			}
			return j, ""
		}
	}
	return len(rules), fmt.Sprintf("Unmatched parenthesis in acl selector starting at '%s'.", rules[i])
}

// checkSelectorRule allows in a selector only key, channel and command rules.
func (t commandTable) checkSelectorRule(r string, st *ruleState) string {
	if r == "" || !strings.ContainsRune("~%&+-", rune(r[0])) && !isSelectorKeyword(r) {
		return "Syntax error"
	}
	return t.checkRule(r, st)
}

func isSelectorKeyword(r string) bool {
	switch strings.ToLower(r) {
	case "allkeys", "resetkeys", "allchannels", "resetchannels", "allcommands", "nocommands":
		return true
	}
	return false
}

// checkRule checks one rule outside selectors; the message is the server's.
func (t commandTable) checkRule(r string, st *ruleState) string {
	lower := strings.ToLower(r)
	if keywords[lower] {
		st.apply(lower)
		return ""
	}
	if r == "" {
		return "Syntax error"
	}
	switch r[0] {
	case '>':
		st.passwords[valkey.ACLPasswordHash(r[1:])] = true
	case '#':
		if !hashRE.MatchString(r[1:]) {
			return "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
		}
		st.passwords[r[1:]] = true
	case '<', '!':
		return st.removePassword(r)
	case '~', '%':
		return st.keyPattern(r)
	case '&':
		if st.allChannels {
			return "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
		}
		st.allChannels = r == "&*"
	case '+', '-':
		return t.checkCommand(r)
	default:
		return "Syntax error"
	}
	return ""
}

// apply records the effect of a keyword on the order-dependent state.
func (st *ruleState) apply(keyword string) {
	switch keyword {
	case "allkeys":
		st.allKeys = true
	case "resetkeys":
		st.allKeys = false
	case "allchannels":
		st.allChannels = true
	case "resetchannels":
		st.allChannels = false
	case "reset":
		*st = ruleState{passwords: map[string]bool{}}
	case "nopass", "resetpass":
		st.passwords = map[string]bool{}
	}
}

// removePassword checks <pw and !hash: the password must have been added before.
func (st *ruleState) removePassword(r string) string {
	h := r[1:]
	if r[0] == '<' {
		h = valkey.ACLPasswordHash(h)
	} else if !hashRE.MatchString(h) {
		return "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	}
	if !st.passwords[h] {
		return "The password you are trying to remove from the user does not exist"
	}
	delete(st.passwords, h)
	return ""
}

// keyPattern checks ~p and %<R|W|RW>~p.
func (st *ruleState) keyPattern(r string) string {
	full := r[0] == '~'
	if r[0] == '%' {
		flags, _, ok := strings.Cut(r[1:], "~")
		if !ok || !validKeyFlags(flags) {
			return "Syntax error"
		}
		full = false
	}
	if st.allKeys {
		return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	}
	if full && r == "~*" {
		st.allKeys = true
	}
	return ""
}

// validKeyFlags accepts a non-empty combination of R and W, each at most once.
func validKeyFlags(flags string) bool {
	if flags == "" {
		return false
	}
	seen := map[rune]bool{}
	for _, c := range strings.ToUpper(flags) {
		if (c != 'R' && c != 'W') || seen[c] {
			return false
		}
		seen[c] = true
	}
	return true
}

// checkCommand checks +x/-x for categories, commands, subcommands and the first-arg
// form (+select|0) the server still accepts for commands without subcommands.
func (t commandTable) checkCommand(r string) string {
	allow := r[0] == '+'
	name := strings.ToLower(r[1:])
	const unknown = "Unknown command or category name in ACL"
	if cat, ok := strings.CutPrefix(name, "@"); ok {
		if !t.categories[cat] && cat != "all" {
			return unknown
		}
		return ""
	}
	parent, sub, hasSub := strings.Cut(name, "|")
	if !hasSub {
		if !t.commands[name] {
			return unknown
		}
		return ""
	}
	switch {
	case parent == "" || !t.commands[parent]:
		return unknown
	case sub == "":
		return "Syntax error"
	case strings.Contains(sub, "|"):
		return "Allowing first-arg of a subcommand is not supported"
	case t.containers[parent]:
		if !t.commands[name] {
			return unknown
		}
	case !allow:
		return unknown
	}
	return ""
}
