package validation

import (
	"regexp"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// ACL names the operator keeps for itself.
const (
	// ReservedUserPrefix starts the names of the operator's own users (_operator,
	// _replication, _exporter).
	ReservedUserPrefix = "_"
	// DefaultUserName is Valkey's built-in user, which the operator manages.
	DefaultUserName = "default"
)

var (
	// categoryRE matches an ACL category entry such as @read.
	categoryRE = regexp.MustCompile(`^@[A-Za-z0-9_-]+$`)
	// commandRE matches a command (get), a module command (json.get) or a
	// subcommand (config|get).
	commandRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]+(\|[A-Za-z0-9_.:-]+)?$`)
)

// validateUsers checks every user and that no name is used twice.
func validateUsers(users []v1alpha1.UserSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i := range users {
		up := p.Index(i)
		u := &users[i]
		if u.Name != "" && seen[u.Name] {
			errs = append(errs, field.Duplicate(up.Child("name"), u.Name))
		}
		seen[u.Name] = true
		errs = append(errs, validateUser(u, up)...)
	}
	return errs
}

// validateUser runs the rules of one user.
func validateUser(u *v1alpha1.UserSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateUserName(u.Name, p.Child("name"))...)
	errs = append(errs, validateCredentials(u, p)...)
	if u.Commands != nil {
		errs = append(errs, validateCommandList(u.Commands.Allow, p.Child("commands", "allow"))...)
		errs = append(errs, validateCommandList(u.Commands.Deny, p.Child("commands", "deny"))...)
	}
	if u.Keys != nil {
		kp := p.Child("keys")
		errs = append(errs, validatePatterns(u.Keys.ReadWrite, "~%", kp.Child("readWrite"))...)
		errs = append(errs, validatePatterns(u.Keys.ReadOnly, "~%", kp.Child("readOnly"))...)
		errs = append(errs, validatePatterns(u.Keys.WriteOnly, "~%", kp.Child("writeOnly"))...)
	}
	if u.Channels != nil {
		errs = append(errs, validatePatterns(u.Channels.Patterns, "&", p.Child("channels", "patterns"))...)
	}
	if hasControl(u.Permissions, true) {
		errs = append(errs, field.Invalid(p.Child("permissions"), u.Permissions,
			"must be one line: no newlines or other control characters"))
	}
	return errs
}

// validateUserName refuses names Valkey or the ACL file cannot hold and the names the
// operator keeps.
func validateUserName(name string, p *field.Path) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(p, "every user needs a name")}
	case hasSpaceOrQuote(name):
		return field.ErrorList{field.Invalid(p, name,
			"must not contain spaces, quotes or control characters (Valkey ACL names are single words)")}
	case strings.HasPrefix(name, ReservedUserPrefix):
		return field.ErrorList{field.Invalid(p, name,
			"must not start with \"_\": such names are reserved for the operator's own users")}
	case name == DefaultUserName:
		return field.ErrorList{field.Invalid(p, name,
			"\"default\" is Valkey's built-in user, which the operator manages; choose another name")}
	}
	return nil
}

// validateCredentials requires exactly one of passwordSecret and nopass.
func validateCredentials(u *v1alpha1.UserSpec, p *field.Path) field.ErrorList {
	switch {
	case u.PasswordSecret != nil && u.NoPass:
		return field.ErrorList{field.Forbidden(p.Child("nopass"),
			"nopass and passwordSecret are mutually exclusive: set only one")}
	case u.PasswordSecret == nil && !u.NoPass:
		return field.ErrorList{field.Required(p.Child("passwordSecret"),
			"set passwordSecret, or nopass: true; a user with neither could never log in")}
	case u.PasswordSecret != nil:
		return validatePasswordSecret(u.PasswordSecret, p.Child("passwordSecret"))
	}
	return nil
}

// validatePasswordSecret checks the Secret name and its keys.
func validatePasswordSecret(ref *v1alpha1.PasswordSecretRef, p *field.Path) field.ErrorList {
	errs := validateSecretName(ref.Name, true, p.Child("name"))
	kp := p.Child("keys")
	if len(ref.Keys) == 0 {
		return append(errs, field.Required(kp, "at least one key of the Secret holding a password"))
	}
	seen := map[string]bool{}
	for i, key := range ref.Keys {
		errs = append(errs, validateSecretKey(key, seen, kp.Index(i))...)
	}
	return errs
}

// validateSecretKey checks one key of a Secret and records it in seen.
func validateSecretKey(key string, seen map[string]bool, p *field.Path) field.ErrorList {
	if key == "" {
		return field.ErrorList{field.Required(p, "the name of a key in the Secret")}
	}
	if seen[key] {
		return field.ErrorList{field.Duplicate(p, key)}
	}
	seen[key] = true
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(p, key, msg))
	}
	return errs
}

// validateCommandList checks allow or deny entries: a category, a command or a
// subcommand, written without the + or - the operator adds.
func validateCommandList(entries []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range entries {
		ep := p.Index(i)
		switch {
		case strings.HasPrefix(e, "+") || strings.HasPrefix(e, "-"):
			errs = append(errs, field.Invalid(ep, e,
				"write the entry without a leading + or -: allow and deny add it"))
		case !categoryRE.MatchString(e) && !commandRE.MatchString(e):
			errs = append(errs, field.Invalid(ep, e,
				"must be a category (@read), a command (get) or a subcommand (config|get), without spaces"))
		}
	}
	return errs
}

// validatePatterns checks key or channel patterns: not empty, one word, and without
// the prefix characters the operator adds.
func validatePatterns(patterns []string, prefixes string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, pat := range patterns {
		pp := p.Index(i)
		switch {
		case pat == "":
			errs = append(errs, field.Required(pp, "a pattern such as app:*"))
		case hasSpaceOrQuote(pat):
			errs = append(errs, field.Invalid(pp, pat, "must not contain spaces, quotes or control characters"))
		case strings.ContainsAny(pat[:1], prefixes):
			errs = append(errs, field.Invalid(pp, pat, "write the pattern without the leading "+
				quoteChars(prefixes)+": the operator adds it"))
		}
	}
	return errs
}

// hasSpaceOrQuote reports whether s would not survive as one token of an ACL rule.
func hasSpaceOrQuote(s string) bool {
	return strings.IndexFunc(s, unicode.IsSpace) >= 0 || strings.ContainsAny(s, `"'`) || hasControl(s, false)
}

// quoteChars renders "~%" as `"~" or "%"` for a message.
func quoteChars(chars string) string {
	parts := make([]string, 0, len(chars))
	for _, c := range chars {
		parts = append(parts, `"`+string(c)+`"`)
	}
	return strings.Join(parts, " or ")
}
