// Package redact removes secrets from text that a Valkey (or Redis) server, a member's
// log or termination message, or a reply produced, before a controller copies that text
// into a status, an event or a log line. It is the one place that knows how a server
// quotes a secret:
//
//   - a config line it refuses, quoted as ">>> 'key value...'": the key stays, the value
//     goes (a server that does not know primaryauth prints the whole line);
//   - ACL password operations: ">password", "<password", "#<sha256 hex>", "!<sha256 hex>"
//     (ACL SETUSER quotes the modifier it refuses);
//   - the arguments of AUTH and of HELLO ... AUTH;
//   - the value after primaryauth, masterauth and requirepass, wherever it appears;
//   - and the literal values the caller knows (the passwords of the cluster's Secrets).
//
// The rules are patterns, so they may also hide a harmless word that stands where a
// secret would; they never keep a secret that stands where one is expected.
package redact

import (
	"regexp"
	"slices"
	"strings"
)

// Placeholder stands where a secret was.
const Placeholder = "<redacted>"

// Text returns s with every secret removed: the values the rules of the package
// recognise, and each non-empty string of secrets wherever it occurs.
func Text(s string, secrets ...string) string {
	s = literals(s, secrets)
	s = configLines(s)
	s = passwordKeys.ReplaceAllStringFunc(s, keepPrefix(passwordKeys))
	s = authArgs.ReplaceAllStringFunc(s, redactAuth)
	s = aclPasswords.ReplaceAllStringFunc(s, keepPrefix(aclPasswords))
	s = aclHashes.ReplaceAllStringFunc(s, keepPrefix(aclHashes))
	return s
}

// Lines is Text of each string, for texts kept as lists.
func Lines(ss []string, secrets ...string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Text(s, secrets...)
	}
	return out
}

// literals replaces each known secret, the longest first (a secret may hold another).
func literals(s string, secrets []string) string {
	sorted := slices.Clone(secrets)
	slices.SortFunc(sorted, func(a, b string) int { return len(b) - len(a) })
	for _, sec := range sorted {
		if sec != "" && sec != Placeholder {
			s = strings.ReplaceAll(s, sec, Placeholder)
		}
	}
	return s
}

// configQuote is how Valkey and Redis quote the config line they stop at.
const configQuote = ">>> '"

// configLines keeps only the key of each quoted config line: ">>> 'primaryauth s3cret'"
// becomes ">>> 'primaryauth <redacted>'". A line cut short (no closing quote) loses
// everything after its key.
func configLines(s string) string {
	if !strings.Contains(s, configQuote) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = configLine(l)
	}
	return strings.Join(lines, "\n")
}

func configLine(l string) string {
	i := strings.Index(l, configQuote)
	if i < 0 {
		return l
	}
	start := i + len(configQuote)
	rest := l[start:]
	key := strings.TrimLeft(rest, " \t")
	lead := len(rest) - len(key)
	end := strings.IndexAny(key, " \t'")
	if end < 0 || key[end] == '\'' {
		return l // the key alone, or an empty line: nothing to hide
	}
	tail := ""
	if j := strings.LastIndex(key[end:], "'"); j >= 0 {
		tail = key[end+j:]
	}
	return l[:start+lead] + key[:end] + " " + Placeholder + tail
}

// token is one argument as a server or a command line shows it: quoted, or up to the
// next space or quote.
const token = `(?:"[^"\n]*"|'[^'\n]*'|[^\s"']+)`

var (
	// passwordKeys: the value after a key that holds a password, as a config line, an
	// argument list ("CONFIG SET masterauth x", "--primaryauth x", `"masterauth" "x"`)
	// or key=value.
	passwordKeys = regexp.MustCompile(`(?i)\b(?:primaryauth|masterauth|requirepass)["']?(?:[ \t]*[=:][ \t]*|[ \t]+)(` + token + `)`)
	// authArgs: AUTH with one or two arguments (HELLO ... AUTH user pass included).
	authArgs = regexp.MustCompile(`(?i)\bAUTH[ \t]+` + token + `(?:[ \t]+` + token + `)?`)
	// aclPasswords: an ACL rule that adds or removes a password, at the start of a token.
	aclPasswords = regexp.MustCompile(`(?:^|[\s'"(\[,])[<>]([^\s'"]+)`)
	// aclHashes: an ACL rule that adds or removes a password's hash.
	aclHashes = regexp.MustCompile(`(?:^|[\s'"(\[,])[#!]([0-9a-fA-F]{16,}[^\s'"]*)`)
	// notSecret: what follows '<' or '>' in ordinary text (">>>", "<nil>", "<redacted>").
	notSecret = regexp.MustCompile(`^(?:[<>=-]+|[a-z]+>[,.;:)\]]*)$`)
)

// keepPrefix returns a replacement that keeps a match up to its first group and
// replaces the group, unless the group is no secret.
func keepPrefix(re *regexp.Regexp) func(string) string {
	return func(m string) string {
		idx := re.FindStringSubmatchIndex(m)
		if idx == nil || idx[2] < 0 {
			return m
		}
		val := m[idx[2]:idx[3]]
		if notSecret.MatchString(val) || strings.HasPrefix(val, Placeholder) {
			return m
		}
		return m[:idx[2]] + Placeholder + m[idx[3]:]
	}
}

// redactAuth replaces the arguments of AUTH.
func redactAuth(m string) string {
	fields := strings.Fields(m)
	if len(fields) > 1 && fields[1] == Placeholder {
		return m // redacted before: what follows is no argument of AUTH
	}
	return fields[0] + " " + Placeholder
}
